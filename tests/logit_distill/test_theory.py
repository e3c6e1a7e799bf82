"""The theory examples and the claim logic."""
from __future__ import annotations

import numpy as np
import pandas as pd

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
