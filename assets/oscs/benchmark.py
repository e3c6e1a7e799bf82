"""OSCS benchmark layer: run every method on a stream, score the outcome, judge the claims.

Pure numpy/pandas (no Dagster). The Dagster assets in definitions.py call these functions;
tests call them directly.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from assets.common.claims import (
    HOLDS,
    INCONCLUSIVE,
    REFUTED,
    Claim,
    Verdict,
    all_of,
    judged,
    mean_ci,
    not_evaluated,
    paired_ci,
    seeds_label,
    verdict_of,
)
from assets.oscs import method as M
from assets.oscs.streams import SCENARIOS, STATIONARY_SCENARIOS, scenario_target_pi1

METHODS = ("oscs", "oscs_newton", "oscs_two_sided", "fixed_threshold", "batch_lfdr", "oracle", "conformal_lord",
           "no_recursion")
# OSCS variants that report their m̂ and π̂0 traces: (method, estimator, π0 estimator)
OSCS_VARIANTS = (("oscs", "kde", "storey"), ("oscs_newton", "newton", "storey"),
                 ("oscs_two_sided", "kde", "storey_two_sided"))
METHOD_LABELS = {
    "oscs": "OSCS (recursive KDE)",
    "oscs_newton": "OSCS (Newton PR)",
    "oscs_two_sided": "OSCS, two-sided π̂0 (variant)",
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
               config: M.OSCSConfig, batch_posterior: np.ndarray | None = None) -> dict[str, dict[str, np.ndarray]]:
    """Every method's decisions on one stream. OSCS variants also return m̂ and π̂0 traces.

    scores: (T,) detector scores in arrival order; calib: (m,) benign calibration scores;
    m_true: (T,) the oracle's malicious posterior; batch_posterior: B2's m̂ of this stream
    (α-independent: pass it when deciding one stream at several α). Returns
    {method: {"decision": (T,) int8, ...}}.
    """
    cfg = replace(config, alpha=alpha)
    out: dict[str, dict[str, np.ndarray]] = {}
    for name, estimator, pi0_estimator in OSCS_VARIANTS:
        trace = M.run_oscs(scores, calib, replace(cfg, estimator=estimator, pi0_estimator=pi0_estimator))
        out[name] = {"decision": trace["decision"], "m_hat": trace["m_hat"], "pi0_hat": trace["pi0_hat"]}
    out["fixed_threshold"] = {"decision": M.fixed_threshold(scores, calib, q=0.95)}
    if batch_posterior is None:
        batch_posterior = M.batch_lfdr_posterior(scores, calib, lam=cfg.lam)
    out["batch_lfdr"] = {"decision": M.select_by_mean_posterior(batch_posterior, alpha)}
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
            posterior = M.batch_lfdr_posterior(scores, calib, lam=config.lam)
            for alpha in alphas:
                decisions = decide_all(scores, calib, alpha, m_true, config, posterior)
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


FAR_TOLERANCE = 0.01        # spec: mean realized FAR ≤ α + 0.01
B1_EXCESS = 0.05            # spec: B1's FAR > α + 0.05 in at least one scenario
POWER_RATIO = 0.8           # spec: OSCS TAR ≥ 0.8 × oracle TAR (Gaussian suite)
VANISHING_FRACTION = 0.5    # issue: the excess at full length ≤ half the short-horizon excess, or ≤ 0.01
CI_LEVEL = 0.90             # every interval: two-sided 90 % t over seeds (paired where two arms)
_ORDER = {REFUTED: 0, INCONCLUSIVE: 1, HOLDS: 2}


# all_of's options that keep this paper's claim rows byte-identical with the helper it replaced
# (issue 45): the first cell decides when all hold; the line counts the outcomes.
_EVERY_CELL = {"holding": "first", "part": None, "prefix": "",
               "suffix": "{holds} hold, {refuted} refuted, {inconclusive} inconclusive of {n} (every cell); "
                         "decided by {name} {ci}"}


def _any_cell(parts: list[tuple[str, Verdict]]) -> tuple[Verdict, str]:
    """A disjunction ("in at least one cell", "or"), the dual of `all_of`: holds when one cell holds
    (the first holding cell decides), refuted when every cell is refuted, inconclusive otherwise
    (the first inconclusive cell decides). Returns the deciding cell's verdict and the count line."""
    name, v = max(parts, key=lambda p: _ORDER[p[1].outcome])
    counts = {o: sum(p[1].outcome == o for p in parts) for o in _ORDER}
    line = (f"{counts[HOLDS]} hold, {counts[REFUTED]} refuted, {counts[INCONCLUSIVE]} inconclusive of {len(parts)}"
            f" (any one); decided by {name} {v.ci_text()}")
    return v, line


def _per_seed_excess(rows: pd.DataFrame) -> pd.DataFrame:
    """FAR − α per (cell, seed) from tidy rows with columns alpha, seed, value."""
    return rows.assign(excess=rows["value"] - rows["alpha"])


