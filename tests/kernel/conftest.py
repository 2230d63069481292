import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    """These tests are tiny; one thread avoids oversubscribing a shared 2-core machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
