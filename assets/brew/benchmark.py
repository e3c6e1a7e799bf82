"""BREW benchmark layer: run every detector on a text, calibrate, score, judge the claims.

Pure numpy/pandas (no Dagster). Methods (``METHODS``):

- ``brew_soft_S{0,2,4,8}``: BREW with per-block re-synchronisation (method.py, sync
  "per_block"), split-half votes, soft verification, per-block shift range S (S = 4 is the
  main configuration; the others are the shift ablation);
- ``brew_hard_S4``: the same with the hard (block-disagreement) verification;
- ``brew_global_S{0,2,4,8}``: the earlier reading, one global shift in [-S, S] for the whole
  text with Bonferroni over the 2S + 1 shifts (kept to compare against; S = 0 is the fixed
  grid jL, without re-synchronisation);
- ``ecc_decode``: decoding-centric extractor, accept iff BCH bounded-distance decoding
  succeeds; ``ecc_nearest``: nearest-codeword decoding, accepts everything;
- ``ecc_thr_errors``: ecc_decode + accept only if <= e bits were corrected (score = -e);
  ``ecc_thr_margin``: nearest codeword + accept only if the mean block vote margin >= theta;
  both thresholds are swept (calibrated at FPR 0.02 on the calibration half of the human
  windows, role "human_calibration"; every FPR is scored on the other half, role "human");
- ``kgw``: zero-bit KGW z-test (its own texts); ``mpac``: MPAC-lite (its own texts).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from assets.brew import method as M
from assets.brew.bch import BCHCode
from assets.common.claims import Claim, comparative_claim, observation
from resources.versioning import bytes_md5

SHIFT_RANGES = (0, 2, 4, 8)
MAIN_METHOD = "brew_soft_S4"
GLOBAL_METHODS = tuple(f"brew_global_S{s}" for s in SHIFT_RANGES)
BREW_METHODS = tuple(f"brew_soft_S{s}" for s in SHIFT_RANGES) + ("brew_hard_S4",) + GLOBAL_METHODS
ECC_METHODS = ("ecc_decode", "ecc_nearest", "ecc_thr_errors", "ecc_thr_margin")
METHODS = BREW_METHODS + ECC_METHODS + ("kgw", "mpac")
SCHEME_METHODS = {"brew": BREW_METHODS + ECC_METHODS, "kgw": ("kgw",), "mpac": ("mpac",)}
MULTI_BIT = set(BREW_METHODS + ECC_METHODS + ("mpac",))
HUMAN_ROLES = ("human", "human_calibration")   # scored half, calibration half
METHOD_LABELS = {
    "brew_soft_S0": "BREW soft, S=0", "brew_soft_S2": "BREW soft, S=2", "brew_soft_S4": "BREW soft, S=4",
    "brew_soft_S8": "BREW soft, S=8", "brew_hard_S4": "BREW hard, S=4",
    **{f"brew_global_S{s}": f"BREW global shift, S={s}" for s in SHIFT_RANGES},
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
    per_block = [m for m in methods if m.startswith("brew_") and not m.startswith("brew_global_")]
    for S in sorted({int(m.rsplit("S", 1)[1]) for m in per_block}):
        stats = M.brew_resync_statistics(scored, code, config, S) if enough else None
        for m in [m for m in per_block if int(m.rsplit("S", 1)[1]) == S]:
            cfg = replace(config, verify_mode="hard" if "hard" in m else "soft", max_shift=S, sync="per_block")
            decision = M.brew_resync_decide(stats, code, cfg) if enough else M.not_watermarked("too few tokens")
            out.append({"method": m, "accepted": decision["accepted"], "score": decision["score"],
                        "message": decision["message"], "shift": decision["shift"]})
    shifted = [m for m in methods if m.startswith("brew_global_")]
    if shifted:
        max_shift = max(int(m.rsplit("S", 1)[1]) for m in shifted)
        shifts = np.arange(-max_shift, max_shift + 1)
        glob = replace(config, sync="global")
        stats = M.brew_shift_statistics(scored, code, glob, shifts) if enough else None
        for m in shifted:
            cfg = replace(glob, verify_mode="soft", max_shift=int(m.rsplit("S", 1)[1]))
            decision = M.brew_decide(stats, code, cfg) if enough else M.not_watermarked("too few tokens")
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


def calibration_ids_md5(text_ids) -> str:
    """Fingerprint of a set of human window ids (sorted, distinct)."""
    return bytes_md5("\n".join(sorted(set(map(str, text_ids)))).encode())


def calibrate(detections: pd.DataFrame, target_fpr: float) -> pd.DataFrame:
    """Per method: threshold at empirical FPR target_fpr on the *calibration* half of the human
    windows (role "human_calibration", all seeds and keys), with its FPR there, the FPR the
    threshold gives on the scored half (role "human"), and which windows it was fitted on."""
    rows = []
    fit = detections[detections["role"] == "human_calibration"]
    scored = detections[detections["role"] == "human"]
    for method, group in fit.groupby("method"):
        scores = group["score"].to_numpy(dtype=float)
        thr = threshold_at_fpr(scores, target_fpr)
        held = scored[scored["method"] == method]
        rows.append({"method": method, "threshold": thr, "target_fpr": target_fpr,
                     "human_fpr_at_threshold": float(np.mean(scores > thr)),
                     "human_fpr_analytic_rule": float(group["accepted"].mean()), "human_trials": len(group),
                     "calibration_windows": int(group["text_id"].nunique()),
                     "calibration_ids_md5": calibration_ids_md5(group["text_id"]),
                     "evaluation_fpr_at_threshold": float(np.mean(held["score"].to_numpy(dtype=float) > thr))
                     if len(held) else float("nan"),
                     "evaluation_trials": len(held)})
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
    tpr_exact, tpr_accept, tpr_exact_cal, bit_accuracy; for negatives fpr, fpr_cal (the
    calibration half "human_calibration" is where the thresholds were fitted: its fpr_cal is
    in-sample, the scored FPRs are role "human")."""
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
SHIFT_TPR_BAR = 0.5     # BREW's TPR under ins5 at S = 4 at least this
SHIFT_ATTACK = "ins5"
BURST_ATTACK = "ins5_burst"              # the same 5% insertions in a few contiguous runs
MAIN_ATTACK = "syn10"
STRICT_SYNONYM_ATTACK = "syn10_cos75"   # the same attack with the spec's MiniLM cosine 0.75


