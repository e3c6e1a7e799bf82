"""Claims arithmetic on hand-made score rows (thresholds are module constants)."""
from __future__ import annotations

import pandas as pd

from assets.vcot import benchmark as B


def rows(completer: str, accs: dict[int, list[float]]) -> list[dict]:
    out = []
    for bucket, values in accs.items():
        for p, acc in enumerate(values):
            out.append({"completer": completer, "dimension": "ratio", "bucket": bucket, "program_id": f"p{p}",
                        "acc": acc, "sem": acc == 1.0, "n_holes": bucket // 10, "reason": "",
                        "holes_equivalent": bucket // 10 if acc == 1.0 else 0})
    return out


def test_fragility_holds_only_for_a_large_monotone_drop():
    steep = {b: [1.0 if b <= 30 else 0.25, 1.0 if b <= 50 else 0.0, 1.0 if b <= 70 else 0.25] for b in B.BUCKETS}
    flat = {b: [0.25, 0.25, 1.0] for b in B.BUCKETS}
    scores = pd.DataFrame(rows("solver", steep) + rows("retrieval", flat))
    assert B.spearman(scores, "solver") <= B.SPEARMAN_MAX
    assert not B.fragility_claim(scores, "retrieval", 500, 0).holds   # flat: refuted (see test_verdicts)


def test_per_hole_rate_and_the_independence_prediction():
    scores = pd.DataFrame(rows("solver", {10: [1.0, 0.25], 20: [0.25, 0.25]}))
    table = B.per_hole(scores, "ratio", "bucket").set_index("bucket")
    assert table.loc[10, "hole_SemAcc"] == 50.0 and table.loc[10, "independent_SemAcc"] == 50.0
    assert table.loc[20, "hole_SemAcc"] == 0.0 and table.loc[10, "Acc"] == 62.5
