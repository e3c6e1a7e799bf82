"""benchmarks/pfn_causal_device_check.py (issue 49) runs end to end: on the CPU its parity of the bar-head
CausalPFN is exact, its projection counts every training step the gpu profile runs, and CUDA without a GPU
is refused."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from assets.common.params import parse
from assets.pfn_causal.params import PFNCausalParams
from resources.profiles import load_params
from tests.conftest import DEVICES, assert_projection_adds_up, run_device_check

DIFFS = ("forward_max_rel", "loss_rel_diff", "grad_max_rel", "step_l2_rel_diff", "after_step_loss_rel_diff")
SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "pfn_causal_device_check.py"


@pytest.mark.parametrize("device", DEVICES)
def test_device_check_parity_and_projection(tmp_path, device):
    code, report = run_device_check("pfn_causal", device, tmp_path)
    assert code == 0 and report["parity_ok"]
    parity = report["parity"]
    assert parity["ok"] and parity["grad_max_abs"] > 0
    assert report["model"]["head"] == "bar"                     # the gpu profile's head
    if device == "cpu":
        assert all(parity[k] == 0.0 for k in DIFFS), parity
    projection = report["projection"]
    assert projection["gpu_profile_s"] > 0 and len(projection["parts"]) == 6
    assert_projection_adds_up(projection)


def test_training_steps_count_the_gpu_profile():
    """3 seeds: 2 × 4000 pretraining (full coverage on), 200 continued, 10 targets × 200 PWF, 2 × 10 × 100
    MSF + random-FT, and the ablation's 5 targets × 600 steps once."""
    spec = importlib.util.spec_from_file_location("pfn_causal_device_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    gpu = parse(PFNCausalParams, load_params("pfn_causal", "gpu"), "pfn_causal.gpu")
    assert module.training_steps(gpu) == {"pretrain": 24_000, "continued": 600, "pwf": 6_000,
                                          "msf_and_random_ft": 6_000, "pwf_ablation": 3_000}
