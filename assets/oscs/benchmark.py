"""OSCS benchmark layer: run every method on a stream, score the outcome, judge the claims.

Pure numpy/pandas (no Dagster). The Dagster assets in definitions.py call these functions;
tests call them directly.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from assets.common.claims import Claim
from assets.oscs import method as M
from assets.oscs.streams import SCENARIOS, STATIONARY_SCENARIOS, scenario_target_pi1

METHODS = ("oscs", "oscs_newton", "fixed_threshold", "batch_lfdr", "oracle", "conformal_lord",
           "no_recursion")
METHOD_LABELS = {
    "oscs": "OSCS (recursive KDE)",
    "oscs_newton": "OSCS (Newton PR)",
    "fixed_threshold": "B1 fixed 95% threshold",
    "batch_lfdr": "B2 offline batch lfdr",
    "oracle": "B3 oracle lfdr rule",
    "conformal_lord": "B4 conformal + LORD++",
    "no_recursion": "B5 no recursion (π0=1)",
}


def label_aware_posterior(scores: np.ndarray, benign_pool: np.ndarray, malicious_pool: np.ndarray,
                          pi1: float) -> np.ndarray:
    """Oracle malicious posterior for text streams (B3): m(s) = π1 f1(s) / f(s).

    f0, f1 are Gaussian KDEs (Silverman) of the *labelled* benign and malicious pools the
    stream is sampled from, and π1 is the scenario's true malicious fraction — information
    no deployable method has. Shapes: scores (T,) → (T,).
    """
    scores = np.asarray(scores, dtype=float)
    f0 = M.gaussian_kde(scores, benign_pool, M.silverman_bandwidth(benign_pool))
    f1 = M.gaussian_kde(scores, malicious_pool, M.silverman_bandwidth(malicious_pool))
    mixture = (1 - pi1) * f0 + pi1 * f1
    return np.where(mixture > 0, pi1 * f1 / np.maximum(mixture, 1e-300), 1.0)


def decide_all(scores: np.ndarray, calib: np.ndarray, alpha: float, m_true: np.ndarray,
               config: M.OSCSConfig) -> dict[str, dict[str, np.ndarray]]:
    """Every method's decisions on one stream. OSCS variants also return m̂ and π̂0 traces.

    scores: (T,) detector scores in arrival order; calib: (m,) benign calibration scores;
    m_true: (T,) the oracle's malicious posterior. Returns {method: {"decision": (T,) int8, ...}}.
    """
    cfg = replace(config, alpha=alpha)
    out: dict[str, dict[str, np.ndarray]] = {}
    for name, estimator in (("oscs", "kde"), ("oscs_newton", "newton")):
        trace = M.run_oscs(scores, calib, replace(cfg, estimator=estimator))
        out[name] = {"decision": trace["decision"], "m_hat": trace["m_hat"], "pi0_hat": trace["pi0_hat"]}
    out["fixed_threshold"] = {"decision": M.fixed_threshold(scores, calib, q=0.95)}
    out["batch_lfdr"] = {"decision": M.batch_lfdr(scores, calib, alpha, lam=cfg.lam)}
    out["oracle"] = {"decision": M.oracle_rule(m_true, alpha)}
    out["conformal_lord"] = {"decision": M.conformal_lord(scores, calib, alpha)}
    out["no_recursion"] = {"decision": M.no_recursion(scores, calib, alpha, burn_in=cfg.burn_in,
                                                      lam=cfg.lam)}
    return out


def outcome_metrics(decision: np.ndarray, label: np.ndarray, burn_in: int,
                    short_horizon: int) -> dict[str, float]:
    """Realized error rates of one decision sequence (all fractions in [0, 1]).

    far_selected: malicious among accepted (the paper's FAR, an FDR of the selected set);
    far_malicious: accepted among malicious (the biometric reading); tar: benign accepted;
    *_post_burnin: the same over t > burn_in; far_selected_short: over the first
    short_horizon items (the "T = 500" end of the vanishing-excess claim).
    """
    decision = np.asarray(decision)
    label = np.asarray(label)
    post = slice(burn_in, None)
    short = slice(0, short_horizon)
    return {
        "far_selected": M.far_selected(decision, label),
        "far_malicious": M.far_malicious(decision, label),
        "tar": M.tar(decision, label),
        "accept_rate": float(decision.mean()) if decision.size else 0.0,
        "far_selected_post_burnin": M.far_selected(decision[post], label[post]),
        "tar_post_burnin": M.tar(decision[post], label[post]),
        "far_selected_short": M.far_selected(decision[short], label[short]),
        "n_accepted": float(decision.sum()),
    }


def gaussian_suite(mus: list[float], pi1: float, T: int, m: int, seeds: list[int],
                   alphas: list[float], config: M.OSCSConfig) -> pd.DataFrame:
    """The parametric suite: f0 = N(0,1), f1 = N(μ,1); the oracle uses the closed-form m(s).

    Returns tidy rows (mu, seed, alpha, method, metric, value).
    """
    rows: list[dict[str, Any]] = []
    for mu in mus:
        for seed in seeds:
            scores, labels, calib = M.gaussian_stream(mu, pi1, T, m, seed)
            m_true = M.gaussian_true_posterior(scores, mu, pi1)
            for alpha in alphas:
                decisions = decide_all(scores, calib, alpha, m_true, config)
                for method, trace in decisions.items():
                    metrics = outcome_metrics(trace["decision"], labels, config.burn_in, T)
                    if "pi0_hat" in trace:
                        metrics["pi0_hat_final"] = float(trace["pi0_hat"][-1])
                    rows += [{"mu": float(mu), "seed": int(seed), "alpha": float(alpha),
                              "method": method, "metric": k, "value": float(v)}
                             for k, v in metrics.items()]
    return pd.DataFrame(rows)


def separation_table(scores: pd.DataFrame) -> pd.DataFrame:
    """How well each detector separates each attack from benign stream sentences.

    AUC = P(score_malicious > score_benign) (Mann–Whitney, ties count ½): 0.5 means the
    detector cannot tell them apart, < 0.5 means the attack looks *more* benign than benign.
    scores: rows (detector, role, attack, score). Returns (detector, attack, auc, median).
    """
    rows = []
    for detector, own in scores.groupby("detector"):
        benign = np.sort(own[own["role"] == "stream"]["score"].to_numpy())
        for attack, g in own[own["role"] == "attack"].groupby("attack"):
            mal = g["score"].to_numpy()
            below = np.searchsorted(benign, mal, side="left")
            ties = np.searchsorted(benign, mal, side="right") - below
            auc = float((below + 0.5 * ties).sum() / (benign.size * mal.size))
            rows.append({"detector": detector, "attack": attack, "auc": auc,
                         "median_malicious": float(np.median(mal)), "median_benign": float(np.median(benign))})
    return pd.DataFrame(rows)


def text_oracle_posterior(scores: pd.DataFrame, detector: str, scenario: str, stream_scores: np.ndarray,
                      T: int) -> np.ndarray:
    """B3 for text: labelled pool densities of this scenario's attacks and its true π1.

    scores: detector_scores rows (detector, role, attack, score); stream_scores (T,).
    """
    spec = SCENARIOS[scenario]
    attacks = spec.get("attacks") or (*spec["attacks_first"], *spec["attacks_second"])
    own = scores[scores["detector"] == detector]
    benign_pool = own[own["role"] == "stream"]["score"].to_numpy()
    malicious = own[(own["role"] == "attack") & own["attack"].isin(attacks)]["score"].to_numpy()
    return label_aware_posterior(stream_scores, benign_pool, malicious,
                                           scenario_target_pi1(scenario, T))


def stream_metrics(decisions: pd.DataFrame, burn_in: int, short_horizon: int) -> pd.DataFrame:
    """Tidy rows (detector, scenario, seed, alpha, method, metric, value) per stream run."""
    rows = []
    for (detector, scenario, seed, alpha), run in decisions.groupby(["detector", "scenario", "seed", "alpha"]):
        label = run["label"].to_numpy()
        for method in METHODS:
            metrics = outcome_metrics(run[method].to_numpy(), label, burn_in, short_horizon)
            if f"{method}_pi0_hat" in run:
                metrics["pi0_hat_final"] = float(run[f"{method}_pi0_hat"].iat[-1])
                metrics["pi0_true"] = float(1 - label.mean())
            rows += [{"detector": detector, "scenario": scenario, "seed": int(seed), "alpha": float(alpha),
                      "method": method, "metric": k, "value": float(v)} for k, v in metrics.items()]
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- claims
def _mean_table(results: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean over seeds of one metric, per (detector, scenario, alpha, method)."""
    sel = results[results["metric"] == metric]
    return sel.groupby(["detector", "scenario", "alpha", "method"], as_index=False)["value"].mean()


def evaluate_claims(results: pd.DataFrame, gaussian: pd.DataFrame, tolerance: float = 0.01,
                    b1_excess: float = 0.05, power_ratio: float = 0.8) -> list[Claim]:
    """The four claims of the issue / spec's pass criterion, from measured rows.

    results: tidy rows (detector, scenario, seed, alpha, method, metric, value) of the text
    streams; gaussian: rows of `gaussian_suite`.
    """
    claims: list[Claim] = []
    far = _mean_table(results, "far_selected")
    stationary = far[far["scenario"].isin(STATIONARY_SCENARIOS)]

    oscs = stationary[stationary["method"] == "oscs"].assign(excess=lambda d: d["value"] - d["alpha"])
    worst = oscs.loc[oscs["excess"].idxmax()] if len(oscs) else None
    claims.append(Claim(
        "far_control",
        "OSCS: mean realized FAR (malicious among accepted) ≤ α + 0.01 in every stationary "
        "scenario, every α, every detector",
        f"FAR ≤ α + {tolerance:g} (controlled)",
        "no stationary runs" if worst is None else
        f"worst mean FAR − α = {worst['excess']:+.4f} ({worst['detector']}, {worst['scenario']}, α={worst['alpha']:g})",
        bool(worst is not None and (oscs["excess"] <= tolerance).all()),
        detail=f"{int((oscs['excess'] <= tolerance).sum())}/{len(oscs)} cells within tolerance"))

    long_far = oscs.set_index(["detector", "scenario", "alpha"])["value"]
    short = _mean_table(results, "far_selected_short")
    short = short[(short["method"] == "oscs") & short["scenario"].isin(STATIONARY_SCENARIOS)]
    short_far = short.set_index(["detector", "scenario", "alpha"])["value"]
    alphas = oscs.set_index(["detector", "scenario", "alpha"]).index.get_level_values("alpha")
    excess_long = float((long_far - alphas).mean()) if len(long_far) else float("nan")
    excess_short = float((short_far.reindex(long_far.index) - alphas).mean()) if len(long_far) else float("nan")
    claims.append(Claim(
        "vanishing_excess",
        "OSCS's FAR excess over α shrinks as the stream grows (full stream vs its short prefix)",
        "excess(T) ≤ excess(T_short) (vanishing excess term)",
        f"mean FAR − α: {excess_short:+.4f} at the short horizon → {excess_long:+.4f} at the full length",
        bool(np.isfinite(excess_long) and excess_long <= excess_short)))

    b1 = far[(far["method"] == "fixed_threshold")].assign(excess=lambda d: d["value"] - d["alpha"])
    b1_worst = b1.loc[b1["excess"].idxmax()] if len(b1) else None
    claims.append(Claim(
        "fixed_threshold_fails",
        "The fixed 95%-benign-quantile threshold (B1) exceeds α + 0.05 in at least one scenario",
        f"B1 FAR > α + {b1_excess:g} somewhere",
        "no runs" if b1_worst is None else
        f"B1 worst mean FAR − α = {b1_worst['excess']:+.4f} "
        f"({b1_worst['detector']}, {b1_worst['scenario']}, α={b1_worst['alpha']:g})",
        bool(b1_worst is not None and b1_worst["excess"] > b1_excess)))

    tars = gaussian[gaussian["metric"] == "tar"].groupby(["mu", "alpha", "method"])["value"].mean()
    ratios = []
    for (mu, alpha), group in tars.groupby(level=["mu", "alpha"]):
        o = group.xs("oracle", level="method").iloc[0]
        s = group.xs("oscs", level="method").iloc[0]
        ratios.append((mu, alpha, s / o if o > 0 else float("nan"), s, o))
    worst_ratio = min(ratios, key=lambda r: r[2]) if ratios else None
    claims.append(Claim(
        "power_vs_oracle",
        "OSCS benign acceptance (TAR) ≥ 0.8 × the oracle rule's in the Gaussian suite",
        f"TAR(OSCS) ≥ {power_ratio:g} × TAR(oracle)",
        "no runs" if worst_ratio is None else
        f"worst ratio {worst_ratio[2]:.3f} "
        f"(μ={worst_ratio[0]:g}, α={worst_ratio[1]:g}: {worst_ratio[3]:.3f} vs {worst_ratio[4]:.3f})",
        bool(worst_ratio is not None and all(r[2] >= power_ratio for r in ratios))))
    return claims
