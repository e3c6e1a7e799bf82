"""Calibration at a target FPR, bit accuracy, and the claim logic on hand-made detections."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from assets.brew import benchmark as B
from assets.brew.bch import make_code


def test_threshold_at_fpr_meets_the_target_exactly_when_possible():
    null = np.arange(100, dtype=float)
    thr = B.threshold_at_fpr(null, 0.02)
    assert np.mean(null > thr) == pytest.approx(0.02)
    assert np.mean(null > B.threshold_at_fpr(null, 0.0)) == 0.0


def test_bit_accuracy():
    assert B.bit_accuracy(np.array([0b1010]), np.array([0b1000]), 4).tolist() == [0.75]
    assert B.bit_accuracy(np.array([-1]), np.array([3]), 4).tolist() == [0.5]


def test_analytic_error_threshold_for_bch31():
    # e=2: 2^16 (1 + 31 + 465) / 2^31 = 0.0152 <= 0.02 < e=3: 0.152
    assert B.analytic_error_threshold(make_code("bch31_16"), 0.02) == 2


def _frame(role, method, accepted, score, message, message_true, attack="none", n=1, seed=0, prefix=""):
    return pd.DataFrame({"seed": seed, "key_index": 0, "text_id": [f"{prefix}{role}{i}" for i in range(n)],
                         "role": role, "scheme": "brew", "attack": attack, "method": method, "accepted": accepted,
                         "score": score, "message": message, "message_true": message_true, "shift": 0})


def test_calibration_uses_only_the_calibration_half():
    fit = _frame("human_calibration", "ecc_thr_margin", True, np.arange(100, dtype=float), 1, -2, n=100)
    held = _frame("human", "ecc_thr_margin", True, np.arange(100, dtype=float) + 50.0, 1, -2, n=100, prefix="e")
    table = B.calibrate(pd.concat([fit, held], ignore_index=True), 0.02).set_index("method")
    row = table.loc["ecc_thr_margin"]
    assert row["human_fpr_at_threshold"] == pytest.approx(0.02) and row["human_trials"] == 100
    assert row["evaluation_fpr_at_threshold"] == pytest.approx(0.52) and row["evaluation_trials"] == 100
    assert row["calibration_ids_md5"] == B.calibration_ids_md5(fit["text_id"])


def _shift_rows(tprs: dict[str, list[float]], n=120):
    """ins5 positives per seed: method -> TPR per seed (exact = first round(TPR n) texts)."""
    rows = []
    for method, values in tprs.items():
        for seed, tpr in enumerate(values):
            exact = np.arange(n) < round(tpr * n)
            rows.append(_frame("positive", method, exact, 10.0, np.where(exact, 5, 6), 5, "ins5", n=n, seed=seed))
    return rows


def _scored(rows):
    detections = pd.concat(rows, ignore_index=True)
    return B.add_calibrated(detections, B.calibrate(detections, 0.02))


def _base_rows():
    rows = [_frame("positive", "brew_soft_S4", True, 10.0, 5, 5, "syn10", n=600),
            _frame("human", "brew_soft_S4", False, 0.1, 1, -2, n=600),
            _frame("human", "ecc_decode", np.arange(600) < 90, 1.0, 1, -2, n=600),
            _frame("human", "ecc_nearest", True, 0.0, 1, -2, n=600)]
    for m in ("ecc_thr_errors", "ecc_thr_margin"):
        rows.append(_frame("positive", m, True, 1.0, 5, 5, "syn10", n=600))
        rows.append(_frame("human_calibration", m, False, np.linspace(0, 0.5, 600), 1, -2, n=600, prefix="c"))
        rows.append(_frame("human", m, False, np.linspace(0, 0.5, 600), 1, -2, n=600))
    return rows


def test_claims_follow_the_measurements():
    code = make_code("bch31_16")
    rising = {"brew_soft_S0": [0.10, 0.12, 0.08, 0.11, 0.09], "brew_soft_S2": [0.5] * 5,
              "brew_soft_S4": [0.80, 0.84, 0.78, 0.82, 0.81], "brew_soft_S8": [0.8] * 5,
              "brew_global_S4": [0.05] * 5}
    claims = {c.claim_id: c for c in B.evaluate_claims(_scored(_base_rows() + _shift_rows(rising)), code, 500,
                                                             seeds="0–4 (5)")}
    assert claims["brew_tpr_syn10"].holds
    assert claims["ecc_high_fpr"].holds                       # 90/600 = 0.15 vs 0.152
    assert "property of the nearest-codeword" in claims["ecc_high_fpr"].detail
    assert not claims["ecc_threshold_collapse"].holds         # the thresholded extractor kept TPR 1.0
    assert claims["shift_helps_insertion"].holds and "paired" in claims["shift_helps_insertion"].measured_value
    assert claims["resync_vs_global_insertion"].kind == "observation"
    assert "would read: holds" in claims["resync_vs_global_insertion"].detail
    assert {c.claim_id for c in claims.values() if c.kind == "observation"} == set(B.OBSERVATIONS)
    assert all(c.seeds for c in claims.values())


@pytest.mark.parametrize("s4, expected", [
    ([0.80, 0.10, 0.80, 0.10, 0.12], "inconclusive"),  # mean rise, but the paired CI includes 0
    ([0.30, 0.31, 0.29, 0.30, 0.32], "refuted"),       # a clear rise to a TPR that means little (CI < 0.5)
])
def test_shift_claim_needs_a_ci_excluding_zero_and_a_useful_tpr(s4, expected):
    code = make_code("bch31_16")
    tprs = {"brew_soft_S0": [0.10, 0.12, 0.08, 0.11, 0.09], "brew_soft_S2": [0.2] * 5, "brew_soft_S4": s4,
            "brew_soft_S8": [0.3] * 5, "brew_global_S4": [0.05] * 5}
    claims = {c.claim_id: c for c in B.evaluate_claims(_scored(_base_rows() + _shift_rows(tprs)), code, 500)}
    assert claims["shift_helps_insertion"].verdict == expected


# ----------------------------------------------------------------------------- verdicts by the one rule
RISING = {"brew_soft_S0": [0.10, 0.12, 0.08, 0.11, 0.09], "brew_soft_S2": [0.5] * 5,
          "brew_soft_S4": [0.80, 0.84, 0.78, 0.82, 0.81], "brew_soft_S8": [0.8] * 5, "brew_global_S4": [0.05] * 5}


def _replace(rows, role, method, frame):
    return [r for r in rows if not (r["role"].iloc[0] == role and r["method"].iloc[0] == method)] + [frame]


def _verdicts(rows, min_texts=500, shift=RISING):
    claims = B.evaluate_claims(_scored(rows + _shift_rows(shift)), make_code("bch31_16"), min_texts, seeds="0–4 (5)")
    return {c.claim_id: c for c in claims}


def test_verdicts_of_the_syn10_claim():
    rows = _base_rows()
    assert _verdicts(rows)["brew_tpr_syn10"].verdict == "holds"
    # FPR 17/780 = 0.022 passed the old point rule (≤ 0.03); its 90% interval reaches 0.033
    fpr = _frame("human", "brew_soft_S4", np.arange(780) < 17, 0.1, 1, -2, n=780)
    assert _verdicts(_replace(rows, "human", "brew_soft_S4", fpr))["brew_tpr_syn10"].verdict == "inconclusive"
    low = _frame("positive", "brew_soft_S4", np.arange(600) < 480, 10.0, 5, 5, "syn10", n=600)
    assert _verdicts(_replace(rows, "positive", "brew_soft_S4", low))["brew_tpr_syn10"].verdict == "refuted"
    few = _verdicts(rows, min_texts=1000)["brew_tpr_syn10"]
    assert few.verdict == "inconclusive" and "FAILED" in few.premise


def test_verdicts_of_the_ecc_fpr_claim():
    rows = _base_rows()
    assert _verdicts(rows)["ecc_high_fpr"].verdict == "holds"
    low = _frame("human", "ecc_decode", np.arange(600) < 30, 1.0, 1, -2, n=600)       # 0.05
    assert _verdicts(_replace(rows, "human", "ecc_decode", low))["ecc_high_fpr"].verdict == "refuted"
    edge = _frame("human", "ecc_decode", np.arange(600) < 60, 1.0, 1, -2, n=600)      # 0.10
    assert _verdicts(_replace(rows, "human", "ecc_decode", edge))["ecc_high_fpr"].verdict == "inconclusive"
    assert _verdicts(rows, min_texts=1000)["ecc_high_fpr"].verdict == "inconclusive"
    note = _verdicts(rows)["ecc_fpr_matches_analytic"]
    assert note.kind == "observation" and "inside" in note.measured_value


def test_verdicts_of_the_threshold_collapse_claim():
    rows = _base_rows()
    assert _verdicts(rows)["ecc_threshold_collapse"].verdict == "refuted"       # TPR 1.0 kept
    for m in ("ecc_thr_errors", "ecc_thr_margin"):
        rows = _replace(rows, "positive", m, _frame("positive", m, True, np.where(np.arange(600) < 120, 1.0, 0.0), 5, 5,
                                                        "syn10", n=600))
    assert _verdicts(rows)["ecc_threshold_collapse"].verdict == "holds"          # TPR 0.2
    # no thresholded variant meets the FPR on the scored half: premise failed
    bad = _base_rows()
    for m in ("ecc_thr_errors", "ecc_thr_margin"):
        bad = _replace(bad, "human", m, _frame("human", m, False, np.linspace(0.4, 2.0, 600), 1, -2, n=600))
    c = _verdicts(bad)["ecc_threshold_collapse"]
    assert c.verdict == "inconclusive" and "FAILED" in c.premise


def test_shift_claim_with_one_seed_is_not_evaluated():
    one = {m: v[:1] for m, v in RISING.items()}
    c = _verdicts(_base_rows(), shift=one)["shift_helps_insertion"]
    assert c.verdict == "inconclusive" and c.measured_value.startswith("not evaluated")
    assert _verdicts(_base_rows())["shift_helps_insertion"].verdict == "holds"
    flat = {**RISING, "brew_soft_S4": RISING["brew_soft_S0"]}        # no change at all: Δ = 0 exactly
    assert _verdicts(_base_rows(), shift=flat)["shift_helps_insertion"].verdict != "holds"
