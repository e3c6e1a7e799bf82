"""benchmarks/brew_device_check.py (issue 49) runs end to end at --tiny on the CPU: parity is n/a (the gpu
profile puts nothing on a device), the timed slice and the gpu-profile projection are positive."""
from __future__ import annotations

from tests.conftest import assert_projection_adds_up, run_device_check


def test_device_check_times_the_gpu_profile(tmp_path):
    code, report = run_device_check("brew", "cpu", tmp_path)
    assert code == 0 and report["paper"] == "brew" and report["tiny"]
    assert report["parity"].startswith("n/a")
    projection = report["projection"]
    assert projection["parts"] and all(r["seconds_per_unit"] > 0 and r["units"] > 0 for r in projection["parts"])
    assert_projection_adds_up(projection)
    assert projection["gpu_profile_s"] > 0 and projection["note"]


def test_projection_counts_every_generated_text(tmp_path):
    from resources.profiles import load_params

    _, report = run_device_check("brew", "cpu", tmp_path)
    p = load_params("brew", "gpu")
    per_seed = p["texts_per_seed"] + 2 * p["baseline_texts_per_seed"] + 2 * p["negative_texts_per_seed"]
    generated = [r for r in report["projection"]["parts"] if r["what"].startswith("generated")]
    assert generated[0]["units"] == len(p["seeds"]) * per_seed                              # 10 × 400
