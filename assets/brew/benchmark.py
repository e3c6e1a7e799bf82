"""BREW benchmark layer: run every detector on a text, calibrate, score, judge the claims.

Pure numpy/pandas (no Dagster). Methods (``METHODS``):

- ``brew_soft_S{0,2,4,8}``: BREW, split-half votes, soft verification, shift range S
  (S = 4 is the main configuration; the others are the shift ablation);
- ``brew_hard_S4``: BREW with the hard (block-disagreement) verification;
- ``ecc_decode``: decoding-centric extractor, accept iff BCH bounded-distance decoding
  succeeds; ``ecc_nearest``: nearest-codeword decoding, accepts everything;
- ``ecc_thr_errors``: ecc_decode + accept only if <= e bits were corrected (score = -e);
  ``ecc_thr_margin``: nearest codeword + accept only if the mean block vote margin >= theta;
  both thresholds are swept (calibrated on human text at FPR 0.02);
- ``kgw``: zero-bit KGW z-test (its own texts); ``mpac``: MPAC-lite (its own texts).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from assets.brew import method as M
from assets.brew.bch import BCHCode
from assets.common.claims import Claim

SHIFT_RANGES = (0, 2, 4, 8)
MAIN_METHOD = "brew_soft_S4"
BREW_METHODS = tuple(f"brew_soft_S{s}" for s in SHIFT_RANGES) + ("brew_hard_S4",)
ECC_METHODS = ("ecc_decode", "ecc_nearest", "ecc_thr_errors", "ecc_thr_margin")
METHODS = BREW_METHODS + ECC_METHODS + ("kgw", "mpac")
SCHEME_METHODS = {"brew": BREW_METHODS + ECC_METHODS, "kgw": ("kgw",), "mpac": ("mpac",)}
MULTI_BIT = set(BREW_METHODS + ECC_METHODS + ("mpac",))
METHOD_LABELS = {
    "brew_soft_S0": "BREW soft, S=0", "brew_soft_S2": "BREW soft, S=2", "brew_soft_S4": "BREW soft, S=4",
    "brew_soft_S8": "BREW soft, S=8", "brew_hard_S4": "BREW hard, S=4",
    "ecc_decode": "ECC decode (BDD)", "ecc_nearest": "ECC nearest codeword",
    "ecc_thr_errors": "ECC + corrected-bits threshold", "ecc_thr_margin": "ECC + vote-margin threshold",
    "kgw": "KGW zero-bit z-test", "mpac": "MPAC-lite",
}


def analytic_error_threshold(code: BCHCode, alpha: float) -> int:
    """Largest e <= t whose false-decode rate 2^k V(n, e) / 2^n is <= alpha (-1 if none)."""
    ok = [e for e in range(code.t + 1) if code.false_decode_probability_within(e) <= alpha]
    return max(ok) if ok else -1


def detect_text(ids: np.ndarray, methods: tuple[str, ...], green: np.ndarray, code: BCHCode,
                config: M.BrewConfig, key: int, allocation: np.ndarray) -> list[dict[str, Any]]:
    """Every requested method on one text (ids (T+1,)). One dict per method: accepted (the
    method's own analytic rule), score (higher = more watermarked), message (-1 = none)."""
    scored = M.score_text(ids, green)
    out: list[dict[str, Any]] = []
    enough = int(scored.scoreable.sum()) >= config.min_tokens
    brew = [m for m in methods if m.startswith("brew_")]
    if brew:
        max_shift = max(int(m.rsplit("S", 1)[1]) for m in brew)
        shifts = np.arange(-max_shift, max_shift + 1)
        soft = M.brew_shift_statistics(scored, code, config, shifts) if enough else None
        for m in brew:
            S = int(m.rsplit("S", 1)[1])
            cfg = replace(config, verify_mode="hard" if "hard" in m else "soft", max_shift=S)
            decision = M.brew_decide(soft, code, cfg) if enough else M.not_watermarked("too few tokens")
            out.append({"method": m, "accepted": decision["accepted"], "score": decision["score"],
                        "message": decision["message"], "shift": decision["shift"]})
    if any(m.startswith("ecc_") for m in methods):
        ecc = M.ecc_extract(scored, code, config.block_length, key)
        e_max = analytic_error_threshold(code, config.alpha)
        rows = {
            "ecc_decode": (ecc["decoded"], float(ecc["decoded"]), ecc["message_bdd"]),
            "ecc_nearest": (True, 0.0, ecc["message_nearest"]),
            "ecc_thr_errors": (ecc["decoded"] and ecc["corrected"] <= e_max,
                               -float(ecc["corrected"]) if ecc["decoded"] else -float(code.n),
                               ecc["message_bdd"]),
            # no analytic margin rule exists: unthresholded here, calibrated downstream
            "ecc_thr_margin": (True, ecc["margin"], ecc["message_nearest"]),
        }
        for m in methods:
            if m in rows:
                accepted, score, message = rows[m]
                out.append({"method": m, "accepted": bool(accepted), "score": score, "message": int(message),
                            "shift": 0})
    if "kgw" in methods:
        k = M.kgw_detect(scored, config.gamma, config.alpha)
        out.append({"method": "kgw", "accepted": k["accepted"], "score": k["score"], "message": -1, "shift": 0})
    if "mpac" in methods:
        p = M.mpac_detect(ids, scored, allocation, code.k, config.gamma, config.alpha)
        out.append({"method": "mpac", "accepted": p["accepted"], "score": p["score"], "message": p["message"],
                    "shift": 0})
    return out


# ----------------------------------------------------------------------------- calibration
def threshold_at_fpr(null_scores: np.ndarray, target_fpr: float) -> float:
    """Smallest threshold thr with mean(null > thr) <= target_fpr (accept iff score > thr)."""
    scores = np.sort(np.asarray(null_scores, dtype=float))
    if scores.size == 0:
        return float("inf")
    index = int(np.ceil((1.0 - target_fpr) * scores.size)) - 1
    return float(scores[min(max(index, 0), scores.size - 1)])


def calibrate(detections: pd.DataFrame, target_fpr: float) -> pd.DataFrame:
    """Per method: threshold at empirical FPR target_fpr on human text (all seeds and keys),
    with the realized human FPR at that threshold and the number of human trials."""
    rows = []
    human = detections[detections["role"] == "human"]
    for method, group in human.groupby("method"):
        scores = group["score"].to_numpy(dtype=float)
        thr = threshold_at_fpr(scores, target_fpr)
        rows.append({"method": method, "threshold": thr, "target_fpr": target_fpr,
                     "human_fpr_at_threshold": float(np.mean(scores > thr)),
                     "human_fpr_analytic_rule": float(group["accepted"].mean()), "human_trials": len(group)})
    return pd.DataFrame(rows)


def bit_accuracy(message_hat: np.ndarray, message: np.ndarray, k: int) -> np.ndarray:
    """Fraction of the k message bits recovered (a missing message (-1) scores 0.5)."""
    message_hat = np.asarray(message_hat, dtype=np.int64)
    message = np.asarray(message, dtype=np.int64)
    wrong = np.bitwise_count((message_hat ^ message) & ((1 << k) - 1)).astype(float)
    return np.where(message_hat < 0, 0.5, 1.0 - wrong / k)


def add_calibrated(detections: pd.DataFrame, thresholds: pd.DataFrame) -> pd.DataFrame:
    """Columns accepted_cal (score > calibrated threshold), exact (analytic accept & right
    message) and exact_cal (calibrated accept & right message); zero-bit KGW needs no message."""
    thr = thresholds.set_index("method")["threshold"]
    out = detections.copy()
    out["accepted_cal"] = out["score"].to_numpy(dtype=float) > out["method"].map(thr).to_numpy(dtype=float)
    right = (out["message"] == out["message_true"]) | (out["method"] == "kgw")
    out["exact"] = out["accepted"] & right
    out["exact_cal"] = out["accepted_cal"] & right
    return out


def summary_rows(scored: pd.DataFrame, k: int) -> pd.DataFrame:
    """Tidy rows (seed, role, scheme, attack, method, metric, value) per seed: for positives
    tpr_exact, tpr_accept, tpr_exact_cal, bit_accuracy; for negatives fpr, fpr_cal."""
    rows = []
    for (seed, role, scheme, attack, method), g in scored.groupby(["seed", "role", "scheme", "attack", "method"]):
        base = {"seed": int(seed), "role": role, "scheme": scheme, "attack": attack, "method": method}
        if role == "positive":
            metrics = {"tpr_exact": g["exact"].mean(), "tpr_accept": g["accepted"].mean(),
                       "tpr_exact_cal": g["exact_cal"].mean(), "n": len(g)}
            if method in MULTI_BIT:
                metrics["bit_accuracy"] = bit_accuracy(g["message"], g["message_true"], k).mean()
        else:
            metrics = {"fpr": g["accepted"].mean(), "fpr_cal": g["accepted_cal"].mean(), "n": len(g)}
        rows += [{**base, "metric": name, "value": float(v)} for name, v in metrics.items()]
    return pd.DataFrame(rows)


def pooled(scored: pd.DataFrame, role: str, method: str, column: str, attack: str | None = None) -> tuple[float, int]:
    sel = scored[(scored["role"] == role) & (scored["method"] == method)]
    if attack is not None:
        sel = sel[sel["attack"] == attack]
    return (float(sel[column].mean()) if len(sel) else float("nan")), int(len(sel))


def clopper_pearson(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    from scipy import stats  # lazy: scipy.stats costs ~0.5 s at import

    if trials == 0:
        return 0.0, 1.0
    a = (1 - level) / 2
    low = stats.beta.ppf(a, successes, trials - successes + 1) if successes > 0 else 0.0
    high = stats.beta.ppf(1 - a, successes + 1, trials - successes) if successes < trials else 1.0
    return float(low), float(high)


def roc_points(scored: pd.DataFrame, method: str, attack: str) -> pd.DataFrame:
    """(fpr on human text, tpr_exact on `attack` positives) over every threshold."""
    human = scored[(scored["role"] == "human") & (scored["method"] == method)]["score"].to_numpy(float)
    pos = scored[(scored["role"] == "positive") & (scored["method"] == method) & (scored["attack"] == attack)]
    if human.size == 0 or len(pos) == 0:
        return pd.DataFrame(columns=["threshold", "fpr", "tpr"])
    right = ((pos["message"] == pos["message_true"]) | (method == "kgw")).to_numpy()
    pos_scores = pos["score"].to_numpy(float)
    finite = np.concatenate([human, pos_scores])
    thresholds = np.unique(finite[np.isfinite(finite)])
    thresholds = np.concatenate([[-np.inf], thresholds, [np.inf]])
    fpr = np.array([(human > t).mean() for t in thresholds])
    tpr = np.array([((pos_scores > t) & right).mean() for t in thresholds])
    return pd.DataFrame({"threshold": thresholds, "fpr": fpr, "tpr": tpr})


# ----------------------------------------------------------------------------- claims
TPR_BAR = 0.90          # BREW exact-message TPR under syn10
FPR_BAR = 0.03          # empirical human-text FPR (BREW, and the thresholded ECC variants)
ECC_FPR_BAR = 0.10      # decoding-centric extractor's human FPR
COLLAPSE_BAR = 0.5      # thresholded ECC TPR at most this


def evaluate_claims(scored: pd.DataFrame, code: BCHCode, min_texts: int, tpr_bar: float = TPR_BAR,
                    fpr_bar: float = FPR_BAR, ecc_fpr_bar: float = ECC_FPR_BAR,
                    collapse_bar: float = COLLAPSE_BAR) -> list[Claim]:
    """The four claims of the issue, from the scored detections (pooled over seeds/keys)."""
    claims: list[Claim] = []
    tpr, n_pos = pooled(scored, "positive", MAIN_METHOD, "exact", "syn10")
    fpr, n_human = pooled(scored, "human", MAIN_METHOD, "accepted")
    enough = n_pos >= min_texts and n_human >= min_texts
    claims.append(Claim(
        "brew_tpr_syn10",
        "Under 10% synonym substitution BREW accepts with the exact message at TPR >= 0.90 with "
        "empirical human-text FPR <= 0.03",
        "TPR 0.965 at FPR 0.02",
        f"TPR {tpr:.3f} (n={n_pos}) at FPR {fpr:.3f} (n={n_human} human trials)",
        bool(enough and tpr >= tpr_bar and fpr <= fpr_bar),
        detail="" if enough else f"fewer than {min_texts} watermarked or human texts at this profile"))

    ecc_fpr, n = pooled(scored, "human", "ecc_decode", "accepted")
    successes = int(round(ecc_fpr * n)) if n else 0
    low, high = clopper_pearson(successes, n)
    analytic = code.false_decode_probability()
    nearest_fpr, _ = pooled(scored, "human", "ecc_nearest", "accepted")
    claims.append(Claim(
        "ecc_high_fpr",
        "The decoding-centric extractor accepts human text at FPR >= 0.10, matching 2^k V(n,t)/2^n "
        "within the 95% binomial CI; nearest-codeword decoding accepts everything",
        f"FPR > 0.9 for prior ECC extractors; analytic {analytic:.3f} for {code.name}",
        f"BDD FPR {ecc_fpr:.3f} (95% CI [{low:.3f}, {high:.3f}], n={n}) vs analytic {analytic:.3f}; "
        f"nearest-codeword FPR {nearest_fpr:.3f}",
        bool(n >= min_texts and ecc_fpr >= ecc_fpr_bar and low <= analytic <= high and nearest_fpr == 1.0)))

    best = None
    for method in ("ecc_thr_errors", "ecc_thr_margin"):
        t_cal, _ = pooled(scored, "positive", method, "exact_cal", "syn10")
        f_cal, _ = pooled(scored, "human", method, "accepted_cal")
        if f_cal <= fpr_bar and (best is None or t_cal > best[1]):
            best = (method, t_cal, f_cal)
    claims.append(Claim(
        "ecc_threshold_collapse",
        "Thresholding the ECC extractor down to human FPR <= 0.03 drops its exact-message TPR under "
        "10% synonyms to <= 0.5 (best of the corrected-bits and vote-margin thresholds)",
        "TPR collapses to chance once a rejection threshold is applied",
        "no thresholded variant reached FPR <= 0.03" if best is None else
        f"best: {best[0]} TPR {best[1]:.3f} at FPR {best[2]:.3f}",
        bool(best is not None and best[1] <= collapse_bar and enough)))

    tprs = {s: pooled(scored, "positive", f"brew_soft_S{s}", "exact", "ins5")[0] for s in SHIFT_RANGES}
    rising = tprs[0] <= tprs[2] <= tprs[4] and tprs[4] > tprs[0]
    claims.append(Claim(
        "shift_helps_insertion",
        "BREW's TPR under 5% insertion rises as the window-shift range grows from S=0 to S=4",
        "steady TPR gains as the window-shift range increases",
        ", ".join(f"S={s}: {v:.3f}" for s, v in tprs.items()),
        bool(rising and enough)))
    return claims
