"""benchmarks/oscs_device_check.py (issue 49) runs end to end at --tiny on the CPU: parity is n/a (the gpu
profile puts nothing on a device), the timed slice and the gpu-profile projection are positive."""
from __future__ import annotations

from tests.conftest import assert_projection_adds_up, run_device_check


def test_device_check_times_the_gpu_profile(tmp_path):
    code, report = run_device_check("oscs", "cpu", tmp_path)
    assert code == 0 and report["paper"] == "oscs" and report["tiny"]
    assert report["parity"].startswith("n/a")
    projection = report["projection"]
    assert projection["parts"] and all(r["seconds_per_unit"] > 0 and r["units"] > 0 for r in projection["parts"])
    assert_projection_adds_up(projection)
    assert projection["gpu_profile_s"] > 0 and projection["note"]


def test_projection_counts_every_text_stream_step(tmp_path):
    from resources.profiles import load_params

    _, report = run_device_check("oscs", "cpu", tmp_path)
    p = load_params("oscs", "gpu")
    streams = len(p["detectors"]) * len(p["scenarios"]) * len(p["seeds"]) * len(p["alphas"])
    assert report["projection"]["parts"][0]["units"] == streams * p["stream_length"]     # 720 streams × 20,000
