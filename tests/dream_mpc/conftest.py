"""Dream-MPC tests run thousands of tiny torch ops: one intra-op thread (2 threads on the
shared 2-core machine thrash, 20-50x slower, measured)."""
import pytest


@pytest.fixture(autouse=True)
def one_torch_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
