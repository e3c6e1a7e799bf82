"""benchmarks/brew_device_check.py (issue 49) runs end to end at --tiny on the CPU: parity is n/a (the gpu
profile puts nothing on a device), the timed slice and the gpu-profile projection are positive."""
from __future__ import annotations

from tests.conftest import assert_device_check_times_the_gpu_profile, run_device_check


def test_device_check_times_the_gpu_profile(tmp_path):
    assert_device_check_times_the_gpu_profile("brew", tmp_path)


def test_projection_counts_every_generated_text(tmp_path):
    from resources.profiles import load_params

    _, report = run_device_check("brew", "cpu", tmp_path)
    p = load_params("brew", "gpu")
    per_seed = p["texts_per_seed"] + 2 * p["baseline_texts_per_seed"] + 2 * p["negative_texts_per_seed"]
    generated = [r for r in report["projection"]["parts"] if r["what"].startswith("generated")]
    assert generated[0]["units"] == len(p["seeds"]) * per_seed                              # 10 × 400
