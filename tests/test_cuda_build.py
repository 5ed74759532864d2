"""The CUDA build of the core: built by .ci/run with nvcc (no GPU needed), loaded here.

The CUDA build runs the same host/device step code on the CPU path, so its CPU results must equal
the default build's bit for bit; asking it for device='cuda' where no GPU is usable must fail with
a clear error. Without ARENA_CUDA_CORE (no nvcc) these tests are skipped.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

from arena import _core

CUDA_CORE = os.environ.get("ARENA_CUDA_CORE")
pytestmark = pytest.mark.skipif(not CUDA_CORE, reason="ARENA_CUDA_CORE not set (no CUDA build)")


def _load_cuda_core():
    spec = importlib.util.spec_from_file_location("_core", CUDA_CORE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cuda_build_reports_cuda_support():
    assert _load_cuda_core().cuda_built is True


def test_cuda_build_without_usable_gpu_raises_clear_error():
    cuda_core = _load_cuda_core()
    try:
        batch = cuda_core.MidrangeBatch(cuda_core.MidrangeParams(), 8, 1, "cuda")
    except RuntimeError as err:
        assert "cuda" in str(err).lower() and "device='cpu'" in str(err)
    else:  # a GPU is present: the CUDA path must then step like the CPU one
        batch.reset(3)
        assert batch.on_cuda


OUTPUTS = ("obs", "final_obs", "events", "rewards", "done", "outcome", "end_reason", "episode_length")


@pytest.mark.parametrize("team_size", [(1, 1), (2, 1)])
def test_cuda_build_cpu_path_matches_default_build(team_size):
    # .ci/run builds it without -march=native: fewer SIMD lanes than the default build, same bits.
    cuda_core = _load_cuda_core()
    num_envs, rows = 37, 37 * sum(team_size)
    batches = []
    for core in (cuda_core, _core):
        params = core.MidrangeParams()
        params.team_size = list(team_size)
        params.time_limit_s = 30.0
        batch = core.MidrangeBatch(params, num_envs, 2, "cpu")
        batch.reset(5)
        batches.append(batch)
    a, b = batches
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(300):
        act = np.stack([rng.integers(0, n, rows) for n in (5, 3, 2)], axis=1).astype(np.int32)
        a.step(act, 0, num_envs)
        b.step(act, 0, num_envs)
        for name in OUTPUTS:
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        ended += int(b.done.sum())
    assert ended > 0, "the run crossed ended matches and resets"


# 1 s at frame_skip 12 and dt 1/60: every match ends by the time limit at decision 5, whatever the
# float details of the device, when nobody fires (the teams spawn 20 km or more apart).
TIME_LIMITED = {"time_limit_s": 1.0}
LAST_DECISION = 5
IDLE = (2, 0, 0)  # straight ahead, no throttle, no fire


def assert_unfinished_rows_read_as_zeros_and_stale_finals(batch) -> None:
    """The CPU path's contract for envs that did not finish in a step: episode_length 0 and
    final_obs zeros until the first match end; after it, the final observation stays until the
    next end, and reset() puts episode_length back to 0."""
    acts = np.tile(np.array(IDLE, np.int32), (batch.num_envs * batch.agents_per_env, 1))
    batch.reset(7)
    for t in range(1, LAST_DECISION):
        batch.step(acts, 0, batch.num_envs)
        assert not batch.done.any(), f"decision {t}: no match ends before the time limit"
        assert (batch.final_obs == 0).all(), f"decision {t}: final_obs of unfinished envs is not zero"
        assert (batch.episode_length == 0).all(), f"decision {t}: episode_length of unfinished envs is not 0"
    batch.step(acts, 0, batch.num_envs)
    assert batch.done.all() and (batch.episode_length == LAST_DECISION).all()
    finals = batch.final_obs.copy()
    assert np.abs(finals).sum() > 0
    batch.reset(8)
    batch.step(acts, 0, batch.num_envs)
    assert not batch.done.any()
    assert (batch.episode_length == 0).all(), "episode_length after reset() is not 0"
    np.testing.assert_array_equal(batch.final_obs, finals, err_msg="final_obs changed without a match end")


@pytest.mark.parametrize("build", ["cuda", "default"])
def test_cpu_path_unfinished_rows_read_zero_length_and_the_last_final_observation(build):
    core = _load_cuda_core() if build == "cuda" else _core
    params = core.MidrangeParams()
    params.time_limit_s = TIME_LIMITED["time_limit_s"]
    assert_unfinished_rows_read_as_zeros_and_stale_finals(core.MidrangeBatch(params, 37, 2, "cpu"))


def test_cuda_path_unfinished_rows_read_as_on_the_cpu_path():
    # The device buffers start zero-filled and reset() uploads the cleared host outputs: rows the
    # kernel did not write come back as the CPU path's, not as whatever device memory held.
    cuda_core = _load_cuda_core()
    params = cuda_core.MidrangeParams()
    params.time_limit_s = TIME_LIMITED["time_limit_s"]
    try:
        batch = cuda_core.MidrangeBatch(params, 300, 1, "cuda")
    except RuntimeError as err:
        pytest.skip(f"no usable GPU: {err}")
    assert batch.on_cuda
    assert_unfinished_rows_read_as_zeros_and_stale_finals(batch)


def test_default_build_refuses_cuda_with_rebuild_hint():
    if _core.cuda_built:
        pytest.skip("this default build has CUDA")
    with pytest.raises(RuntimeError, match="ARENA_CUDA=ON"):
        _core.MidrangeBatch(_core.MidrangeParams(), 1, 1, "cuda")