def _cell_bounds(rows: pd.DataFrame, keys: list[str], bound: float, direction: str) -> list[tuple[str, Verdict, float]]:
    """Per cell: the t CI over seeds of the mean FAR − α against `bound` (rule "bound")."""
    out = []
    for key, g in _per_seed_excess(rows).groupby(keys):
        key = key if isinstance(key, tuple) else (key,)
        ci = mean_ci(g.sort_values("seed")["excess"].to_numpy(float), CI_LEVEL, label="FAR − α")
        name = ", ".join(f"{k}={v:g}" if isinstance(v, float) else str(v) for k, v in zip(keys, key))
        out.append((name, verdict_of(ci, rule="bound", margin=bound, direction=direction), ci.mean))
    return out


def _no_runs(claim_id: str, claim: str, paper: str, seeds) -> Claim:
    return not_evaluated(claim_id, claim, paper, "no runs", premise="runs present", seeds=seeds_label(seeds))


def _far_claim(claim_id: str, claim: str, results: pd.DataFrame, method: str, seeds: list[int],
               detail_prefix: str = "") -> Claim:
    """Mean realized FAR ≤ α + 0.01 in every stationary (detector × scenario × α) cell: per cell
    the t CI over seeds of FAR − α against 0.01 (holds: upper ≤ 0.01; refuted: lower > 0.01)."""
    paper = f"FAR ≤ α + {FAR_TOLERANCE:g} (controlled)"
    rows = results[(results["metric"] == "far_selected") & (results["method"] == method)
                   & results["scenario"].isin(STATIONARY_SCENARIOS)]
    if rows.empty:
        return not_evaluated(claim_id, claim, paper, "no stationary runs", premise="runs present",
                             seeds=seeds_label(seeds))
    cells = _cell_bounds(rows, ["detector", "scenario", "alpha"], FAR_TOLERANCE, "less")
    j, line = all_of([(n, v) for n, v, _ in cells], **_EVERY_CELL)
    worst = max(cells, key=lambda c: c[2])
    return judged(claim_id, claim, paper,
                  f"worst mean FAR − α = {worst[2]:+.4f} ({worst[0]}) {worst[1].ci_text()}; deciding cell "
                  f"{j.ci_text()}", j, detail=f"{detail_prefix}per cell the {CI_LEVEL:.0%} t CI over seeds; {line}",
                  seeds=seeds_label(seeds))


def _vanishing_claim(results: pd.DataFrame, seeds: list[int]) -> Claim:
    """Excess at the full length ≤ VANISHING_FRACTION × the short-horizon excess (paired CI over
    seeds of long − fraction · short, cells averaged per seed, < 0), or the long excess ≤ 0.01
    (t CI over seeds): holds when either holds, refuted when both are refuted."""
    claim = ("OSCS's FAR excess over α vanishes as the stream grows: at the full length it is at most half the "
             "excess at the short horizon (or within 0.01 of α)")
    paper = f"excess(T) ≤ {VANISHING_FRACTION:g} × excess(T_short) or ≤ {FAR_TOLERANCE:g}"
    sel = results[(results["method"] == "oscs") & results["scenario"].isin(STATIONARY_SCENARIOS)]

    def per_seed(metric: str) -> pd.Series:
        rows = _per_seed_excess(sel[sel["metric"] == metric])
        return rows.groupby("seed")["excess"].mean()

    long, short = per_seed("far_selected"), per_seed("far_selected_short")
    common = sorted(set(long.index) & set(short.index))
    if not common:
        return _no_runs("vanishing_excess", claim, paper, seeds)
    lo, sh = long.loc[common].to_numpy(float), short.loc[common].to_numpy(float)
    halved = paired_ci(lo, VANISHING_FRACTION * sh, CI_LEVEL)
    within = mean_ci(lo, CI_LEVEL, label="excess(T)")
    j, line = _any_cell([(f"excess(T) − {VANISHING_FRACTION:g} × excess(T_short) < 0",
                          verdict_of(halved, rule="effect", margin=0.0, direction="less")),
                         (f"excess(T) ≤ {FAR_TOLERANCE:g}",
                          verdict_of(within, rule="bound", margin=FAR_TOLERANCE, direction="less"))])
    return judged("vanishing_excess", claim, paper,
                  f"mean FAR − α: {sh.mean():+.4f} at the short horizon → {lo.mean():+.4f} at the full length; "
                  f"long − {VANISHING_FRACTION:g} × short {halved.text()}; {within.text()}", j,
                  detail=f"cells averaged per seed; {line}", seeds=seeds_label(common))


