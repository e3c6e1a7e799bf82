"""Dream-MPC tests run thousands of tiny torch ops: one intra-op thread (2 threads on the
shared 2-core machine thrash, 20-50x slower, measured)."""
import pytest


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield
