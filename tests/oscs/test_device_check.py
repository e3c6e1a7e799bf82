"""benchmarks/oscs_device_check.py (issue 49) runs end to end at --tiny on the CPU: parity is n/a (the gpu
profile puts nothing on a device), the timed slice and the gpu-profile projection are positive."""
from __future__ import annotations

from tests.conftest import assert_device_check_times_the_gpu_profile, run_device_check


def test_device_check_times_the_gpu_profile(tmp_path):
    assert_device_check_times_the_gpu_profile("oscs", tmp_path)


def test_projection_counts_every_text_stream_step(tmp_path):
    from resources.profiles import load_params

    _, report = run_device_check("oscs", "cpu", tmp_path)
    p = load_params("oscs", "gpu")
    streams = len(p["detectors"]) * len(p["scenarios"]) * len(p["seeds"]) * len(p["alphas"])
    assert report["projection"]["parts"][0]["units"] == streams * p["stream_length"]     # 720 streams × 20,000
