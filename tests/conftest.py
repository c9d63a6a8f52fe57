"""Fixtures shared by several test modules."""

import pytest


@pytest.fixture
def one_torch_thread():
    """Small tensors: one torch thread is faster, and keeps a busy machine's cores for other
    work (``pytestmark = pytest.mark.usefixtures("one_torch_thread")`` in a module)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
