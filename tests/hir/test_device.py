"""benchmarks/hir_device_check.py (the gpu-machine check) end to end at tiny size: on the CPU its
parity is exact, on CUDA within tolerance; without a GPU it refuses CUDA."""
from __future__ import annotations

import pytest
import torch

from tests.conftest import DEVICES, run_device_check


@pytest.mark.parametrize("device", DEVICES)
def test_device_check_script_runs_and_cpu_parity_is_exact(tmp_path, device):
    code, found = run_device_check("hir", device, tmp_path)
    assert code == 0
    assert found["parity_ok"] and found["rl_accounting_ok"] and found["hir_finite"] and found["grpo_binary_finite"]
    assert found["ppo_grad_max_abs"] > 0 and found["train_steps_per_s"] > 0
    assert found["hir_step"]["seconds_step"] > 0 and found["grpo_binary_step"]["seconds_step"] > 0
    parts = found["projection"]["parts"]            # LM steps, the 5 methods' RL steps, evaluations
    assert found["projection"]["gpu_profile_s"] > 0 and len(parts) == 7 and all(x["units"] > 0 for x in parts)
    if device == "cpu":          # same kernels on both sides: bit-identical passes, update and greedy answers
        assert found["logit_max_rel_diff"] == found["logprob_max_abs_diff"] == 0.0
        assert found["ppo_grad_max_rel_diff"] == found["ppo_params_max_abs_diff"] == 0.0
        assert found["train_loss_rel_diff"] == 0.0 and found["greedy_agreement"] == 1.0


def test_device_check_refuses_cuda_without_a_gpu(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    code, found = run_device_check("hir", "cuda", tmp_path)
    assert code == 2 and found is None
