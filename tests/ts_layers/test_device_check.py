"""benchmarks/ts_layers_device_check.py (issue 49) runs end to end: on the CPU its parity of the TSFM (full
and pruned pass), the LLM4TS and the text LM is exact, its projection counts the gpu profile's pretraining,
text and realignment steps, and CUDA without a GPU is refused."""
from __future__ import annotations

import pytest

from assets.common.params import parse
from assets.ts_layers.params import TSLayersParams
from resources.profiles import load_params
from tests.conftest import DEVICES, PARITY_DIFFS, load_device_check, run_device_check


@pytest.mark.parametrize("device", DEVICES)
def test_device_check_parity_and_projection(tmp_path, device):
    code, report = run_device_check("ts_layers", device, tmp_path)
    assert code == 0 and report["parity_ok"]
    assert set(report["parity"]) == {"tsfm_L4", "llm4ts_L4", "text_lm_L4"}      # the smoke depths
    for key, parity in report["parity"].items():
        assert parity["ok"] and parity["grad_max_abs"] > 0, key
        if device == "cpu":
            assert all(parity[k] == 0.0 for k in PARITY_DIFFS), (key, parity)
    projection = report["projection"]
    assert projection["gpu_profile_s"] > 0
    assert sum(part["units"] for part in projection["parts"][:5]) == 5 * 4000 * 3       # 5 models × 3 seeds


def test_realignment_runs_count_the_gpu_profile():
    """tsfm 32 → k = 8: the full model continued (600 steps × 3 seeds), 9 keep lists at 8 layers (keep-τ,
    bottom-k, bi-top-k, drop-last, 5 random), scratch at 8 layers for 4000 + 600 steps."""
    module = load_device_check("ts_layers")
    gpu = parse(TSLayersParams, load_params("ts_layers", "gpu"), "ts_layers.gpu")
    runs = module.realign_runs(gpu)
    assert len(runs) == 9
    assert [r[1:] for r in runs[3:6]] == [(32, 600, 3), (8, 600, 27), (8, 4600, 3)]
