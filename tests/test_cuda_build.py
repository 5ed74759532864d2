"""The CUDA build of the core: built by .ci/run with nvcc (no GPU needed), loaded here.

The CUDA build runs the same host/device step code on the CPU path, so its CPU results must equal
the default build's bit for bit; asking it for device='cuda' where no GPU is usable must fail with
a clear error. Without ARENA_CUDA_CORE (no nvcc) these tests are skipped; the tests that step on the
GPU are skipped where none is usable.

CUDA against CPU, what is the same and what may differ: the step code is the same, compiled for the
device without FMA contraction (--fmad=false), and the generator is integer arithmetic, so a match
spawned on the host (reset, reset_envs) plays to the same bits on both. A match spawned on the GPU by
an auto-reset takes cos and sin of its random spawn angles from CUDA's libdevice (at most 2 ulp from
the exact value) where the CPU takes them from the host's libm, so its spawn may differ in the last
bits of the doubles; the float32 observations nearly always round alike and the match goes on the
same, but a chaotic fight may drift apart. The tests hold the first matches to exact equality, later
spawns to 1e-12 relative, and the later matches' outcomes to agreement in 90% of them.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

from arena import _core

CUDA_CORE = os.environ.get("ARENA_CUDA_CORE")
if os.environ.get("ARENA_REQUIRE_GPU") == "1" and not CUDA_CORE:  # a GPU machine must not pass by skipping
    pytest.fail("ARENA_REQUIRE_GPU=1 but ARENA_CUDA_CORE (the path of the CUDA build of the core) is not set",
                pytrace=False)
pytestmark = pytest.mark.skipif(not CUDA_CORE, reason="ARENA_CUDA_CORE not set (no CUDA build)")


def _load_cuda_core():
    # On a GPU machine .ci/run loads the CUDA build as arena._core itself (ARENA_CORE_PATH): the same
    # file loaded again under another name would register its pybind11 types a second time.
    if os.path.samefile(_core.__file__, CUDA_CORE):
        return _core
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
        batch.sync_host(0, batch.num_envs)  # on CUDA the outputs stay on the device until asked for
        assert not batch.done.any(), f"decision {t}: no match ends before the time limit"
        assert (batch.final_obs == 0).all(), f"decision {t}: final_obs of unfinished envs is not zero"
        assert (batch.episode_length == 0).all(), f"decision {t}: episode_length of unfinished envs is not 0"
    batch.step(acts, 0, batch.num_envs)
    batch.sync_host()
    assert batch.done.all() and (batch.episode_length == LAST_DECISION).all()
    finals = batch.final_obs.copy()
    assert np.abs(finals).sum() > 0
    batch.reset(8)
    batch.step(acts, 0, batch.num_envs)
    batch.sync_host()
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


def test_default_build_has_no_device_buffers_and_sync_host_does_nothing():
    batch = _core.MidrangeBatch(_core.MidrangeParams(), 3, 1, "cpu")
    batch.reset(1)
    obs = batch.obs.copy()
    batch.sync_host()
    np.testing.assert_array_equal(batch.obs, obs)
    with pytest.raises(RuntimeError, match="device='cuda'"):
        batch.device_buffers()


# ---- on a GPU: the CUDA path against the CPU path of the same build


def cuda_build_env(core, device: str, num_envs: int, team_size=(1, 1), seed: int = 0, **params):
    """A VectorEnv over a batch of ``core`` (the CUDA build, loaded beside the default one)."""
    from arena.envs.vector import VectorEnv
    from arena.games.midrange.game import EVENTS

    p = core.MidrangeParams()
    p.team_size = list(team_size)
    for key, value in params.items():
        setattr(p, key, value)
    batch = core.MidrangeBatch(p, num_envs, 2, device)
    env = VectorEnv("midrange", batch, team_sizes=tuple(team_size), params=params, seed=seed,
                    event_names=EVENTS)
    env.reset(seed)
    return env


@pytest.fixture
def cuda_core():
    core = _load_cuda_core()
    try:
        core.MidrangeBatch(core.MidrangeParams(), 1, 1, "cuda")
    except RuntimeError as err:
        pytest.skip(f"no usable GPU: {err}")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no GPU")
    return core


STEP_OUTPUTS = ("obs", "final_obs", "rewards", "terminals", "truncations", "events", "done", "outcome",
                "end_reason", "episode_length")


@pytest.mark.parametrize("team_size", [(1, 1), (2, 2)])
def test_cuda_and_cpu_paths_play_the_same_matches_with_auto_reset(cuda_core, team_size):
    num_envs, agents = 256, sum(team_size)
    cpu = cuda_build_env(cuda_core, "cpu", num_envs, team_size, seed=9, time_limit_s=30.0)
    gpu = cuda_build_env(cuda_core, "cuda", num_envs, team_size, seed=9, time_limit_s=30.0)
    assert gpu.device == "cuda" and cpu.device == "cpu"
    rng = np.random.default_rng(3)
    match = np.zeros(num_envs, dtype=np.int64)  # which match each env is in (0: spawned on the host)
    later_outcomes = later_agree = 0
    for step in range(150):
        acts = np.stack([rng.integers(0, n, cpu.num_agents) for n in (5, 3, 2)], axis=1).astype(np.int32)
        cpu.step(acts)
        gpu.step(acts)  # the host path: actions copied up, outputs synced back
        ended = cpu._core.done.copy()
        for name in STEP_OUTPUTS:
            # Envs in their first match, to the bit; the obs of one that just ended is its next
            # match's first, spawned on the GPU.
            envs = (match == 0) & ~ended if name == "obs" else match == 0
            a, b = getattr(cpu._core, name), getattr(gpu._core, name)
            rows = np.repeat(envs, agents) if a.shape[0] == cpu.num_agents else envs
            np.testing.assert_array_equal(b[rows], a[rows], err_msg=f"{name} of first matches at step {step}")
        later = ended & (match > 0) & gpu._core.done
        later_outcomes += int(later.sum())
        later_agree += int((cpu._core.outcome[later] == gpu._core.outcome[later]).sum())
        if (ended & (match == 0)).any():
            # Envs just spawned on the GPU: the same spawn to within cos/sin's last bits.
            new = np.flatnonzero(ended & (match == 0))
            wc, wg = cpu.world_state(), gpu.world_state()
            for key in ("fighter_x", "fighter_y", "fighter_vx", "fighter_vy"):
                np.testing.assert_allclose(wg[key][new], wc[key][new], rtol=1e-12, atol=1e-9, err_msg=key)
        match += ended
    assert (match > 0).sum() > num_envs // 2, "most envs crossed an auto-reset"
    if later_outcomes:
        assert later_agree >= 0.9 * later_outcomes, f"{later_agree} of {later_outcomes} later outcomes agree"


def test_cuda_tensors_are_the_device_buffers_and_sync_host_gives_their_numbers(cuda_core):
    import torch

    env = cuda_build_env(cuda_core, "cuda", 300, (2, 1), seed=4, time_limit_s=20.0)
    t = env.tensors()
    assert env.tensors() is t
    buffers = env._core.device_buffers()
    for name in STEP_OUTPUTS:
        tensor = getattr(t, name)
        assert tensor.is_cuda and tensor.data_ptr() == buffers[name].ptr, name
        assert buffers[name].__cuda_array_interface__["version"] == 3
        assert buffers[name].__cuda_array_interface__["stream"] == 1
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    nvec = torch.tensor([5, 3, 2], device="cuda")
    for _ in range(120):
        acts = (torch.rand((env.num_agents, 3), generator=gen, device="cuda") * nvec).to(torch.int32)
        env.step_envs_tensor(acts, 0, env.num_envs)
    env.sync_host()
    for name in STEP_OUTPUTS:
        np.testing.assert_array_equal(getattr(t, name).cpu().numpy(), getattr(env._core, name), err_msg=name)
    with pytest.raises(ValueError, match=r"action 7 at row 0, dimension 0 is out of range"):
        bad = torch.zeros((env.num_agents, 3), dtype=torch.int32, device="cuda")
        bad[0, 0] = 7
        env.step_envs_tensor(bad, 0, env.num_envs)
    with pytest.raises(ValueError, match=r"on device 'cpu': allowed this env's device 'cuda'"):
        env.step_envs_tensor(torch.zeros((env.num_agents, 3), dtype=torch.int32), 0, env.num_envs)


def test_cuda_device_actions_step_as_host_actions(cuda_core):
    import torch

    host = cuda_build_env(cuda_core, "cuda", 64, (1, 1), seed=2, time_limit_s=20.0)
    device = cuda_build_env(cuda_core, "cuda", 64, (1, 1), seed=2, time_limit_s=20.0)
    rng = np.random.default_rng(0)
    for step in range(100):
        acts = np.stack([rng.integers(0, n, host.num_agents) for n in (5, 3, 2)], axis=1).astype(np.int32)
        for begin, end in ((0, 32), (32, 64)):
            host.step_envs(acts, begin, end)
            device.step_envs_tensor(torch.from_numpy(acts).cuda(), begin, end)
        for name in STEP_OUTPUTS:
            np.testing.assert_array_equal(getattr(device.tensors(), name).cpu().numpy(),
                                          getattr(host._core, name), err_msg=f"{name} at step {step}")


def test_cuda_state_restore_and_world_state_reach_the_device_buffers(cuda_core):
    env = cuda_build_env(cuda_core, "cuda", 16, (1, 1), seed=5, time_limit_s=20.0)
    acts = np.zeros((env.num_agents, 3), dtype=np.int32)
    saved = env.env_state()
    obs0 = env.observations.copy()
    for _ in range(5):
        env.step(acts)
    env.set_env_state(saved)
    np.testing.assert_array_equal(env.tensors().obs.cpu().numpy(), obs0)
    np.testing.assert_array_equal(env.observations, obs0)
    world = env.world_state()
    world["fighter_x"] = world["fighter_x"] + 10.0
    obs = env.set_world_state(world)
    np.testing.assert_array_equal(env.tensors().obs.cpu().numpy(), obs)
