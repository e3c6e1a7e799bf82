"""benchmarks/skill_recompose_device_check.py (issue 49) runs end to end at --tiny on the CPU: the Variant B
meta-training's cpu/device loss curves agree exactly on the CPU, the timed slice and the gpu-profile projection
are positive and add up, and CUDA without a GPU is refused."""
from __future__ import annotations

import pytest

from tests.conftest import DEVICES, assert_projection_adds_up, run_device_check


@pytest.mark.parametrize("device", DEVICES)
def test_device_check_parity_and_projection(tmp_path, device):
    code, report = run_device_check("skill_recompose", device, tmp_path)
    assert code == 0 and report["parity_ok"] and report["parity"]["ok"]
    if device == "cpu":
        assert report["parity"]["loss_rel_diff"] == 0.0
    projection = report["projection"]
    assert all(r["seconds_per_unit"] > 0 for r in projection["parts"])
    assert_projection_adds_up(projection)


def test_projection_counts_both_variants_of_every_seed(tmp_path):
    from resources.profiles import load_params

    _, report = run_device_check("skill_recompose", "cpu", tmp_path)
    p = load_params("skill_recompose", "gpu")
    assert [r["units"] for r in report["projection"]["parts"]] == [p["icl"]["steps"] * len(p["seeds"])] * 2
    assert report["slice"]["finite"]
