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


SPEC = ("pendulum-swingup", "cartpole-swingup", "reacher-easy")
EVALS = {"dream_mpc": 15, "mppi": 9216, "naive_grad": 150}


def _episodes(effects: dict, noise=0.0, seed=0, tasks=SPEC, seeds=(0, 1, 2, 3, 4), episodes=4):
    """A grid where planner p scores base + shift on every paired episode; the shift is
    effects[p] (a number), effects[p][budget], or effects[p](task, seed, budget)."""
    rng = np.random.default_rng(seed)
    rows = []
    for task in tasks:
        for s in seeds:
            for budget in ("weak", "medium", "strong"):
                for e in range(episodes):
                    base = rng.uniform(0.1, 0.5)
                    for p, eff in effects.items():
                        shift = (eff(task, s, budget) if callable(eff)
                                 else eff[budget] if isinstance(eff, dict) else eff)
                        rows.append({"task": task, "seed": s, "budget": budget, "planner": p,
                                     "episode_seed": 5000 + 1000 * s + e,
                                     "normalised_score": base + shift + noise * rng.standard_normal(),
                                     "seconds_per_decision": 0.01, "opt_evals_min": EVALS.get(p, 15),
                                     "opt_evals_max": EVALS.get(p, 15), "proposal_evals": 0})
    return pd.DataFrame(rows)


LATENCY = pd.DataFrame({"planner": ["dream_mpc", "mppi"], "median_seconds": [0.005, 0.05]})
GOOD = {"policy_only": 0.0, "dream_mpc": {"weak": -0.2, "medium": 0.0, "strong": 0.1},
        "mppi": 0.05, "naive_grad": -0.1, "dream_mpc_no_uncertainty": 0.09,
        "dream_mpc_no_reuse": 0.05, "dream_mpc_i3": 0.1}


def _holds(ep, n_boot=500, latency=LATENCY):
    claims, numbers = B.evaluate_claims(ep, latency, n_boot, seed=0)
    return {c.claim_id: c for c in claims}, numbers


def test_paired_array_is_seeds_by_episodes_and_weighs_tasks_equally():
    ep = _episodes({"dream_mpc": lambda t, s, b: {"pendulum-swingup": 0.3, "cartpole-swingup": 0.0,
                                                  "reacher-easy": 0.0}[t] + 0.01 * s, "policy_only": 0.0},
                   episodes=3)
    one, seeds = B.paired_array(ep, "dream_mpc", "policy_only", "strong", task="cartpole-swingup")
    assert one.shape == (5, 3) and seeds == [0, 1, 2, 3, 4]
    assert one[:, 0] == pytest.approx([0.0, 0.01, 0.02, 0.03, 0.04])
    every, _ = B.paired_array(ep, "dream_mpc", "policy_only", "strong")
    assert every.shape == (5, 3) and every.mean() == pytest.approx(0.1 + 0.02)   # (0.3 + 0 + 0) / 3 + mean seed shift
    # a task whose seeds differ cannot be paired seed by seed
    with pytest.raises(ValueError, match="different seeds"):
        B.paired_array(ep[~((ep["task"] == "reacher-easy") & (ep["seed"] == 4))], "dream_mpc", "policy_only", "strong")


def test_claims_hold_when_the_effects_are_clearly_there():
    claims, numbers = _holds(_episodes(GOOD, noise=0.01))
    assert {k: c.holds for k, c in claims.items() if c.kind == "claim"} == {
        "beats_policy": True, "beats_naive_grad": True, "ablations": True}
    assert claims["compute"].kind == "sanity" and "VIOLATED" not in claims["compute"].measured_value
    assert numbers["dream_minus_naive"]["mean"] == pytest.approx(0.2, abs=0.02)
    assert numbers["dream_minus_naive"]["ci_low"] >= B.NAIVE_MARGIN
    # only the compute claim is judged on wall-clock time (a run record, not a DVC output)
    assert [k for k, c in claims.items() if c.volatile] == ["compute_wall_time"]
    assert claims["compute_wall_time"].kind == "observation"
    # every row carries the seeds behind it
    assert {c.seeds for c in claims.values()} == {"0–4 (5)"}


