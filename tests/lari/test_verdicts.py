"""Each counted lari claim judged by the one rule on constructed per-seed measurements: a holds case
and a refuted or inconclusive case per claim, and the τ rule (not argmax) deciding."""
from __future__ import annotations

import warnings

import pandas as pd

from assets.lari import benchmark as B

SEEDS = [0, 1, 2]
STOP = {"stop_accuracy", "stop_majority_rate", "order_violations"}


def frames(values: dict[tuple[str, str, str], list[float]]):
    rows = [{"scene_kind": k, "seed": s, "method": m, "metric": metric, "value": v,
             "view": -1 if metric in STOP else 0}
            for (k, m, metric), vs in values.items() for s, v in zip(SEEDS, vs)]
    models = pd.DataFrame([{"seed": 0, "net": "pointmap", "layers": 4, "parameters": 100_000},
                           {"seed": 0, "net": "stop", "layers": 0, "parameters": 100_000}])
    thresholds = pd.DataFrame([{"scene_kind": k, "seed": s, "tau": 0.1} for k in ("object", "room") for s in SEEDS])
    return pd.DataFrame(rows), models, thresholds


def good() -> dict:
    """Every claim holds under the τ rule; argmax (method "lari") is bad everywhere."""
    return {
        ("object", "lari_tau", "f@0.05"): [0.55, 0.56, 0.57], ("object", "visible_only", "f@0.05"): [0.25, 0.25, 0.26],
        ("object", "lari_tau", "cd"): [0.06, 0.062, 0.061], ("object", "visible_only", "cd"): [0.14, 0.145, 0.142],
        ("object", "lari_all_valid", "f@0.05"): [0.45, 0.46, 0.46],
        ("object", "lari", "stop_accuracy"): [0.95, 0.96, 0.955],
        ("object", "lari", "stop_majority_rate"): [0.70, 0.70, 0.71],
        ("room", "lari_tau", "unseen_f@0.05"): [0.50, 0.52, 0.51],
        ("room", "lari_tau", "visible_f@0.05"): [0.58, 0.59, 0.585],
        ("room", "visible_only", "visible_f@0.05"): [0.58, 0.59, 0.59],
        ("object", "lari", "f@0.05"): [0.20, 0.21, 0.22], ("object", "lari", "cd"): [0.2, 0.2, 0.2],
        ("room", "lari", "unseen_f@0.05"): [0.0, 0.0, 0.0],
    }


def judge(values: dict) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)          # nanmean of methods not in the table
        return {c.claim_id: c for c in B.claims(*frames(values), SEEDS, 4, None)}


def test_all_hold_under_the_tau_rule_while_argmax_is_report_only():
    got = judge(good())
    for k in ("completeness", "unseen_geometry", "stop_index_needed"):
        assert got[k].verdict == "holds", (k, got[k].judgement.reason)
    assert got["argmax_stop"].kind == "observation"


def test_completeness_effect_margin_and_cd_part():
    small = {**good(), ("object", "lari_tau", "f@0.05"): [0.30, 0.31, 0.32]}     # ΔF ≈ +0.06 < +0.10
    assert judge(small)["completeness"].verdict == "refuted"
    # the issue's case: ΔF CI lower bound below 0.10 but above 0, mean ≥ 0.10 → holds under "effect"
    issue = {**good(), ("object", "lari_tau", "f@0.05"): [0.49, 0.38, 0.51]}       # Δ +0.24 / +0.13 / +0.25
    assert judge(issue)["completeness"].verdict == "holds"
    noisy = {**good(), ("object", "lari_tau", "f@0.05"): [0.70, 0.20, 0.60]}       # Δ +0.45 / −0.05 / +0.34
    assert judge(noisy)["completeness"].verdict == "inconclusive"
    cd = {**good(), ("object", "lari_tau", "cd"): [0.13, 0.135, 0.13]}            # only ≈ 8 % lower
    assert judge(cd)["completeness"].verdict == "refuted"


def test_unseen_geometry_bound_and_visible_no_worse():
    low = {**good(), ("room", "lari_tau", "unseen_f@0.05"): [0.30, 0.31, 0.29]}
    assert judge(low)["unseen_geometry"].verdict == "refuted"
    spread = {**good(), ("room", "lari_tau", "unseen_f@0.05"): [0.0, 0.8, 0.5]}
    assert judge(spread)["unseen_geometry"].verdict == "inconclusive"
    worse = {**good(), ("room", "lari_tau", "visible_f@0.05"): [0.48, 0.49, 0.485]}   # −0.10
    assert judge(worse)["unseen_geometry"].verdict == "refuted"


def test_stop_index_parts():
    majority = {**good(), ("object", "lari", "stop_majority_rate"): [0.85, 0.86, 0.85]}   # accuracy − majority ≈ 0.1
    assert judge(majority)["stop_index_needed"].verdict == "refuted"
    tie = {**good(), ("object", "lari_all_valid", "f@0.05"): [0.54, 0.56, 0.58]}      # ΔF ≈ 0
    assert judge(tie)["stop_index_needed"].verdict == "refuted"
    acc = {**good(), ("object", "lari", "stop_accuracy"): [0.80, 0.99, 0.93]}         # CI straddles 0.85
    assert judge(acc)["stop_index_needed"].verdict == "inconclusive"


def test_one_seed_or_no_measurement_is_inconclusive():
    one = {k: v[:1] for k, v in good().items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = {c.claim_id: c for c in B.claims(*frames(one), [0], 4, None)}
    assert all(got[k].verdict == "inconclusive" for k in ("completeness", "unseen_geometry", "stop_index_needed"))
    empty = judge({k: v for k, v in good().items() if k[1] != "lari_tau"})
    assert empty["completeness"].verdict == "inconclusive"
