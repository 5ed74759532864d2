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