def per_seed(scored: pd.DataFrame, method: str, attack: str, column: str = "exact") -> pd.Series:
    """Mean of `column` per seed over the positives of (method, attack), indexed by seed."""
    sel = scored[(scored["role"] == "positive") & (scored["method"] == method) & (scored["attack"] == attack)]
    return sel.groupby("seed")[column].mean()


def _paired(scored: pd.DataFrame, treatment: str, control: str,
            attack: str) -> tuple[list[float], list[float], list[int]]:
    a, b = per_seed(scored, treatment, attack), per_seed(scored, control, attack)
    seeds = sorted(set(a.index) & set(b.index))
    return [float(a[s]) for s in seeds], [float(b[s]) for s in seeds], [int(s) for s in seeds]


def evaluate_claims(scored: pd.DataFrame, code: BCHCode, min_texts: int, seeds: str = "",
                    tpr_bar: float = TPR_BAR, fpr_bar: float = FPR_BAR, ecc_fpr_bar: float = ECC_FPR_BAR,
                    collapse_bar: float = COLLAPSE_BAR, shift_bar: float = SHIFT_TPR_BAR) -> list[Claim]:
    """The four claims of the spec's pass criterion and the report-only observations, from the
    scored detections (pooled over seeds and keys; human FPRs on the scored half only)."""
    claims: list[Claim] = []
    tpr, n_pos = pooled(scored, "positive", MAIN_METHOD, "exact", MAIN_ATTACK)
    fpr, n_human = pooled(scored, "human", MAIN_METHOD, "accepted")
    enough = n_pos >= min_texts and n_human >= min_texts
    claims.append(Claim(
        "brew_tpr_syn10",
        "Under 10% synonym substitution BREW accepts with the exact message at TPR >= 0.90 with "
        "empirical human-text FPR <= 0.03",
        "TPR 0.965 at FPR 0.02",
        f"TPR {tpr:.3f} (n={n_pos}) at FPR {fpr:.3f} (n={n_human} human trials, scored half)",
        bool(enough and tpr >= tpr_bar and fpr <= fpr_bar), seeds=seeds,
        detail="" if enough else f"fewer than {min_texts} watermarked or human texts at this profile"))

    ecc_fpr, n = pooled(scored, "human", "ecc_decode", "accepted")
    successes = int(round(ecc_fpr * n)) if n else 0
    low, high = clopper_pearson(successes, n)
    analytic = code.false_decode_probability()
    claims.append(Claim(
        "ecc_high_fpr",
        "The decoding-centric (bounded-distance) extractor accepts human text at FPR >= 0.10, "
        "matching 2^k V(n,t)/2^n within the 95% binomial CI",
        f"FPR > 0.9 for prior ECC extractors; analytic {analytic:.3f} for {code.name}",
        f"BDD FPR {ecc_fpr:.3f} (95% CI [{low:.3f}, {high:.3f}], n={n}) vs analytic {analytic:.3f}",
        bool(n >= min_texts and ecc_fpr >= ecc_fpr_bar and low <= analytic <= high), seeds=seeds,
        detail="The paper's 'FPR > 0.9' is a property of the nearest-codeword (maximum-likelihood) "
               "extractor, not a measurement: it returns a codeword for every input, so it accepts "
               "everything (FPR 1; tests/brew/test_method.py checks it). The measured part is the "
               "bounded-distance decoder's FPR against the analytic rate."))

    best = None
    for method in ("ecc_thr_errors", "ecc_thr_margin"):
        t_cal, _ = pooled(scored, "positive", method, "exact_cal", MAIN_ATTACK)
        f_cal, _ = pooled(scored, "human", method, "accepted_cal")
        if f_cal <= fpr_bar and (best is None or t_cal > best[1]):
            best = (method, t_cal, f_cal)
    claims.append(Claim(
        "ecc_threshold_collapse",
        "Thresholding the ECC extractor down to human FPR <= 0.03 drops its exact-message TPR under "
        "10% synonyms to <= 0.5 (best of the corrected-bits and vote-margin thresholds; thresholds "
        "fitted on the calibration half of the human windows, FPR scored on the other half)",
        "TPR collapses to chance once a rejection threshold is applied",
        "no thresholded variant reached FPR <= 0.03 on the scored half" if best is None else
        f"best: {best[0]} TPR {best[1]:.3f} at FPR {best[2]:.3f} (scored half)",
        bool(best is not None and best[1] <= collapse_bar and enough), seeds=seeds))

    treatment, control, seed_list = _paired(scored, "brew_soft_S4", "brew_soft_S0", SHIFT_ATTACK)
    tprs = {s: pooled(scored, "positive", f"brew_soft_S{s}", "exact", SHIFT_ATTACK)[0] for s in SHIFT_RANGES}
    if len(seed_list) >= 2:
        shift = comparative_claim(
            "shift_helps_insertion",
            f"BREW's TPR under 5% insertion rises from S=0 to S=4 (paired CI over seeds excludes 0) "
            f"and reaches >= {shift_bar:g} at S=4",
            "steady TPR gains as the window-shift range increases",
            treatment, control, expect="greater", margin=0.0, seeds=seed_list, names=("S=4", "S=0"))
        shift.holds = bool(shift.holds and tprs[4] >= shift_bar and enough)
        shift.measured_value = (", ".join(f"S={s}: {v:.3f}" for s, v in tprs.items()) + "; " + shift.measured_value)
        shift.detail = (shift.detail + f" Also needs TPR(S=4) >= {shift_bar:g}.").strip()
    else:
        shift = Claim("shift_helps_insertion", "BREW's TPR under 5% insertion rises from S=0 to S=4",
                      "steady TPR gains as the window-shift range increases",
                      ", ".join(f"S={s}: {v:.3f}" for s, v in tprs.items()), False, seeds=seeds,
                      detail="fewer than two seeds: no paired CI")
    claims.append(shift)
    claims += observations(scored, seeds, tpr_bar, fpr_bar)
    return claims


