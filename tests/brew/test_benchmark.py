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


def _frame(role, method, accepted, score, message, message_true, attack="none", n=1):
    return pd.DataFrame({"seed": 0, "key_index": 0, "text_id": [f"{role}{i}" for i in range(n)], "role": role,
                         "scheme": "brew", "attack": attack, "method": method, "accepted": accepted, "score": score,
                         "message": message, "message_true": message_true, "shift": 0})


def test_claims_follow_the_measurements():
    code = make_code("bch31_16")
    rows = []
    for S in B.SHIFT_RANGES:
        rows.append(_frame("positive", f"brew_soft_S{S}", True, 10.0, 5, 5, "ins5", n=600))
        rows.append(_frame("human", f"brew_soft_S{S}", False, 0.1, 1, -2, n=600))
    rows.append(_frame("positive", "brew_soft_S4", True, 10.0, 5, 5, "syn10", n=600))
    rows.append(_frame("human", "ecc_decode", np.arange(600) < 90, 1.0, 1, -2, n=600))
    rows.append(_frame("human", "ecc_nearest", True, 0.0, 1, -2, n=600))
    for m in ("ecc_thr_errors", "ecc_thr_margin"):
        rows.append(_frame("positive", m, True, 1.0, 5, 5, "syn10", n=600))
        rows.append(_frame("human", m, False, np.linspace(0, 0.5, 600), 1, -2, n=600))
    detections = pd.concat(rows, ignore_index=True)
    scored = B.add_calibrated(detections, B.calibrate(detections, 0.02))
    claims = {c.claim_id: c for c in B.evaluate_claims(scored, code, min_texts=500)}
    assert claims["brew_tpr_syn10"].holds
    assert claims["ecc_high_fpr"].holds                       # 90/600 = 0.15 vs 0.152
    assert not claims["ecc_threshold_collapse"].holds         # the thresholded extractor kept TPR 1.0
    assert not claims["shift_helps_insertion"].holds          # flat in S
