"""benchmarks/limix_device_check.py (issue 49) runs end to end: on the CPU its parity of every gpu-profile
variant is exact, its projection is Σ s/step × the gpu profile's steps × seeds, and CUDA without a GPU is
refused."""
from __future__ import annotations

import pytest

from resources.profiles import load_params
from tests.conftest import DEVICES, PARITY_DIFFS, assert_projection_adds_up, run_device_check


@pytest.mark.parametrize("device", DEVICES)
def test_device_check_parity_and_projection(tmp_path, device):
    code, report = run_device_check("limix", device, tmp_path)
    assert code == 0 and report["parity_ok"]
    gpu = load_params("limix", "gpu")
    assert set(report["parity"]) == set(gpu["variants"])       # every gpu-profile embedding / arch
    for variant, parity in report["parity"].items():
        assert parity["ok"] and parity["grad_max_abs"] > 0, variant
        if device == "cpu":                                    # same kernels on both sides
            assert all(parity[k] == 0.0 for k in PARITY_DIFFS), (variant, parity)
    projection = report["projection"]
    assert projection["gpu_profile_s"] > 0
    assert [part["units"] for part in projection["parts"]] == [gpu["train"]["steps"] * len(gpu["seeds"])] * len(
        gpu["variants"])
    assert_projection_adds_up(projection)
