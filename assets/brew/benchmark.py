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
from assets.common.claims import (
    Claim,
    PairedCI,
    Premise,
    Verdict,
    all_of,
    comparative_claim,
    judged,
    mean_ci,
    not_evaluated,
    observation,
    paired_ci,
    proportion_ci,
    seeds_label,
    verdict,
    verdict_of,
)
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
TPR_BAR = 0.90          # BREW exact-message TPR under syn10 (spec)
FPR_BAR = 0.03          # empirical human-text FPR (BREW, and the thresholded ECC variants) (spec)
ECC_FPR_BAR = 0.10      # decoding-centric extractor's human FPR (spec)
COLLAPSE_BAR = 0.5      # thresholded ECC TPR at most this (spec)
SHIFT_TPR_BAR = 0.5     # BREW's TPR under ins5 at S = 4 at least this (the claim's usefulness bar, fixed before)
LEVEL = 0.90            # every interval: two-sided 90 % (Clopper–Pearson over texts, t over seeds)
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


def _rate(scored: pd.DataFrame, role: str, method: str, column: str, attack: str | None = None) -> PairedCI | None:
    """Clopper–Pearson interval of a pooled rate over texts (None when there are none)."""
    value, n = pooled(scored, role, method, column, attack)
    return proportion_ci(int(round(value * n)), n, LEVEL) if n else None


def _nan_verdict(premises=()) -> Verdict:
    return verdict(np.nan, np.nan, np.nan, premises=premises)


def _enough(n_pos: int, n_human: int, min_texts: int) -> Premise:
    return Premise(f"at least {min_texts} watermarked ({MAIN_ATTACK}) and {min_texts} scored human texts",
                   f"{n_pos} and {n_human}", n_pos >= min_texts and n_human >= min_texts)


