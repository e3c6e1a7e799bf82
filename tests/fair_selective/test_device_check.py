"""benchmarks/fair_selective_device_check.py (issue 49) runs end to end at --tiny on the CPU: parity is n/a (the gpu
profile puts nothing on a device), the timed slice and the gpu-profile projection are positive."""
from __future__ import annotations

from tests.conftest import assert_projection_adds_up, run_device_check


def test_device_check_times_the_gpu_profile(tmp_path):
    code, report = run_device_check("fair_selective", "cpu", tmp_path)
    assert code == 0 and report["paper"] == "fair_selective" and report["tiny"]
    assert report["parity"].startswith("n/a")
    projection = report["projection"]
    assert projection["parts"] and all(r["seconds_per_unit"] > 0 and r["units"] > 0 for r in projection["parts"])
    assert_projection_adds_up(projection)
    assert projection["gpu_profile_s"] > 0 and projection["note"]


def test_projection_counts_every_training_iteration(tmp_path):
    import math

    from resources.profiles import load_params

    _, report = run_device_check("fair_selective", "cpu", tmp_path)
    p = load_params("fair_selective", "gpu")
    a = p["agents"]
    second = {"sellf": len(a["beta2_grid"]), "sellf_censored": len(a["beta2_grid"]), "focops": len(a["nu_max_grid"])}
    runs = sum(len(b) * second.get(kind, 1) for kind, b in a["grid"].items()) * len(p["envs"]) * len(p["seeds"])
    iterations = math.ceil(a["total_steps"] / a["n_steps"])
    assert sum(r["units"] for r in report["projection"]["parts"]) == runs * iterations
    assert set(report["slice"]["seconds_per_iteration"]) == set(a["grid"])      # every gpu-profile kind trained
