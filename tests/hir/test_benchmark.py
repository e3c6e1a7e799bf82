"""Claims arithmetic: the hierarchical bootstrap, budget-to-reach, claim verdicts on made-up tables."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from assets.hir import benchmark as B


def test_bootstrap_of_a_constant_difference_is_that_constant():
    ci = B.hierarchical_bootstrap(np.full((3, 10), 0.2), 200, 0)
    assert ci.mean == pytest.approx(0.2) and ci.low == pytest.approx(0.2) and ci.high == pytest.approx(0.2)


def test_bootstrap_covers_the_mean_and_one_seed_is_unbounded():
    rng = np.random.default_rng(0)
    d = rng.normal(0.1, 1.0, size=(3, 200))
    ci = B.hierarchical_bootstrap(d, 500, 1)
    assert ci.low < d.mean() < ci.high
    one = B.hierarchical_bootstrap(d[:1], 100, 1)
    assert math.isinf(one.low) and math.isinf(one.high)
    with pytest.raises(ValueError):
        B.hierarchical_bootstrap(np.array([np.nan, 1.0])[None], 10, 0)


def evals_table(values: dict[str, list[float]], seeds=(0, 1, 2), prompts=40) -> pd.DataFrame:
    """values[method] = seed-mean ILA at eval points 0..K (every prompt gets the same success rate)."""
    rows = []
    for method, curve in values.items():
        for s in seeds:
            for k, v in enumerate(curve):
                hits = int(round(v * prompts))
                for j in range(prompts):
                    rows.append({"method": method, "seed": s, "eval_point": k, "generated": k * 100, "step": k,
                                 "prompt_id": j, "ila_greedy": float(j < hits), "cla_greedy": 0.5 + 0.1 * v})
    return pd.DataFrame(rows)


def test_budget_to_reach_known_answer():
    e = evals_table({"hir": [0.0, 0.1, 0.3, 0.4, 0.5]})
    assert B.budget_to_reach(e, "hir", 0.3) == 0.5
    assert B.budget_to_reach(e, "hir", 0.9) == math.inf


def test_claims_on_a_clear_win_and_a_clear_loss():
    steps = pd.DataFrame({"method": ["hir"], "all_zero_group_rate": [0.5]})
    rollouts = pd.DataFrame({"method": ["hir"], "seed": [0], "step": [0], "is_replay": [True], "verified": [True],
                             "sparse": [1.0], "logp_q": [-5.0], "logp_q_prime": [-4.0]})
    difficulty = pd.DataFrame({"ila_greedy": [0.1], "cla_greedy": [0.5], "ila_sample": [0.1]})
    win = evals_table({"hir": [0.1, 0.3, 0.5], "grpo_binary": [0.1, 0.2, 0.25], "grpo_dense": [0.1, 0.3, 0.5],
                       "hir_random": [0.1, 0.2, 0.3], "hir_onpolicy": [0.1, 0.2, 0.3]})
    claims = {c.claim_id: c for c in B.evaluate_claims(win, steps, rollouts, difficulty, 300, 0)}
    assert all(claims[k].verdict == "holds" for k in ("beats_binary", "select_matters", "less_budget",
                                                      "matches_dense", "cla_not_lower"))
    assert claims["replays_valid"].kind == "sanity" and "VIOLATED" not in claims["replays_valid"].measured_value
    loss = evals_table({"hir": [0.1, 0.2, 0.25], "grpo_binary": [0.1, 0.3, 0.5], "grpo_dense": [0.1, 0.3, 0.5],
                        "hir_random": [0.1, 0.3, 0.5], "hir_onpolicy": [0.1, 0.2, 0.3]})
    claims = {c.claim_id: c for c in B.evaluate_claims(loss, steps, rollouts, difficulty, 300, 0)}
    assert all(claims[k].verdict == "refuted" for k in ("beats_binary", "matches_dense", "select_matters",
                                                        "less_budget", "cla_not_lower"))
    bad = rollouts.assign(verified=[False])
    row = {c.claim_id: c for c in B.evaluate_claims(win, steps, bad, difficulty, 100, 0)}["replays_valid"]
    assert row.kind == "sanity" and row.measured_value.startswith("VIOLATED")


def test_a_method_not_run_gives_an_inconclusive_claim_not_a_crash():
    e = evals_table({"hir": [0.1, 0.3]})
    steps = pd.DataFrame({"method": ["hir"], "all_zero_group_rate": [0.5]})
    rollouts = pd.DataFrame({"method": [], "seed": [], "step": [], "is_replay": [], "verified": [], "sparse": [],
                             "logp_q": [], "logp_q_prime": []}).astype({"is_replay": bool, "verified": bool})
    difficulty = pd.DataFrame({"ila_greedy": [0.1], "cla_greedy": [0.5], "ila_sample": [0.1]})
    claims = {c.claim_id: c for c in B.evaluate_claims(e, steps, rollouts, difficulty, 50, 0)}
    assert claims["beats_binary"].verdict == "inconclusive" and "not run" in claims["beats_binary"].measured_value
    assert claims["less_budget"].verdict == "inconclusive" and "FAILED" in claims["less_budget"].premise
    assert claims["replays_valid"].kind == "sanity"
