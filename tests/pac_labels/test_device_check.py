"""benchmarks/pac_labels_device_check.py (issue 49) runs end to end at --tiny on the CPU: parity is n/a (the gpu
profile puts nothing on a device), the timed slice and the gpu-profile projection are positive."""
from __future__ import annotations

from tests.conftest import assert_device_check_times_the_gpu_profile, run_device_check


def test_device_check_times_the_gpu_profile(tmp_path):
    assert_device_check_times_the_gpu_profile("pac_labels", tmp_path)


def test_projection_runs_every_trial_of_the_timed_partitions(tmp_path):
    from resources.profiles import load_params

    _, report = run_device_check("pac_labels", "cpu", tmp_path)
    trials = load_params("pac_labels", "gpu")["trials"]
    assert all(r["units"] % trials == 0 for r in report["projection"]["parts"])
    assert {"synthetic_cls/mlp/clt", "synthetic_cls/mlp/wsr"} <= {t["partition"] for t in report["slice"]["partitions"]}
