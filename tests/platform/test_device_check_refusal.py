"""Every paper's device check (benchmarks/<slug>_device_check.py) refuses `--device cuda` on a machine
without a GPU: exit code NO_DEVICE (2) and no report (issue 49)."""
from __future__ import annotations

import pytest
import torch

from jobs.device_check import papers_with_a_check
from tests.conftest import run_device_check


@pytest.mark.parametrize("slug", papers_with_a_check())
def test_device_check_refuses_cuda_without_a_gpu(slug, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    code, report = run_device_check(slug, "cuda", tmp_path)
    assert code == 2 and report is None
