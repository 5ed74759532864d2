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


def test_cuda_build_cpu_path_matches_default_build():
    cuda_core = _load_cuda_core()
    a = cuda_core.MidrangeBatch(cuda_core.MidrangeParams(), 16, 2, "cpu")
    b = _core.MidrangeBatch(_core.MidrangeParams(), 16, 2, "cpu")
    a.reset(5)
    b.reset(5)
    rng = np.random.default_rng(0)
    for _ in range(200):
        act = np.stack([rng.integers(0, n, 32) for n in (5, 3, 2)], axis=1).astype(np.int32)
        a.step(act, 0, 16)
        b.step(act, 0, 16)
        np.testing.assert_array_equal(a.obs, b.obs)
        np.testing.assert_array_equal(a.events, b.events)


def test_default_build_refuses_cuda_with_rebuild_hint():
    if _core.cuda_built:
        pytest.skip("this default build has CUDA")
    with pytest.raises(RuntimeError, match="ARENA_CUDA=ON"):
        _core.MidrangeBatch(_core.MidrangeParams(), 1, 1, "cuda")
