"""Each counted HiR claim judged by the one rule on constructed evaluations: holds, refuted or
inconclusive by its CI, and less_budget inconclusive when its premise fails."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.hir import benchmark as B

PROMPTS = 60


def table(curves: dict[str, list[list[float]]], cla: dict[str, list[float]] | None = None) -> pd.DataFrame:
    """curves[method][seed] = ILA at eval points 0..K; prompt j succeeds iff j < round(v·P).
    cla[method][seed] = final CLA (constant over prompts), default 0.5."""
    rows = []
    for method, per_seed in curves.items():
        for s, curve in enumerate(per_seed):
            for k, v in enumerate(curve):
                hits = int(round(v * PROMPTS))
                c = (cla or {}).get(method, [0.5] * len(per_seed))[s]
                for j in range(PROMPTS):
                    rows.append({"method": method, "seed": s, "eval_point": k, "generated": 100 * k,
                                 "prompt_id": j, "ila_greedy": float(j < hits), "cla_greedy": c})
    return pd.DataFrame(rows)


def claims(evals: pd.DataFrame) -> dict:
    steps = pd.DataFrame({"method": ["hir"], "all_zero_group_rate": [0.5]})
    rollouts = pd.DataFrame({"method": ["hir"], "seed": [0], "step": [0], "is_replay": [True], "verified": [True],
                             "sparse": [1.0], "logp_q": [-5.0], "logp_q_prime": [-4.0]})
    difficulty = pd.DataFrame({"ila_greedy": [0.1], "cla_greedy": [0.5], "ila_sample": [0.1]})
    return {c.claim_id: c for c in B.evaluate_claims(evals, steps, rollouts, difficulty, 400, 0)}


def same(curve, n=3):
    return [list(curve)] * n


BASE = {"grpo_binary": same([0.1, 0.15, 0.2, 0.25, 0.3]), "grpo_dense": same([0.1, 0.2, 0.3, 0.35, 0.4]),
        "hir_random": same([0.1, 0.2, 0.3, 0.35, 0.4]), "hir_onpolicy": same([0.1, 0.1, 0.1, 0.1, 0.1])}


def test_beats_binary_needs_the_five_point_margin_not_just_a_positive_ci():
    big = claims(table({**BASE, "hir": same([0.1, 0.2, 0.3, 0.35, 0.40])}))
    assert big["beats_binary"].verdict == "holds"                      # +10 points, CI > 0
    small = claims(table({**BASE, "hir": same([0.1, 0.2, 0.3, 0.31, 0.32])}))
    assert small["beats_binary"].verdict == "refuted"                  # +2 points, CI upper bound < +5
    noisy = claims(table({**BASE, "hir": [[0.1, 0.2, 0.3, 0.35, 0.45], [0.1, 0.2, 0.3, 0.3, 0.2],
                                          [0.1, 0.2, 0.3, 0.35, 0.43]]}))
    assert noisy["beats_binary"].verdict == "inconclusive"             # seeds disagree: CI straddles 0 and +5


def test_matches_dense_is_no_worse_within_one_point():
    ok = claims(table({**BASE, "hir": same([0.1, 0.2, 0.3, 0.35, 0.40])}))   # equal to dense
    assert ok["matches_dense"].verdict == "holds"
    low = claims(table({**BASE, "hir": same([0.1, 0.2, 0.3, 0.3, 0.33])}))   # −7 points
    assert low["matches_dense"].verdict == "refuted"


def test_select_matters_is_an_effect_above_zero():
    up = claims(table({**BASE, "hir": same([0.1, 0.2, 0.3, 0.4, 0.5])}))
    assert up["select_matters"].verdict == "holds"
    tie = claims(table({**BASE, "hir": [[0.1, 0.2, 0.3, 0.35, 0.45], [0.1, 0.2, 0.3, 0.35, 0.35],
                                        [0.1, 0.2, 0.3, 0.35, 0.40]]}))
    assert tie["select_matters"].verdict == "inconclusive"
    down = claims(table({**BASE, "hir": same([0.1, 0.2, 0.3, 0.3, 0.3])}))
    assert down["select_matters"].verdict == "refuted"


def test_cla_not_lower_is_no_worse_with_one_point_tolerance():
    hir = same([0.1, 0.2, 0.3, 0.35, 0.40])
    slightly_lower = claims(table({**BASE, "hir": hir}, cla={"hir": [0.497] * 3, "grpo_binary": [0.5] * 3}))
    assert slightly_lower["cla_not_lower"].verdict == "holds"           # −0.3 point, CI above −1 point
    lower = claims(table({**BASE, "hir": hir}, cla={"hir": [0.45] * 3, "grpo_binary": [0.5] * 3}))
    assert lower["cla_not_lower"].verdict == "refuted"
    mixed = claims(table({**BASE, "hir": hir}, cla={"hir": [0.55, 0.44, 0.49], "grpo_binary": [0.5] * 3}))
    assert mixed["cla_not_lower"].verdict == "inconclusive"


def test_less_budget_is_judged_at_equal_budget_with_the_binary_premise():
    fast = claims(table({**BASE, "hir": same([0.1, 0.25, 0.33, 0.36, 0.40])}))
    c = fast["less_budget"]
    assert c.verdict == "holds" and c.judgement.premises and c.judgement.premises[0].met
    assert "75%" in c.measured_value
    slow = claims(table({**BASE, "hir": same([0.1, 0.12, 0.14, 0.16, 0.35])}))
    assert slow["less_budget"].verdict == "refuted"                     # HiR@75 % 0.16 < binary@100 % 0.30
    flat = {**BASE, "grpo_binary": same([0.1, 0.3, 0.3, 0.3, 0.3])}    # binary already at its final at 25 %
    plateau = claims(table({**flat, "hir": same([0.1, 0.25, 0.33, 0.36, 0.40])}))
    c = plateau["less_budget"]
    assert c.verdict == "inconclusive" and "FAILED" in c.premise


def test_one_seed_is_inconclusive_for_every_counted_claim():
    one = {m: v[:1] for m, v in {**BASE, "hir": same([0.1, 0.2, 0.3, 0.4, 0.6])}.items()}
    got = claims(table(one))
    for k in ("beats_binary", "matches_dense", "select_matters", "cla_not_lower", "less_budget"):
        assert got[k].verdict == "inconclusive", k
        assert not np.isfinite(got[k].judgement.low)
