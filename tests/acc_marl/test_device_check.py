"""The device-check script (issue 20) runs end to end; on the CPU its parity is exact, on CUDA within tolerance."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "acc_marl_device_check.py"


def _script():
    spec = importlib.util.spec_from_file_location("acc_marl_device_check", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device"))])
def test_device_check_parity_and_speed(tmp_path, device):
    out = tmp_path / "check.json"
    assert _script().main(["--device", device, "--tiny", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    parity = report["parity"]
    assert parity["ok"]
    if device == "cpu":          # same kernels on both sides: bit-identical forward, gradient and update
        assert parity["forward_max_abs"] == parity["grad_max_rel"] == parity["stats_max_rel"] == 0.0
        assert parity["params_max_abs_after_update"] == 0.0
    assert report["device_env_steps_per_s"] > 0 and report["cpu_env_steps_per_s"] > 0


def test_device_check_refuses_cuda_without_a_gpu(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert _script().main(["--device", "cuda", "--out", str(tmp_path / "x.json")]) == 2