def evaluate_claims(results: pd.DataFrame, gaussian: pd.DataFrame) -> list[Claim]:
    """The paper's claims, judged by the one verdict rule, from measured rows.

    results: tidy rows (detector, scenario, seed, alpha, method, metric, value) of the text
    streams; gaussian: rows of `gaussian_suite`. FAR claims judge each cell's t CI over seeds of
    FAR − α against α + 0.01 (the spec's tolerance) and combine cells ("every" / "at least one");
    the power claim uses a paired CI over seeds per cell.
    """
    claims: list[Claim] = []
    text_seeds = sorted(results["seed"].unique().tolist()) if len(results) else []
    gauss_seeds = sorted(gaussian["seed"].unique().tolist()) if len(gaussian) else []
    claims.append(_far_claim(
        "far_control", "OSCS: mean realized FAR (malicious among accepted) ≤ α + 0.01 in every stationary "
        "scenario, every α, every detector", results, "oscs", text_seeds))
    claims.append(_vanishing_claim(results, text_seeds))

    claim = "The fixed 95%-benign-quantile threshold (B1) exceeds α + 0.05 in at least one scenario"
    paper = f"B1 FAR > α + {B1_EXCESS:g} somewhere"
    b1 = results[(results["metric"] == "far_selected") & (results["method"] == "fixed_threshold")]
    if b1.empty:
        claims.append(_no_runs("fixed_threshold_fails", claim, paper, text_seeds))
    else:
        cells = _cell_bounds(b1, ["detector", "scenario", "alpha"], B1_EXCESS, "greater")
        j, line = _any_cell([(n, v) for n, v, _ in cells])
        worst = max(cells, key=lambda c: c[2])
        claims.append(judged("fixed_threshold_fails", claim, paper,
                             f"B1 worst mean FAR − α = {worst[2]:+.4f} ({worst[0]}) {worst[1].ci_text()}", j,
                             detail=f"per cell the {CI_LEVEL:.0%} t CI over seeds of FAR − α against "
                                    f"{B1_EXCESS:g}; {line}", seeds=seeds_label(text_seeds)))

    claims.append(_power_claim(gaussian, gauss_seeds))

    claim = ("OSCS: mean realized FAR ≤ α + 0.01 in every cell of the parametric suite (f0 = N(0,1), f1 = N(μ,1)), "
             "where the two-group model is identifiable")
    paper = f"FAR ≤ α + {FAR_TOLERANCE:g} (provable control)"
    g = gaussian[(gaussian["metric"] == "far_selected") & (gaussian["method"] == "oscs")] if len(gaussian) else gaussian
    if len(g) == 0:
        claims.append(_no_runs("gaussian_far_control", claim, paper, gauss_seeds))
    else:
        cells = _cell_bounds(g, ["mu", "alpha"], FAR_TOLERANCE, "less")
        j, line = all_of([(n, v) for n, v, _ in cells], **_EVERY_CELL)
        worst = max(cells, key=lambda c: c[2])
        claims.append(judged("gaussian_far_control", claim, paper,
                             f"worst mean FAR − α = {worst[2]:+.4f} ({worst[0]}) {worst[1].ci_text()}; "
                             + ", ".join(f"{n}: {e + 0:+.3f}" for n, _, e in cells), j,
                             detail=f"per cell the {CI_LEVEL:.0%} t CI over seeds; {line}",
                             seeds=seeds_label(gauss_seeds)))

    claims.append(_far_claim(
        "far_control_two_sided", "Variant (ours, not the spec): OSCS with a two-sided Storey π̂0 — mean realized "
        "FAR ≤ α + 0.01 in every stationary scenario, every α, every detector", results, "oscs_two_sided",
        text_seeds, detail_prefix="π̂0 from two-sided conformal p-values (Storey 2002; Bates et al. 2023); "))
    return claims


def _power_claim(gaussian: pd.DataFrame, seeds: list[int]) -> Claim:
    """TAR(OSCS) ≥ 0.8 × TAR(oracle) in every (μ, α) cell, each judged by the paired CI over
    seeds of TAR_OSCS − 0.8 · TAR_oracle (rule "effect", margin 0: holds lower > 0, refuted upper < 0)."""
    claim = ("OSCS benign acceptance (TAR) ≥ 0.8 × the oracle rule's in every cell of the Gaussian suite "
             "(paired CI over seeds of TAR_OSCS − 0.8 TAR_oracle)")
    paper = f"TAR(OSCS) ≥ {POWER_RATIO:g} × TAR(oracle)"
    if len(gaussian) == 0:
        return _no_runs("power_vs_oracle", claim, paper, seeds)
    tar = gaussian[gaussian["metric"] == "tar"].pivot_table(index=["mu", "alpha", "seed"], columns="method",
                                                            values="value")
    cells = []
    for (mu, alpha), group in tar.groupby(level=["mu", "alpha"]):
        ci = paired_ci(group["oscs"].to_numpy(), POWER_RATIO * group["oracle"].to_numpy(), CI_LEVEL)
        ratio = float(group["oscs"].mean() / group["oracle"].mean()) if group["oracle"].mean() > 0 else float("nan")
        cells.append((f"μ={mu:g}, α={alpha:g}", verdict_of(ci, rule="effect", margin=0.0), ratio, ci))
    if not cells:
        return _no_runs("power_vs_oracle", claim, paper, seeds)
    j, line = all_of([(c[0], c[1]) for c in cells], **_EVERY_CELL)
    worst = min(cells, key=lambda c: c[3].low)
    return judged("power_vs_oracle", claim, paper,
                  f"worst cell {worst[0]}: ratio of means {worst[2]:.3f}; {worst[3].text()}", j,
                  detail=f"{line}; ratios of means " + ", ".join(f"{c[0]}: {c[2]:.3f}" for c in cells),
                  seeds=seeds_label(seeds))
