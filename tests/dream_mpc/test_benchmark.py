"""Statistics and claim logic on tables with known answers; environment and evaluation errors."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from assets.dream_mpc import benchmark as B
from assets.dream_mpc import envs


def test_iqm_and_optimality_gap_known_values():
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 100.0])
    assert B.iqm(x) == pytest.approx(np.mean([2.0, 3.0, 4.0, 5.0]))
    assert B.optimality_gap(np.array([0.2, 0.9, 1.3])) == pytest.approx((0.8 + 0.1 + 0.0) / 3)


def _episodes(effects: dict, noise=0.0, seed=0):
    """A grid where planner p scores base + effects[p] on every paired episode."""
    rng = np.random.default_rng(seed)
    rows = []
    for task in ("a", "b", "c"):
        for s in (0, 1):
            for budget in ("weak", "medium", "strong"):
                for e in range(4):
                    base = rng.uniform(0.1, 0.5)
                    for p, eff in effects.items():
                        shift = eff[budget] if isinstance(eff, dict) else eff
                        rows.append({"task": task, "seed": s, "budget": budget, "planner": p, "episode_seed": e,
                                     "normalised_score": base + shift + noise * rng.standard_normal(),
                                     "seconds_per_decision": 0.01,
                                     "opt_evals_min": {"dream_mpc": 15, "mppi": 9216, "naive_grad": 150}.get(p, 15),
                                     "opt_evals_max": {"dream_mpc": 15, "mppi": 9216, "naive_grad": 150}.get(p, 15),
                                     "proposal_evals": 0})
    return pd.DataFrame(rows)


LATENCY = pd.DataFrame({"planner": ["dream_mpc", "mppi"], "median_seconds": [0.005, 0.05]})


def test_paired_bootstrap_recovers_a_constant_shift():
    ep = _episodes({"dream_mpc": 0.1, "policy_only": 0.0})
    boot = B.paired_bootstrap(B.paired_differences(ep, "dream_mpc", "policy_only", "strong"), 200,
                              np.random.default_rng(0))
    assert boot["mean"] == pytest.approx(0.1) and boot["ci_low"] == pytest.approx(0.1)


def test_claims_hold_when_the_effects_are_there():
    ep = _episodes({"policy_only": 0.0, "dream_mpc": {"weak": -0.2, "medium": 0.0, "strong": 0.1},
                    "mppi": 0.05, "naive_grad": -0.1, "dream_mpc_no_uncertainty": 0.09,
                    "dream_mpc_no_reuse": 0.05, "dream_mpc_i3": 0.1}, noise=0.01)
    claims, numbers = B.evaluate_claims(ep, LATENCY, 200, seed=0)
    holds = {c.claim_id: c.holds for c in claims}
    assert holds == {"beats_policy": True, "beats_naive_grad": True, "ablations": True, "compute": True,
                     "mppi_gap_trend": True}
    assert numbers["dream_minus_naive"] == pytest.approx(0.2, abs=0.02)
    # only the compute claim is judged on wall-clock time (a run record, not a DVC output)
    assert [c.claim_id for c in claims if c.volatile] == ["compute"]


def test_claims_fail_when_the_effects_are_reversed():
    ep = _episodes({"policy_only": 0.1, "dream_mpc": {"weak": 0.2, "medium": 0.0, "strong": 0.0},
                    "mppi": 0.05, "naive_grad": -0.02, "dream_mpc_no_uncertainty": 0.1,
                    "dream_mpc_no_reuse": 0.0, "dream_mpc_i3": 0.0}, noise=0.01)
    slow = pd.DataFrame({"planner": ["dream_mpc", "mppi"], "median_seconds": [0.06, 0.05]})
    claims, _ = B.evaluate_claims(ep, slow, 200, seed=0)
    holds = {c.claim_id: c.holds for c in claims}
    assert not any(holds.values()), holds


def test_compute_claim_fails_when_a_counter_is_off():
    ep = _episodes({"policy_only": 0.0, "dream_mpc": 0.1, "mppi": 0.0, "naive_grad": 0.0,
                    "dream_mpc_no_uncertainty": 0.0, "dream_mpc_no_reuse": 0.0, "dream_mpc_i3": 0.0})
    ep.loc[(ep["planner"] == "dream_mpc") & (ep["episode_seed"] == 2), "opt_evals_max"] = 30
    claims, _ = B.evaluate_claims(ep, LATENCY, 50, seed=0)
    assert not {c.claim_id: c for c in claims}["compute"].holds


def test_aggregates_have_cis_around_the_point_estimate():
    runs = B.run_scores(_episodes({"dream_mpc": 0.1, "policy_only": 0.0}, noise=0.05))
    agg = B.aggregate_with_ci(runs, 200, np.random.default_rng(0))
    assert set(agg["aggregate"]) == {"iqm", "mean", "median", "optimality_gap"}
    assert ((agg["ci_low"] <= agg["value"] + 1e-12) & (agg["value"] <= agg["ci_high"] + 1e-12)).all()


def test_unknown_task_id_is_a_clear_error():
    with pytest.raises(envs.UnknownTaskError, match="unknown task id 'cartpole-flip'"):
        envs.task_spec("cartpole-flip", 40, 4)


def test_non_finite_observation_is_an_error(monkeypatch):
    env = envs.TaskEnv("cartpole-swingup", 40, 4, seed=0)
    env.reset()
    monkeypatch.setattr(envs, "_flatten", lambda obs: np.array([0.0, np.nan, 1.0, 0.0, 0.0]))
    with pytest.raises(envs.NonFiniteObservationError, match="non-finite observation"):
        env.step(np.zeros(1))


def test_env_rewards_and_episode_length():
    env = envs.TaskEnv("cartpole-swingup", 40, 4, seed=0)
    env.reset()
    steps, done = 0, False
    while not done:
        _, r, done = env.step(np.ones(1))
        assert 0.0 <= r <= 4.0
        steps += 1
    assert steps == 10


def test_claim_readings_explain_a_naive_gradient_win_only_when_the_data_show_it():
    scores = {"policy_only": 0.2, "dream_mpc": 0.23, "naive_grad": 0.31, "dream_mpc_i3": 0.32,
              "mppi": 0.2, "dream_mpc_no_uncertainty": 0.2, "dream_mpc_no_reuse": 0.2}
    lines = B.claim_readings(_episodes(scores))
    assert any("More gradient steps help" in line and "+0.090" in line for line in lines)
    lines = B.claim_readings(_episodes({**scores, "naive_grad": 0.1}))
    assert not any("naive" in line.lower() and "score higher" in line for line in lines)
    assert not any("task(s) are in the claims" in line for line in lines)   # three tasks: no caveat
    one_task = _episodes(scores)
    assert "Only 1 task(s) are in the claims" in B.claim_readings(one_task[one_task["task"] == "a"])[0]
    assert not any("ablation claim" in line for line in lines)             # ablations 0.2 < full 0.23
    lines = B.claim_readings(_episodes({**scores, "dream_mpc_no_uncertainty": 0.26}))
    assert any("uncertainty penalty" in line and "+0.030" in line for line in lines)
    assert not any("reusing the previous plan" in line for line in lines)


def test_survey_readings_count_passing_seeds_and_failed_gates():
    survey = pd.DataFrame({"task": ["a", "a", "b"], "seed": [0, 1, 0],
                           "heldout_fit": [True, False, True], "q_ensemble_sane": [True, True, False],
                           "policy_beats_random": [True, False, False], "passes_all_gates": [True, False, False],
                           "policy_eval_return": [10.0, 20.0, 0.0], "random_eval_return": [5.0, 5.0, 0.0]})
    lines = B.survey_readings(survey)
    assert lines[0] == ("- a: 1/2 seeds pass every blocking gate (failed: heldout_fit on 1, policy_beats_random on 1); "
                        "policy 15.0 vs random 5.0 (mean over seeds).")
    assert lines[1].startswith("- b: 0/1 seeds pass") and "q_ensemble_sane on 1, policy_beats_random on 1" in lines[1]
