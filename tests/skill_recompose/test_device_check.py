"""benchmarks/skill_recompose_device_check.py (issue 49) runs end to end at --tiny on the CPU: parity is n/a (the gpu
profile puts nothing on a device), the timed slice and the gpu-profile projection are positive."""
from __future__ import annotations

from tests.conftest import assert_device_check_times_the_gpu_profile, run_device_check


def test_device_check_times_the_gpu_profile(tmp_path):
    assert_device_check_times_the_gpu_profile("skill_recompose", tmp_path)


def test_projection_counts_both_variants_of_every_seed(tmp_path):
    from resources.profiles import load_params

    _, report = run_device_check("skill_recompose", "cpu", tmp_path)
    p = load_params("skill_recompose", "gpu")
    assert [r["units"] for r in report["projection"]["parts"]] == [p["icl"]["steps"] * len(p["seeds"])] * 2
    assert report["slice"]["finite"]
