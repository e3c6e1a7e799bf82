"""benchmarks/logit_distill_device_check.py (issue 49) runs end to end: on the CPU its parity of every
dataset's teacher and of a student under each objective is exact, its projection counts the gpu profile's
optimizer steps, and CUDA without a GPU is refused."""
from __future__ import annotations

import math

import pytest

from assets.common.params import parse
from assets.logit_distill.params import LogitDistillParams
from resources.profiles import load_params
from tests.conftest import DEVICES, PARITY_DIFFS, load_device_check, run_device_check


@pytest.mark.parametrize("device", DEVICES)
def test_device_check_parity_and_projection(tmp_path, device):
    code, report = run_device_check("logit_distill", device, tmp_path)
    assert code == 0 and report["parity_ok"]
    assert set(report["parity"]) == {"spirals", "digits", "shapes"}
    for name, models in report["parity"].items():
        assert set(models) == {"teacher", "student_kl", "student_l1", "student_l2", "student_ce"}
        for key, parity in models.items():
            assert parity["ok"] and parity["grad_max_abs"] > 0, (name, key)
            if device == "cpu":
                assert all(parity[k] == 0.0 for k in PARITY_DIFFS), (name, key, parity)
    projection = report["projection"]
    assert projection["gpu_profile_s"] > 0 and len(projection["parts"]) == 9


def test_optimizer_steps_count_the_gpu_profile():
    """shapes: 30,000 images, 15,000 train rows, batch 256 → 59 steps an epoch; 150 teacher epochs × 5 seeds,
    150 student epochs × 4 objectives × 5 student seeds × 5 teachers."""
    module = load_device_check("logit_distill")
    gpu = parse(LogitDistillParams, load_params("logit_distill", "gpu"), "logit_distill.gpu")
    steps = module.optimizer_steps(gpu)
    per_epoch = math.ceil(15_000 / 256)
    assert steps["shapes"] == {"teacher": 150 * per_epoch * 5, "student": 150 * per_epoch * 4 * 5 * 5,
                               "throughput": 2 * 2 * 3 * per_epoch * 4}
    assert steps["spirals"]["teacher"] == 500 * math.ceil(14_000 / 512) * 5
