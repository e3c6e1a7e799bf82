"""benchmarks/pfn_causal_device_check.py (issue 49) runs end to end: on the CPU its parity of the bar-head
CausalPFN is exact, its projection counts every training step the gpu profile runs, and CUDA without a GPU
is refused."""
from __future__ import annotations

import pytest

from assets.common.params import parse
from assets.pfn_causal.params import PFNCausalParams
from resources.profiles import load_params
from tests.conftest import DEVICES, PARITY_DIFFS, assert_projection_adds_up, load_device_check, run_device_check


@pytest.mark.parametrize("device", DEVICES)
def test_device_check_parity_and_projection(tmp_path, device):
    code, report = run_device_check("pfn_causal", device, tmp_path)
    assert code == 0 and report["parity_ok"]
    parity = report["parity"]
    assert parity["ok"] and parity["grad_max_abs"] > 0
    assert report["model"]["head"] == "bar"                     # the gpu profile's head
    if device == "cpu":
        assert all(parity[k] == 0.0 for k in PARITY_DIFFS), parity
    projection = report["projection"]
    assert projection["gpu_profile_s"] > 0 and len(projection["parts"]) == 7
    assert_projection_adds_up(projection)


def test_training_steps_count_the_gpu_profile():
    """3 seeds: 2 × 4000 pretraining (full coverage on), 200 continued, 10 targets × 200 PWF, 2 × 10 × 100
    MSF + random-FT, the PWF ablation's 5 targets × 600 steps once and the MSF acquisition ablation's
    10 × 100 steps on one seed."""
    module = load_device_check("pfn_causal")
    gpu = parse(PFNCausalParams, load_params("pfn_causal", "gpu"), "pfn_causal.gpu")
    assert module.training_steps(gpu) == {"pretrain": 24_000, "continued": 600, "pwf": 6_000,
                                          "msf_and_random_ft": 6_000, "pwf_ablation": 3_000,
                                          "msf_ablation": 1_000}
