"""benchmarks/vcot_device_check.py (issue 49) runs end to end: on the CPU its parity of the learned
completer's TinyLM is exact, its projection is s/step × learned.steps × one model per family, and CUDA
without a GPU is refused."""
from __future__ import annotations

import pytest

from tests.conftest import DEVICES, PARITY_DIFFS, run_device_check


@pytest.mark.parametrize("device", DEVICES)
def test_device_check_parity_and_projection(tmp_path, device):
    code, report = run_device_check("vcot", device, tmp_path)
    assert code == 0 and report["parity_ok"]
    parity = report["parity"]
    assert parity["ok"] and parity["grad_max_abs"] > 0
    if device == "cpu":
        assert all(parity[k] == 0.0 for k in PARITY_DIFFS), parity
    (part,) = report["projection"]["parts"]
    assert part["units"] == 4000 * 4 and report["projection"]["gpu_profile_s"] > 0     # 4 held-out families