OBSERVATIONS = ("resync_vs_global_insertion", "resync_vs_fixed_grid_insertion", "shift_helps_burst_insertion",
                "syn10_at_cosine_075")


def observations(scored: pd.DataFrame, seeds: str, tpr_bar: float, fpr_bar: float) -> list[Claim]:
    """Report-only rows: per-block re-synchronisation vs one global shift under ins5, and the
    syn10 attack with the spec's MiniLM cosine 0.75 next to the 0.65 the claims use."""
    rows = []
    pairs = (
        ("resync_vs_global_insertion", "brew_soft_S4", "brew_global_S4", SHIFT_ATTACK,
         "Under 5% insertion, per-block re-synchronisation (S=4) beats one global shift (S=4)",
         "window shifting survives insertion/deletion [S]", ("per-block S=4", "global S=4")),
        ("resync_vs_fixed_grid_insertion", "brew_soft_S0", "brew_global_S0", SHIFT_ATTACK,
         "Under 5% insertion, the anchored windows alone (per-block S=0) beat the fixed grid jL (global S=0): "
         "where the re-synchronisation under evenly spread insertions comes from",
         "window shifting survives insertion/deletion [S]", ("anchored S=0", "fixed grid")),
        ("shift_helps_burst_insertion", "brew_soft_S4", "brew_soft_S0", BURST_ATTACK,
         "With the same 5% insertions in 5 contiguous runs, per-block window shifting (S=4) beats the anchored "
         "windows alone (S=0)", "steady TPR gains as the window-shift range increases", ("S=4", "S=0")),
    )
    for claim_id, treated, baseline, attack, text, paper, names in pairs:
        treatment, control, seed_list = _paired(scored, treated, baseline, attack)
        if len(seed_list) >= 2:
            c = comparative_claim(claim_id, text, paper, treatment, control, seeds=seed_list, names=names)
            rows.append(observation(claim_id, text, paper, c.measured_value, holds=c.holds, seeds=c.seeds,
                                    detail=c.detail))
        else:
            rows.append(observation(claim_id, text, paper, f"{attack} not run at this profile or fewer than two seeds",
                                    seeds=seeds))
    strict, n_strict = pooled(scored, "positive", MAIN_METHOD, "exact", STRICT_SYNONYM_ATTACK)
    loose, _ = pooled(scored, "positive", MAIN_METHOD, "exact", MAIN_ATTACK)
    fpr, _ = pooled(scored, "human", MAIN_METHOD, "accepted")
    rows.append(observation(
        "syn10_at_cosine_075",
        "syn10 with the spec's synonym cut (MiniLM cosine >= 0.75) instead of the 0.65 the claims use: "
        "BREW TPR >= 0.90 at FPR <= 0.03",
        "TPR 0.965 at FPR 0.02",
        f"cosine 0.75: TPR {strict:.3f} (n={n_strict}); cosine 0.65: TPR {loose:.3f}; FPR {fpr:.3f}"
        if n_strict else "attack syn10_cos75 not run at this profile",
        holds=bool(n_strict and strict >= tpr_bar and fpr <= fpr_bar) if n_strict else None, seeds=seeds))
    return rows
