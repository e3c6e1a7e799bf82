"""benchmarks/fair_selective_device_check.py (issue 49) runs end to end at --tiny on the CPU: parity is n/a (the gpu
profile puts nothing on a device), the timed slice and the gpu-profile projection are positive."""
from __future__ import annotations

from tests.conftest import assert_device_check_times_the_gpu_profile, run_device_check


def test_device_check_times_the_gpu_profile(tmp_path):
    assert_device_check_times_the_gpu_profile("fair_selective", tmp_path)


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
