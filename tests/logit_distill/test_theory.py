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


def test_spirals_claim_needs_four_of_five_seeds_on_both_metrics():
    good = _metrics([0.99] * 5, [0.9, 0.9, 0.9, 0.9, 0.995], [1] * 5, [5] * 5)
    assert benchmark._spirals_claim(good).holds                 # 4/5 seeds
    bad = _metrics([0.99] * 5, [0.9, 0.9, 0.9, 0.995, 0.995], [1] * 5, [5] * 5)
    assert not benchmark._spirals_claim(bad).holds              # 3/5 seeds
    drep_wrong = _metrics([0.99] * 5, [0.9] * 5, [5] * 5, [1] * 5)
    assert not benchmark._spirals_claim(drep_wrong).holds       # mCCA alone is not enough


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


def _probe_metrics(dataset, l1, kl, ce):
    rows = []
    for seed, values in enumerate(zip(l1, kl, ce)):
        for objective, value in zip(("l1", "kl", "ce"), values):
            rows.append({"dataset": dataset, "objective": objective, "teacher_seed": 0, "seed": seed,
                         "probe_accuracy": value})
    return benchmark.tidy(rows)


def test_concept_preservation_needs_four_of_five_seeds_and_the_ce_control():
    good = _probe_metrics("shapes", [0.9] * 5, [0.5, 0.5, 0.5, 0.5, 0.95], [0.6] * 5)
    holds, measured, _ = benchmark.concept_preservation(good, "shapes")
    assert holds and "L1 beats KL on 4/5 seeds (need 4)" in measured
    three = _probe_metrics("shapes", [0.9] * 5, [0.5, 0.5, 0.5, 0.95, 0.95], [0.6] * 5)
    assert not benchmark.concept_preservation(three, "shapes")[0]
    below_ce = _probe_metrics("shapes", [0.7] * 5, [0.5] * 5, [0.8] * 5)
    assert not benchmark.concept_preservation(below_ce, "shapes")[0]
    # the digits claim is the same criterion on the digits rows
    digits = _probe_metrics("digits", [0.9] * 5, [0.5] * 5, [0.6] * 5)
    assert benchmark._digits_claim(digits).holds and not benchmark._digits_claim(three).holds


def test_throughput_summary_known_answer():
    students = pd.DataFrame({
        "dataset": ["d", "d"], "objective": ["kl", "kl"], "device": ["cpu", "cpu"],
        "samples_per_second": [100.0, 300.0], "train_seconds": [2.0, 3.0], "step_seconds": [4.0, 4.0],
        "save_seconds": [0.1, 0.3], "loop_samples_per_second": [50.0, np.nan],
        "bare_samples_per_second": [100.0, np.nan]})
    row = benchmark.throughput_summary(students).iloc[0]
    assert row["samples_per_s"] == 200.0 and row["loop_vs_bare"] == 0.5
    assert row["overhead_share"] == pytest.approx((0.5 + 0.25) / 2) and row["checkpoint_s"] == pytest.approx(0.2)
