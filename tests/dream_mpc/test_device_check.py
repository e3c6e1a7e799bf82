"""benchmarks/dream_mpc_device_check.py (issue 49) runs end to end: on the CPU its parity of the world model's
TD-MPC2 update, forward pass and Dream-MPC planning gradient is exact, its projection counts the gpu
profile's training decisions, updates and evaluation cells, and CUDA without a GPU is refused."""
from __future__ import annotations

import pytest

from resources.profiles import load_params
from tests.conftest import DEVICES, PARITY_DIFFS, assert_projection_adds_up, run_device_check

DIFFS = (*PARITY_DIFFS, "objective_max_rel", "uncertainty_max_rel", "action_grad_max_rel")


def expected_units(gpu: dict) -> tuple[list[float], dict[str, float]]:
    """From the gpu block (over base): per task, seeds × (seed decisions, pretraining updates = seed_episodes ×
    decisions per episode; acting decisions; held-out decisions; evaluation env steps), and per planner its
    batched evaluation decisions (strong: every planner; weak / medium: the prior sweep)."""
    seeds, tr, ev = len(gpu["seeds"]), gpu["training"], gpu["evaluation"]
    dpe = gpu["time_limit_steps"] // gpu["action_repeat"]
    strong, sweep = ev["planners_strong"], ev["planners_prior_sweep"]

    def episodes(names):
        return sum(ev["episodes_sampling"] if n in ("mppi", "cem") else ev["episodes"] for n in names)

    seed = tr["seed_episodes"] * dpe
    per_task = [seeds * seed, seeds * seed, seeds * (tr["decisions"] - seed), seeds * tr["heldout_episodes"] * dpe,
                seeds * (episodes(strong) + 2 * episodes(sweep)) * dpe]
    tasks = len(gpu["tasks"])
    return per_task * tasks, {n: tasks * seeds * dpe * (3 if n in sweep else 1) for n in strong}


@pytest.mark.parametrize("device", DEVICES)
def test_device_check_parity_and_projection(tmp_path, device):
    code, report = run_device_check("dream_mpc", device, tmp_path)
    assert code == 0 and report["parity_ok"]
    assert set(report["parity"]) == set(load_params("dream_mpc", "smoke")["tasks"])      # the smoke tasks
    for task, parity in report["parity"].items():
        assert parity["ok"] and parity["grad_max_abs"] > 0 and parity["action_grad_max_abs"] > 0, task
        assert parity["fresh_target_q_logits_max_abs"] == 0.0 and parity["policy_step_finite"]
        if device == "cpu":                                    # the same kernels and random streams
            assert all(parity[k] == 0.0 for k in DIFFS), (task, parity)
            assert parity["pi_loss"]["cpu"] == parity["pi_loss"]["device"]
    gpu = load_params("dream_mpc", "gpu")
    projection = report["projection"]
    training, evaluation = expected_units(gpu)
    parts = projection["parts"]
    assert [part["units"] for part in parts[:len(training)]] == training
    assert {part["what"].split(": ")[1].split()[0]: part["units"] for part in parts[len(training):]} == evaluation
    assert training[:5] == [12500, 12500, 487500, 5000, 350000]           # the gpu block as written
    assert evaluation["mppi"] == 45000 and evaluation["cem"] == 15000
    assert_projection_adds_up(projection)
    assert projection["gpu_profile_s"] > 0
