"""Shared fixtures."""

import pytest
import torch


@pytest.fixture
def one_torch_thread():
    """Torch on one thread for the test (tiny batches: more threads only contend on a shared machine),
    and the process's thread count put back afterwards (``arena.evaluate`` sets its own)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True, scope="session")
def _sb3_logs_in_the_test_tmp(tmp_path_factory):
    """Stable-Baselines3's default logger makes a folder at every ``learn`` (SB3-<time> in the system's
    temp folder unless SB3_LOGDIR names one): every test's, and its subprocesses', go under pytest's
    own temp folder instead."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3-logs")))
        yield
