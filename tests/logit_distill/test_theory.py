"""The theory examples and the claim logic."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from assets.logit_distill import benchmark, theory


def test_theory_examples_meet_their_expectations():
    result = theory.theory_examples(np.random.default_rng(0))
    assert theory.theory_problems(result) == []
    a2 = result["swapped_unembedding"]
    # unembeddings are fixed by the construction: sklearn's CCA score is the paper's 0.336
    assert abs(a2["cca_score_unembeddings"] - 0.336) < 0.002
    assert a2["kl_12"] < 1e-2 and a2["d2_logit"] > 100      # tiny KL, huge logit distance


def test_theory_problems_name_a_broken_reparametrisation():
    result = theory.theory_examples(np.random.default_rng(1))
    result["reparametrisation"]["d_rep"] = 0.3
    assert any("(a1) d_rep" in p for p in theory.theory_problems(result))


def _metrics(mcca_l2, mcca_kl, drep_l2, drep_kl):
    rows = []
    for seed, (a, b, c, d) in enumerate(zip(mcca_l2, mcca_kl, drep_l2, drep_kl)):
        rows.append({"dataset": "spirals", "objective": "l2", "teacher_seed": 0, "seed": seed, "mcca": a, "d_rep": c})
        rows.append({"dataset": "spirals", "objective": "kl", "teacher_seed": 0, "seed": seed, "mcca": b, "d_rep": d})
    return benchmark.tidy(rows)


def test_spirals_claim_is_judged_by_the_paired_cis_not_the_seed_count():
    good = _metrics([0.99] * 5, [0.9, 0.9, 0.9, 0.9, 0.995], [1] * 5, [5] * 5)
    assert benchmark._spirals_claim(good).holds                 # both paired CIs on the claimed side
    drep_wrong = _metrics([0.99] * 5, [0.9] * 5, [5] * 5, [1] * 5)
    assert benchmark._spirals_claim(drep_wrong).verdict == "refuted"   # mCCA alone is not enough
    claim = benchmark._spirals_claim(good)
    assert claim.seeds == "teacher 0 × students 0–4 (5)" and "mCCA L2 − KL: Δ" in claim.measured_value


def test_spirals_claim_is_inconclusive_when_the_paired_ci_straddles_zero():
    """L2 beats KL on 5/5 seeds on both metrics, but one seed dominates the d_rep differences:
    the paired 90 % CI of d_rep(L2) − d_rep(KL) reaches above 0, so the claim is inconclusive."""
    drep_kl = [7, 6, 2000, 6, 7]
    claim = benchmark._spirals_claim(_metrics([0.99] * 5, [0.9, 0.91, 0.89, 0.9, 0.9], [5] * 5, drep_kl))
    assert claim.verdict == "inconclusive" and "d_rep L2 − KL" in claim.measured_value
    one = _metrics([0.99], [0.9], [1], [5])                      # one seed establishes nothing
    assert benchmark._spirals_claim(one).verdict == "inconclusive"


def test_concept_probe_reads_a_linear_concept_and_not_noise():
    rng = np.random.default_rng(0)
    concepts = np.repeat(np.arange(3), 200)
    encoded = np.column_stack([concepts + 0.1 * rng.standard_normal(600), rng.standard_normal(600)])
    noise = rng.standard_normal((600, 2))
    assert benchmark.concept_probe(encoded, concepts, 0)["probe_accuracy"] > 0.95
    assert abs(benchmark.concept_probe(noise, concepts, 0)["probe_accuracy"] - 1 / 3) < 0.1


def test_tidy_keeps_nan_values_but_not_absent_metrics():
    frame = benchmark.tidy([{"dataset": "a", "objective": "kl", "teacher_seed": 0, "seed": 1, "x": np.nan},
                            {"dataset": "b", "objective": "kl", "teacher_seed": 0, "seed": 1, "y": 2.0}])
    assert len(frame) == 2 and frame["value"].isna().sum() == 1
    assert isinstance(frame, pd.DataFrame)


def _probe_metrics(dataset, l1, l2, kl, ce):
    rows = []
    for seed, values in enumerate(zip(l1, l2, kl, ce)):
        for objective, value in zip(("l1", "l2", "kl", "ce"), values):
            rows.append({"dataset": dataset, "objective": objective, "teacher_seed": 0, "seed": seed,
                         "probe_accuracy": value})
    return benchmark.tidy(rows)


KL = np.array([0.50, 0.52, 0.48, 0.51, 0.49])
CE = np.array([0.60, 0.61, 0.59, 0.62, 0.58])
L1 = np.array([0.90, 0.88, 0.91, 0.89, 0.92])
L2 = np.array([0.85, 0.86, 0.84, 0.87, 0.83])


def test_concept_preservation_holds_when_every_part_of_the_criterion_holds():
    holds, measured, detail = benchmark.concept_preservation(_probe_metrics("shapes", L1, L2, KL, CE), "shapes")
    assert holds and "L1 − KL: 5/5 seeds" in measured and "L2 − CE" in measured
    assert "part (a) L1 or L2 beats KL by ≥ 0.10: holds" in detail
    # 4 of 5 seeds is enough when the paired CI of the gap still clears the margin
    # (diffs 0.40, 0.36, 0.43, 0.38, −0.04: mean 0.306, 90% t lower bound ≈ 0.12)
    four = _probe_metrics("shapes", [0.9, 0.88, 0.91, 0.89, 0.45], L2 - 0.3, KL, CE - 0.3)
    assert benchmark.concept_preservation(four, "shapes")[0]


def test_concept_preservation_fails_on_seed_count_on_either_margin_and_on_a_point_estimate():
    three = _probe_metrics("shapes", L1, L2, [0.5, 0.5, 0.5, 0.95, 0.95], CE)      # 3/5 wins for L1 and L2
    assert not benchmark.concept_preservation(three, "shapes")[0]
    small_gap = _probe_metrics("shapes", KL + 0.05, KL + 0.06, KL, KL - 0.2)        # 5/5 wins, gap 0.05 < 0.10
    holds, measured, _ = benchmark.concept_preservation(small_gap, "shapes")
    assert not holds and "L1 − KL: 5/5 seeds" in measured and "refuted" in measured
    near_ce = _probe_metrics("shapes", KL + 0.4, KL + 0.4, KL, KL + 0.35)          # L2 only 0.05 above CE
    holds, _, detail = benchmark.concept_preservation(near_ce, "shapes")
    assert not holds and "part (a) L1 or L2 beats KL by ≥ 0.10: holds" in detail
    assert "part (b) L2 ≥ CE + 0.10: refuted" in detail
    # mean gap 0.246 ≥ 0.10 and the paired 90% CI lower bound ≈ 0.03 > 0: the one rule's "effect" holds
    gaps = np.array([0.5, 0.3, 0.01, 0.02, 0.4])
    noisy = _probe_metrics("shapes", KL + gaps, KL + gaps, KL, KL - 0.3)
    assert benchmark.concept_preservation(noisy, "shapes")[0]
    # a gap whose CI reaches below 0 is not established
    wild = _probe_metrics("shapes", KL + [0.6, -0.2, 0.5, -0.1, 0.4], KL + [0.6, -0.2, 0.5, -0.1, 0.4], KL, KL - 0.3)
    assert not benchmark.concept_preservation(wild, "shapes")[0]
    # L1 alone clearing the KL margin does not excuse L2 missing the CE margin
    l1_only = _probe_metrics("shapes", L1, CE + 0.02, KL, CE)
    assert not benchmark.concept_preservation(l1_only, "shapes")[0]


def test_digits_claim_is_the_same_criterion_and_names_its_seeds():
    good = benchmark._digits_claim(_probe_metrics("digits", L1, L2, KL, CE))
    assert good.holds and good.seeds == "teacher 0 × students 0–4 (5)"
    assert not benchmark._digits_claim(_probe_metrics("digits", KL + 0.05, KL + 0.06, KL, KL - 0.2)).holds


def test_throughput_summary_known_answer():
    students = pd.DataFrame({
        "dataset": ["d", "d"], "objective": ["kl", "kl"], "device": ["cpu", "cpu"],
        "samples_per_second": [100.0, 300.0], "train_seconds": [2.0, 3.0], "step_seconds": [4.0, 4.0],
        "save_seconds": [0.1, 0.3], "loop_samples_per_second": [50.0, np.nan],
        "bare_samples_per_second": [100.0, np.nan]})
    row = benchmark.throughput_summary(students).iloc[0]
    assert row["samples_per_s"] == 200.0 and row["loop_vs_bare"] == 0.5
    assert row["overhead_share"] == pytest.approx((0.5 + 0.25) / 2) and row["checkpoint_s"] == pytest.approx(0.2)
