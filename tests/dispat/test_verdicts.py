"""Each counted dispat claim judged by the one rule on constructed measurements: a holds case and a
refuted or inconclusive case per claim, per-cell FPR, and alignment's kept-round premise."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.params import parse
from assets.dispat import benchmark as B
from assets.dispat.params import DispatParams
from resources.profiles import load_params

DATASETS = ("breast_cancer", "fair", "synthetic_transactions")
SEEDS = (0, 1, 2)
N_NORMAL = 2000                    # test normals per cell: tight Clopper–Pearson intervals
P = parse(DispatParams, load_params("dispat", "smoke"), "dispat.smoke")


def thresholds(auc: dict[str, float], jitter=(0.0, 0.004, -0.004), fpr=0.05, dep: dict | None = None):
    rows = []
    for d in DATASETS:
        for i, s in enumerate(SEEDS):
            for m, v in auc.items():
                rows.append({"dataset": d, "seed": s, "method": m, "auroc": v + (jitter[i] if m == "dispat" else 0),
                             "auprc": 0.5, "f1": 0.5, "fpr": fpr if not callable(fpr) else fpr(d, s),
                             B.DEPENDENCY: (dep or {"dispat": 0.8}).get(m, 0.7) + (jitter[i] if m == "dispat" else 0)})
    return pd.DataFrame(rows)


def scores(th: pd.DataFrame) -> pd.DataFrame:
    """Test-normal rows only (what fpr_cells counts), plus two anomalies per cell for the row bootstrap."""
    rng = np.random.default_rng(0)
    rows = []
    for (d, s, m), _ in th.groupby(["dataset", "seed", "method"]):
        n = N_NORMAL
        sc = np.r_[rng.normal(0, 1, n), rng.normal(2, 1, 2)]
        rows.append(pd.DataFrame({"dataset": d, "seed": s, "method": m, "split": "test", "row_id": np.arange(n + 2),
                                  "label": np.r_[np.zeros(n, int), np.ones(2, int)], "score": sc}))
    return pd.concat(rows, ignore_index=True)


def alignment(delta=(-0.05, -0.04, -0.06), kept=(1, 1, 1), rise=0.01) -> pd.DataFrame:
    rows = []
    for k, d in enumerate(DATASETS):
        for i, s in enumerate(SEEDS):
            rows.append({"dataset": d, "seed": s, "c2st_theta0": 0.95, "c2st_thetaT": 0.95 + delta[i] + 0.001 * k,
                         "val_nll_theta0": 10.0, "val_nll_thetaT": 10.0 * (1 + rise), "rounds_accepted": kept[k]})
    return pd.DataFrame(rows)


def judge(th, al=None, rounds=None) -> dict:
    claims, _ = B.build_claims(th, scores(th), alignment() if al is None else al, None, P, rounds)
    return {c.claim_id: c for c in claims}


GOOD = {"dispat": 0.90, "anollm_matched": 0.85, "anollm_sft": 0.84, "iforest": 0.80, "copod": 0.82}


def test_all_counted_claims_hold_on_a_clear_win():
    got = judge(thresholds(GOOD))
    for k in ("beats_matched", "beats_non_llm", "alignment", "calibrated_fpr"):
        assert got[k].verdict == "holds", (k, got[k].judgement.reason)


def test_beats_matched_needs_the_margin():
    small = judge(thresholds({**GOOD, "anollm_matched": 0.895}))          # +0.005 < +0.01
    assert small["beats_matched"].verdict == "refuted"
    noisy = judge(thresholds({**GOOD, "anollm_matched": 0.885}, jitter=(0.06, -0.08, 0.02)))
    assert noisy["beats_matched"].verdict == "inconclusive"


def test_beats_non_llm_pooled_and_dependency_parts():
    lose = judge(thresholds({**GOOD, "copod": 0.95}))
    assert lose["beats_non_llm"].verdict == "refuted"
    dep = judge(thresholds(GOOD, dep={"dispat": 0.6, "copod": 0.8}))
    assert dep["beats_non_llm"].verdict == "refuted" and "dependency" in dep["beats_non_llm"].judgement.reason
    tie = judge(thresholds(GOOD, jitter=(0.0, 0.05, -0.05), dep={"dispat": 0.8, "copod": 0.8}))
    assert tie["beats_non_llm"].verdict == "inconclusive"


def test_calibrated_fpr_is_judged_per_cell():
    one_low = judge(thresholds(GOOD, fpr=lambda d, s: 0.013 if (d, s) == ("fair", 1) else 0.05))
    assert one_low["calibrated_fpr"].verdict == "refuted"                # 26/2000: CI wholly below 0.03
    edge = judge(thresholds(GOOD, fpr=lambda d, s: 0.0305 if (d, s) == ("fair", 1) else 0.05))
    assert edge["calibrated_fpr"].verdict == "inconclusive"              # CI straddles 0.03


def test_alignment_counts_only_cells_with_a_kept_round():
    lower = judge(thresholds(GOOD), alignment(kept=(8, 0, 0)))            # only breast_cancer kept rounds: 3 cells
    c = lower["alignment"]
    assert c.verdict == "holds" and "3 of 9 cells" in c.detail and "fair/0" in c.detail
    few = judge(thresholds(GOOD), alignment(kept=(0, 0, 0)))
    assert few["alignment"].verdict == "inconclusive" and "FAILED" in few["alignment"].premise
    up = judge(thresholds(GOOD), alignment(delta=(0.03, 0.04, 0.05)))
    assert up["alignment"].verdict == "refuted"
    collapse = judge(thresholds(GOOD), alignment(rise=0.05))
    assert collapse["alignment"].verdict == "inconclusive" and "no collapse" in collapse["alignment"].premise


def test_f_variants_drop_cells_where_a_variant_kept_nothing():
    th = thresholds({**GOOD, "dispat_kl": 0.88, "dispat_chi2": 0.87})
    rounds = pd.DataFrame([{"dataset": d, "seed": s, "f": f, "accepted": d == "breast_cancer"}
                           for d in DATASETS for s in SEEDS for f in ("js", "kl", "chi2")])
    row = judge(th, rounds=rounds)["f_variants"]
    assert row.kind == "observation" and "fair" not in row.measured_value and "breast_cancer/0" in row.measured_value
    none = judge(th, rounds=rounds.assign(accepted=False))["f_variants"]
    assert "no cell where every f kept" in none.measured_value


def test_a_cell_without_a_kept_round_makes_the_claims_inconclusive_by_premise():
    """Issue 48: where every self-play round was rejected θ_T = θ0, so the pooled claims (and that cell's
    FPR) are inconclusive whatever the interval says; a refuting kept cell still refutes the FPR claim."""
    al = alignment(kept=(1, 1, 1)).assign(rounds_accepted=lambda a: np.where(
        (a.dataset == "fair") & (a.seed == 1), 0, a.rounds_accepted))
    got = judge(thresholds(GOOD), al)
    for k in ("beats_matched", "beats_non_llm", "calibrated_fpr"):
        assert got[k].verdict == "inconclusive", k
        assert "8 of 9 cells; none kept on fair/1" in got[k].premise and "FAILED" in got[k].premise, k
    assert got["alignment"].verdict == "holds"                            # counts the 8 kept cells only
    kept = judge(thresholds(GOOD))
    assert "9 of 9 cells" in kept["beats_matched"].premise and "FAILED" not in kept["beats_matched"].premise
    low_kept = judge(thresholds(GOOD, fpr=lambda d, s: 0.013 if (d, s) == ("breast_cancer", 0) else 0.05), al)
    assert low_kept["calibrated_fpr"].verdict == "refuted"
    low_unkept = judge(thresholds(GOOD, fpr=lambda d, s: 0.013 if (d, s) == ("fair", 1) else 0.05), al)
    assert low_unkept["calibrated_fpr"].verdict == "inconclusive"
    lose = judge(thresholds({**GOOD, "copod": 0.95}), al)                # would refute: the premise decides first
    assert lose["beats_non_llm"].verdict == "inconclusive"