def test_mppi_gap_trend_is_an_observation_never_a_claim():
    claims, numbers = _holds(_episodes(GOOD, noise=0.01))
    row = claims["mppi_gap_trend"]
    assert row.kind == "observation" and row.holds is None
    assert "gap(strong) > gap(weak)" in row.measured_value
    assert numbers["gap_to_mppi"]["strong"]["mean"] == pytest.approx(0.05, abs=0.01)
    assert numbers["gap_to_mppi"]["weak"]["mean"] == pytest.approx(-0.25, abs=0.01)


def test_claims_fail_when_the_effects_are_reversed():
    ep = _episodes({"policy_only": 0.1, "dream_mpc": {"weak": 0.2, "medium": 0.0, "strong": 0.0},
                    "mppi": 0.05, "naive_grad": -0.02, "dream_mpc_no_uncertainty": 0.1,
                    "dream_mpc_no_reuse": 0.0, "dream_mpc_i3": 0.0}, noise=0.01)
    slow = pd.DataFrame({"planner": ["dream_mpc", "mppi"], "median_seconds": [0.06, 0.05]})
    claims, _ = _holds(ep, latency=slow)
    assert not any(c.holds for c in claims.values() if c.kind == "claim"), claims


# seed-level effects whose mean favours the method but whose spread across the 5 seeds is large
SPREAD = (0.40, -0.20, 0.30, -0.15, 0.05)          # mean +0.08


def _baseline(target: float, values=SPREAD):
    """A baseline's shift such that Dream-MPC (strong shift +0.1) − baseline = target on
    average, seed s contributing target + values[s] − mean(values)."""
    centre = float(np.mean(values))
    return lambda task, seed, budget: 0.1 - target - (values[seed] - centre)


def test_means_on_the_claimed_side_but_ci_straddling_the_margin_is_red():
    ep = _episodes({**GOOD, "naive_grad": _baseline(0.08), "policy_only": _baseline(0.02),
                    "dream_mpc_no_uncertainty": _baseline(-0.01)}, noise=0.01)
    claims, numbers = _holds(ep)
    # point estimates the old rule passed: +0.02 over policy, +0.08 ≥ 0.05 over naive, −0.01 ≥ −0.02
    policy, naive = numbers["dream_minus_policy"], numbers["dream_minus_naive"]
    unc = numbers["ablation_deltas"]["uncertainty"]
    assert policy["mean"] == pytest.approx(0.02, abs=0.01) and policy["ci_low"] < 0 < policy["ci_high"]
    assert naive["mean"] >= B.NAIVE_MARGIN and naive["ci_low"] < B.NAIVE_MARGIN
    assert unc["mean"] >= -B.ABLATION_TOLERANCE and unc["ci_low"] < -B.ABLATION_TOLERANCE
    assert not claims["beats_policy"].holds
    assert not claims["beats_naive_grad"].holds
    assert not claims["ablations"].holds
    assert {claims[k].verdict for k in ("beats_policy", "beats_naive_grad", "ablations")} == {"inconclusive"}
    assert "VIOLATED" not in claims["compute"].measured_value


def test_the_same_effects_with_little_seed_spread_hold():
    tight = tuple(0.005 * (i - 2) for i in range(5))
    ep = _episodes({**GOOD, "naive_grad": _baseline(0.08, tight), "policy_only": _baseline(0.02, tight),
                    "dream_mpc_no_uncertainty": _baseline(-0.01, tight)}, noise=0.005)
    claims, numbers = _holds(ep)
    assert numbers["dream_minus_naive"]["ci_low"] >= B.NAIVE_MARGIN
    assert claims["beats_naive_grad"].holds and claims["ablations"].holds and claims["beats_policy"].holds


def test_one_seed_establishes_nothing():
    claims, numbers = _holds(_episodes(GOOD, noise=0.01, seeds=(0,)))
    assert numbers["dream_minus_naive"]["ci_low"] == -np.inf
    assert not any(claims[k].holds for k in ("beats_policy", "beats_naive_grad", "ablations"))


