"""The device-check script (issue 20) runs end to end; on the CPU its parity is exact, on CUDA within tolerance."""
from __future__ import annotations

import pytest

from tests.conftest import DEVICES, run_device_check


@pytest.mark.parametrize("device", DEVICES)
def test_device_check_parity_and_speed(tmp_path, device):
    code, report = run_device_check("acc_marl", device, tmp_path)
    assert code == 0
    parity = report["parity"]
    assert parity["ok"]
    if device == "cpu":          # same kernels on both sides: bit-identical forward, gradient and update
        assert parity["forward_max_abs"] == parity["grad_max_rel"] == parity["stats_max_rel"] == 0.0
        assert parity["params_max_abs_after_update"] == 0.0
    assert report["device_env_steps_per_s"] > 0 and report["cpu_env_steps_per_s"] > 0
    (part,) = report["projection"]["parts"]          # 10 M env steps × 2 layouts × 3 variants × 5 seeds
    assert part["units"] == 10_000_000 * 2 * 3 * 5 and report["projection"]["gpu_profile_s"] > 0
