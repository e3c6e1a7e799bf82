"""limix's learning gate and claims on known numbers: a holds case, a refuted case, an
inconclusive-by-premise case (the one rule of assets/common/claims.py)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.limix import benchmark, runs

GATE = (0.65, 0.20)


def test_learning_gate_decision_on_known_input():
    assert runs.learned(0.70, 0.25, *GATE)
    assert not runs.learned(0.64, 0.50, *GATE)             # AUC short
    assert not runs.learned(0.90, 0.19, *GATE)             # loss fell < 20 %
    assert not runs.learned(float("nan"), 0.5, *GATE)
    assert runs.learned(0.65, 0.20, *GATE)                 # the bounds are inclusive


def _checkpoints(auc=None):
    auc = auc or {}
    rows = [{"variant": v, "seed": s, "val_auc": auc.get((v, s), 0.8), "loss_drop": 0.3, "params": 10}
            for v in ("linear_fsn", "linear_snf", "rabel_fsn", "rabel_snf", "linear_fsn_wide") for s in (0, 1, 2)]
    frame = pd.DataFrame(rows)
    frame["learned"] = [runs.learned(a, d, *GATE) for a, d in zip(frame["val_auc"], frame["loss_drop"])]
    return frame


def _scores(shift: dict[str, float], tasks=20, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.6, 0.9, size=(3, tasks))
    rows = []
    for v, d in shift.items():
        noise = rng.normal(0, 0.002, size=base.shape)
        for s in range(3):
            for t in range(tasks):
                rows.append({"variant": v, "seed": s, "suite": "val", "task": t, "auc": base[s, t] + d + noise[s, t]})
    return pd.DataFrame(rows)


def test_each_helps_holds_when_rabel_snf_beats_every_ablation_by_the_margins():
    scores = _scores({"rabel_snf": 0.05, "rabel_fsn": 0.02, "linear_snf": 0.02, "linear_fsn": 0.0})
    assert benchmark.each_helps(scores, _checkpoints(), GATE).verdict == "holds"


def test_each_helps_is_refuted_when_rabel_snf_is_clearly_worse():
    scores = _scores({"rabel_snf": 0.0, "rabel_fsn": 0.05, "linear_snf": 0.05, "linear_fsn": 0.05})
    assert benchmark.each_helps(scores, _checkpoints(), GATE).verdict == "refuted"


def test_an_unlearned_checkpoint_makes_the_claim_inconclusive_with_its_premise():
    scores = _scores({"rabel_snf": 0.05, "rabel_fsn": 0.02, "linear_snf": 0.02, "linear_fsn": 0.0})
    claim = benchmark.each_helps(scores, _checkpoints({("rabel_snf", 0): 0.55}), GATE)
    assert claim.verdict == "inconclusive"
    assert "rabel_snf AUC 0.550" in claim.premise and "FAILED" in claim.premise


def _ranks(ratio: float, tasks=10):
    rng = np.random.default_rng(1)
    rows = []
    for s in range(3):
        for t in range(tasks):
            lin = 6 + rng.integers(0, 2)
            for v, r in (("linear_snf", lin), ("rabel_snf", lin * ratio + rng.normal(0, 0.1))):
                rows.append({"variant": v, "seed": s, "task": t, "layer": 1, "rank95": float(r), "rank99": 20.0})
    return pd.DataFrame(rows)


def test_rank_lift_holds_at_twice_and_is_refuted_at_equal_rank():
    assert benchmark.rank_lift(_ranks(2.0), _checkpoints(), [0, 1, 2], GATE).verdict == "holds"
    assert benchmark.rank_lift(_ranks(1.0), _checkpoints(), [0, 1, 2], GATE).verdict == "refuted"


def test_same_cost_holds_for_equal_timings_and_is_refuted_for_a_doubled_one():
    rng = np.random.default_rng(2)

    def timings(factor):
        return pd.DataFrame([{"variant": v, "seed": 0, "repeat": r,
                              "seconds": 0.01 * (factor if v.endswith("snf") else 1) * (1 + rng.normal(0, 0.005))}
                             for r in range(10) for v in ("linear_snf", "linear_fsn", "rabel_snf", "rabel_fsn")])

    assert benchmark.same_cost(timings(1.0)).verdict == "holds"
    assert benchmark.same_cost(timings(2.0)).verdict == "refuted"


def test_best_embedding_is_not_evaluated_at_cpu():
    claim = benchmark.best_embedding()
    assert claim.verdict == "inconclusive" and "gpu profile only" in claim.measured_value