def test_beats_policy_needs_the_three_spec_tasks():
    ep = _episodes(GOOD, noise=0.01)
    claims, numbers = _holds(ep[ep["task"] == "cartpole-swingup"])
    row = claims["beats_policy"]
    assert numbers["dream_minus_policy"]["ci_low"] > 0 and row.verdict == "inconclusive"
    assert "missing pendulum-swingup, reacher-easy" in row.premise and "FAILED" in row.premise
    assert claims["beats_naive_grad"].holds   # the other claims are judged on the task that is there
    # overall CI above 0 but higher on only 1 of 3 tasks: the per-task count is reported, not the rule
    lopsided = {**GOOD, "dream_mpc": lambda t, s, b: 0.3 if t == "cartpole-swingup" and b == "strong" else 0.0}
    claims, numbers = _holds(_episodes(lopsided, noise=0.01))
    assert numbers["dream_minus_policy"]["ci_low"] > 0
    assert numbers["dream_minus_policy"]["tasks_higher"] == 1 and claims["beats_policy"].holds


def test_compute_claim_fails_when_a_counter_is_off():
    ep = _episodes({"policy_only": 0.0, "dream_mpc": 0.1, "mppi": 0.0, "naive_grad": 0.0,
                    "dream_mpc_no_uncertainty": 0.0, "dream_mpc_no_reuse": 0.0, "dream_mpc_i3": 0.0})
    ep.loc[(ep["planner"] == "dream_mpc") & (ep["episode_seed"] == 5002), "opt_evals_max"] = 30
    claims, _ = B.evaluate_claims(ep, LATENCY, 50, seed=0)
    row = {c.claim_id: c for c in claims}["compute"]
    assert row.kind == "sanity" and row.measured_value.startswith("VIOLATED")


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
    assert "Only 1 task(s) are in the claims" in B.claim_readings(one_task[one_task["task"] == "reacher-easy"])[0]
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
                        "policy 15.0 vs random 5.0 on training's eval episodes (mean over seeds).")
    assert lines[1].startswith("- b: 0/1 seeds pass") and "q_ensemble_sane on 1, policy_beats_random on 1" in lines[1]
    fresh = B.survey_readings(survey.assign(gate_policy_return=[12.0, 18.0, 0.0], gate_random_return=[6.0, 8.0, 0.0]))
    assert fresh[0].endswith("random 5.0 on training's eval episodes; on the gate's fresh initial states 15.0 vs 7.0 "
                             "(mean over seeds).")


def test_verdicts_from_constructed_measurements():
    """Each counted claim: holds, refuted and inconclusive cases; a failed premise → inconclusive."""
    good = _holds(_episodes(GOOD, noise=0.01))[0]
    assert {k: good[k].verdict for k in ("beats_policy", "beats_naive_grad", "ablations")} == {
        "beats_policy": "holds", "beats_naive_grad": "holds", "ablations": "holds"}
    ep = _episodes({"policy_only": 0.1, "dream_mpc": {"weak": 0.2, "medium": 0.0, "strong": 0.0},
                    "mppi": 0.05, "naive_grad": -0.02, "dream_mpc_no_uncertainty": 0.1,
                    "dream_mpc_no_reuse": 0.0, "dream_mpc_i3": 0.0}, noise=0.01)
    bad = _holds(ep)[0]
    # Δ policy −0.1, Δ naive +0.02 < 0.05, full − no-uncertainty −0.1 < −0.02: all refuted
    assert {k: bad[k].verdict for k in ("beats_policy", "beats_naive_grad", "ablations")} == {
        "beats_policy": "refuted", "beats_naive_grad": "refuted", "ablations": "refuted"}
    # premise of beats_naive_grad: the evaluation counters (an I=10 baseline that ran only 30)
    few = _episodes(GOOD, noise=0.01)
    few.loc[few["planner"] == "naive_grad", ["opt_evals_min", "opt_evals_max"]] = 30
    row = _holds(few)[0]["beats_naive_grad"]
    assert row.verdict == "inconclusive" and "FAILED" in row.premise
    # premise of beats_policy: a spec task missing
    one_task = _holds(few[few["task"] == "cartpole-swingup"])[0]["beats_policy"]
    assert one_task.verdict == "inconclusive" and "FAILED" in one_task.premise
    # one seed: infinite CI → inconclusive for every claim
    single = _holds(_episodes(GOOD, noise=0.01, seeds=(0,)))[0]
    assert {single[k].verdict for k in ("beats_policy", "beats_naive_grad", "ablations")} == {"inconclusive"}