def evaluate_claims(scored: pd.DataFrame, code: BCHCode, min_texts: int, seeds: str = "",
                    tpr_bar: float = TPR_BAR, fpr_bar: float = FPR_BAR, ecc_fpr_bar: float = ECC_FPR_BAR,
                    collapse_bar: float = COLLAPSE_BAR, shift_bar: float = SHIFT_TPR_BAR) -> list[Claim]:
    """The four claims of the spec's pass criterion and the report-only observations, from the
    scored detections (pooled over seeds and keys; human FPRs on the scored half only). Rates are
    judged by Clopper–Pearson intervals over texts, the shift gain by a paired t CI over seeds."""
    claims: list[Claim] = []
    tpr, n_pos = pooled(scored, "positive", MAIN_METHOD, "exact", MAIN_ATTACK)
    fpr, n_human = pooled(scored, "human", MAIN_METHOD, "accepted")
    enough = _enough(n_pos, n_human, min_texts)
    tpr_ci, fpr_ci = _rate(scored, "positive", MAIN_METHOD, "exact", MAIN_ATTACK), _rate(scored, "human",
                                                                                         MAIN_METHOD, "accepted")
    text = ("Under 10% synonym substitution BREW accepts with the exact message at TPR >= 0.90 with "
            "empirical human-text FPR <= 0.03")
    if tpr_ci is None or fpr_ci is None:
        claims.append(not_evaluated("brew_tpr_syn10", text, "TPR 0.965 at FPR 0.02",
                                    f"{MAIN_ATTACK} positives or human texts absent", seeds=seeds))
    else:
        j, line = all_of([(f"TPR ≥ {tpr_bar:g}", verdict_of(tpr_ci, rule="bound", margin=tpr_bar)),
                          (f"FPR ≤ {fpr_bar:g}", verdict_of(fpr_ci, rule="bound", margin=fpr_bar,
                                                            direction="less"))], [enough], holding="first")
        claims.append(judged("brew_tpr_syn10", text, "TPR 0.965 at FPR 0.02",
                             f"TPR {tpr_ci.text()}; FPR {fpr_ci.text()} (human trials, scored half)", j,
                             detail=line, seeds=seeds))

    ecc = _rate(scored, "human", "ecc_decode", "accepted")
    analytic = code.false_decode_probability()
    text = "The decoding-centric (bounded-distance) extractor accepts human text at FPR >= 0.10"
    paper = f"FPR > 0.9 for prior ECC extractors; analytic {analytic:.3f} for {code.name}"
    why = ("The paper's 'FPR > 0.9' is a property of the nearest-codeword (maximum-likelihood) "
           "extractor, not a measurement: it returns a codeword for every input, so it accepts "
           "everything (FPR 1; tests/brew/test_method.py checks it). The measured part is the "
           "bounded-distance decoder's FPR; its agreement with the analytic rate is the report-only row "
           "ecc_fpr_matches_analytic.")
    if ecc is None:
        claims.append(not_evaluated("ecc_high_fpr", text, paper, "no scored human texts for ecc_decode", seeds=seeds))
    else:
        premise = Premise(f"at least {min_texts} scored human texts", str(ecc.n), ecc.n >= min_texts)
        claims.append(judged("ecc_high_fpr", text, paper, f"BDD FPR {ecc.text()} vs analytic {analytic:.3f}",
                             verdict_of(ecc, rule="bound", margin=ecc_fpr_bar, premises=premise),
                             detail=why, seeds=seeds))

    text = ("Thresholding the ECC extractor down to human FPR <= 0.03 drops its exact-message TPR under "
            "10% synonyms to <= 0.5 (each of the corrected-bits and vote-margin thresholds that meets the FPR; "
            "thresholds fitted on the calibration half of the human windows, FPR scored on the other half)")
    parts, texts, premises, measured = [], [], [enough], []
    for method in ("ecc_thr_errors", "ecc_thr_margin"):
        t_ci = _rate(scored, "positive", method, "exact_cal", MAIN_ATTACK)
        f_ci = _rate(scored, "human", method, "accepted_cal")
        if t_ci is None or f_ci is None:
            texts.append(f"{method}: not run")
            continue
        texts.append(f"{method}: TPR {t_ci.text()} at FPR {f_ci.text()}")
        measured.append((f_ci.low, method, t_ci))
        if f_ci.low <= fpr_bar:          # the threshold meets the FPR target (not shown above it)
            parts.append((method, verdict_of(t_ci, rule="bound", margin=collapse_bar, direction="less")))
    if not parts:
        premises.append(Premise(f"a thresholded variant meets FPR ≤ {fpr_bar:g} on the scored half (Clopper–Pearson "
                                "lower bound ≤ the bar)", "; ".join(texts) or "none run", False))
        if measured:                      # the variant nearest the FPR, shown with the failed premise
            _, method, t_ci = min(measured, key=lambda m: m[0])
            j = verdict_of(t_ci, rule="bound", margin=collapse_bar, direction="less", premises=premises)
        else:
            j = _nan_verdict(premises)
        line = "no variant met the FPR"
    else:
        j, line = all_of(parts, premises, holding="first")
    claims.append(judged("ecc_threshold_collapse", text,
                         "TPR collapses to chance once a rejection threshold is applied", "; ".join(texts), j,
                         detail="holds when every variant meeting the FPR has TPR ≤ 0.5; refuted when one keeps "
                                "TPR above it. " + line, seeds=seeds))

    treatment, control, seed_list = _paired(scored, "brew_soft_S4", "brew_soft_S0", SHIFT_ATTACK)
    tprs = {s: pooled(scored, "positive", f"brew_soft_S{s}", "exact", SHIFT_ATTACK)[0] for s in SHIFT_RANGES}
    text = (f"BREW's TPR under 5% insertion rises from S=0 to S=4 (paired CI over seeds) and reaches >= {shift_bar:g} "
            "at S=4")
    paper = "steady TPR gains as the window-shift range increases"
    if len(seed_list) < 2:
        claims.append(not_evaluated("shift_helps_insertion", text, paper, f"{SHIFT_ATTACK} run on fewer than two seeds",
                                    premise="two or more seeds", seeds=seeds))
    else:
        gain = paired_ci(treatment, control, LEVEL)
        level = mean_ci(treatment, LEVEL, label="TPR(S=4)")
        j, line = all_of([("S=4 − S=0 > 0", verdict_of(gain, rule="effect", margin=0.0)),
                          (f"TPR(S=4) ≥ {shift_bar:g}", verdict_of(level, rule="bound", margin=shift_bar))],
                          [enough], holding="first")
        claims.append(judged("shift_helps_insertion", text, paper,
                             ", ".join(f"S={s}: {v:.3f}" for s, v in tprs.items()) + f"; S=4 − S=0 {gain.text()}; "
                             f"{level.text()}", j, detail=line, seeds=seeds_label(seed_list)))
    claims += observations(scored, seeds, tpr_bar, fpr_bar, code)
    return claims


OBSERVATIONS = ("ecc_fpr_matches_analytic", "resync_vs_global_insertion", "resync_vs_fixed_grid_insertion",
                "shift_helps_burst_insertion", "syn10_at_cosine_075")


def observations(scored: pd.DataFrame, seeds: str, tpr_bar: float, fpr_bar: float,
                 code: BCHCode | None = None) -> list[Claim]:
    """Report-only rows: the BDD FPR against the analytic rate (a CI that contains a value shows
    no agreement without an equivalence margin, and the spec gives none), per-block
    re-synchronisation vs one global shift under ins5, and the syn10 attack with the spec's MiniLM
    cosine 0.75 next to the 0.65 the claims use."""
    rows = []
    if code is not None:
        value, n = pooled(scored, "human", "ecc_decode", "accepted")
        low, high = clopper_pearson(int(round(value * n)), n) if n else (float("nan"), float("nan"))
        analytic = code.false_decode_probability()
        rows.append(observation(
            "ecc_fpr_matches_analytic", "The BDD extractor's human FPR agrees with 2^k V(n,t)/2^n (95% binomial CI)",
            f"analytic {analytic:.3f} for {code.name}",
            f"BDD FPR {value:.3f} (95% CI [{low:.3f}, {high:.3f}], n={n}); analytic "
            f"{'inside' if low <= analytic <= high else 'outside'} the interval" if n else "no scored human texts",
            seeds=seeds))
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
            rows.append(observation(claim_id, text, paper, c.measured_value, seeds=c.seeds,
                                    detail=f"paired CI by the one rule would read: {c.verdict}"))
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
        if n_strict else "attack syn10_cos75 not run at this profile", seeds=seeds))
    return rows
