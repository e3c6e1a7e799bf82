"""The counted logit_distill claims judged by the one rule on constructed metric rows; the spirals
claim is the explicit conjunction of two CIs; the bound and the construction are sanity rows."""
from __future__ import annotations

import numpy as np

from assets.common.claims import HOLDS, INCONCLUSIVE, REFUTED, SANITY, all_of, verdict
from assets.logit_distill import benchmark as B


def rows(dataset, values: dict[str, dict[str, list[float]]]):
    out = []
    for objective, metrics in values.items():
        n = len(next(iter(metrics.values())))
        for seed in range(n):
            out.append({"dataset": dataset, "objective": objective, "teacher_seed": 0, "seed": seed,
                        **{m: v[seed] for m, v in metrics.items()}})
    return B.tidy(out)


J = np.array([0.0, 0.01, -0.01, 0.02, -0.02])


def spirals(mcca_gap: float, drep_l2, drep_kl):
    return rows("spirals", {"l2": {"mcca": list(0.9 + mcca_gap + J), "d_rep": list(drep_l2)},
                            "kl": {"mcca": list(0.9 + J[::-1]), "d_rep": list(drep_kl)}})


def test_and_or_combinations():
    h, r, i = verdict(1, 0.5, 2), verdict(-1, -2, -0.5), verdict(0, -1, 1)
    assert (h.outcome, r.outcome, i.outcome) == (HOLDS, REFUTED, INCONCLUSIVE)
    assert all_of([("a", h), ("b", h)], **B._ALL_OF)[0].outcome == HOLDS
    assert all_of([("a", h), ("b", r)], **B._ALL_OF)[0].outcome == REFUTED
    assert all_of([("a", i), ("b", r)], **B._ALL_OF)[0].outcome == REFUTED
    assert all_of([("a", h), ("b", i)], **B._ALL_OF)[0].outcome == INCONCLUSIVE
    assert B.any_of([("a", r), ("b", h)]).outcome == HOLDS
    assert B.any_of([("a", r), ("b", r)]).outcome == REFUTED
    assert B.any_of([("a", r), ("b", i)]).outcome == INCONCLUSIVE


def test_spirals_is_the_conjunction_of_two_paired_cis():
    assert B._spirals_claim(spirals(0.1, [5, 6, 7, 5, 6], [100, 110, 105, 120, 98])).verdict == HOLDS
    # heavy-tailed KL d_rep: L2 lower on 5/5 seeds, but the d_rep CI crosses 0 → inconclusive, never holds
    heavy = B._spirals_claim(spirals(0.1, [5, 6, 7, 5, 6], [7, 8, 9, 1000, 6.5]))
    assert heavy.verdict == INCONCLUSIVE and "d_rep L2 − KL < 0 inconclusive" in heavy.judgement.reason
    # mCCA clearly worse → refuted whatever d_rep says
    assert B._spirals_claim(spirals(-0.1, [5, 6, 7, 5, 6], [100, 110, 105, 120, 98])).verdict == REFUTED
    one = spirals(0.1, [5, 6, 7, 5, 6], [100, 110, 105, 120, 98])
    assert B._spirals_claim(one[one["seed"] == 0]).verdict == INCONCLUSIVE   # one seed: infinite CI


def test_agreement_bound_and_digits_claim():
    good = rows("digits", {"kl": {"agreement": list(0.97 + J / 10)}})
    assert B._premise(good).verdict == HOLDS
    assert B._premise(rows("digits", {"kl": {"agreement": list(0.90 + J / 10)}})).verdict == REFUTED
    kl = 0.5 + J
    probe = rows("digits", {o: {"probe_accuracy": list(v)} for o, v in
                            {"kl": kl, "l1": kl + 0.3, "l2": kl + 0.3 + J, "ce": kl}.items()})
    assert B._digits_claim(probe).verdict == HOLDS
    flat = rows("digits", {o: {"probe_accuracy": list(kl + J * k)} for k, o in enumerate(["kl", "l1", "l2", "ce"])})
    assert B._digits_claim(flat).verdict == REFUTED


def test_bound_and_construction_are_sanity_rows():
    m = rows("spirals", {"kl": {"bound_slack": [1.0, 2.0], "d_rep": [1.0, 1.0], "d_rep_bound": [2.0, 3.0]}})
    row = B._bound_claim(m)
    assert row.kind == SANITY and "VIOLATED" not in row.measured_value
    bad = rows("spirals", {"kl": {"bound_slack": [1.0, -2.0], "d_rep": [1.0, 5.0], "d_rep_bound": [2.0, 3.0]}})
    assert "VIOLATED" in B._bound_claim(bad).measured_value
    theory = {"swapped_unembedding": {"kl_12": 0.004, "kl_21": 0.004, "cca_score_unembeddings": 0.3,
                                      "mcca_unembeddings": 0.6, "d2_logit": 600.0}}
    assert B._swapped_claim(theory).kind == SANITY
