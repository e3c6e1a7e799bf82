"""OSCS benchmark report content: pure pandas/matplotlib, no Dagster.

`build_report` turns the decisions and the Gaussian suite into a Report (claims, tables,
figures, tidy rows); definitions.py publishes it.
"""
from __future__ import annotations

import pandas as pd

from assets.common.report import Report, markdown_table
from assets.oscs import benchmark, plots, streams
from assets.oscs.ablation import VARIANTS
from assets.oscs.params import OSCSParams

READING = (
    "OSCS only sees the benign calibration scores and the unlabeled stream; its malicious posterior "
    "m̂ = 1 − π̂0 f̂0/f̂ has three estimated pieces. The ablation below re-runs the same online rule on the "
    "same streams with the true π0, the true f0 (the benign pool the stream is drawn from) or the true "
    "mixture f swapped in, so each red FAR or power claim is attributed to the piece that causes it. The "
    "spec's Storey π̂0 uses one-sided p-values, small only for *high* scores: an attack the detector ranks "
    "as more benign than benign text (AUC < 0.5) separates well but in the wrong direction, and the "
    "one-sided count misses it; the two-sided variant counts both tails.")


def ablation_tables(ablation: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(text: mean FAR per detector × variant over stationary scenarios, seeds, α — plus the
    worst cell; gaussian: mean FAR and TAR per μ × α × variant)."""
    order = list(VARIANTS)
    text = ablation[ablation["suite"] == "text"].assign(excess=lambda d: d["far_selected"] - d["alpha"])
    cells = text.groupby(["detector", "scenario", "alpha", "variant"])["excess"].mean().reset_index()
    text_table = (cells.groupby(["detector", "variant"])["excess"].agg(mean_excess="mean", worst_excess="max")
                  .reset_index())
    text_table["variant"] = pd.Categorical(text_table["variant"], order)
    gauss = ablation[ablation["suite"] == "gaussian"]
    gauss_table = (gauss.groupby(["mu", "alpha", "variant"])[["far_selected", "tar"]].mean().reset_index())
    gauss_table["variant"] = pd.Categorical(gauss_table["variant"], order)
    return (text_table.sort_values(["detector", "variant"]).reset_index(drop=True),
            gauss_table.sort_values(["mu", "alpha", "variant"]).reset_index(drop=True))


def ablation_reading(text_table: pd.DataFrame, gauss_table: pd.DataFrame) -> str:
    """What the ablation measured, in sentences built from its numbers."""
    lines = []
    for detector, g in text_table.groupby("detector", observed=True):
        worst = g.set_index("variant")["worst_excess"]
        lines.append(f"- {detector}: worst mean FAR − α {worst['estimated']:+.3f} as specified; "
                     f"{worst['true_pi0']:+.3f} with the true π0, {worst['true_f0']:+.3f} with the true f0, "
                     f"{worst['true_f']:+.3f} with the true f, {worst['true_pi0_f0']:+.3f} with true π0 and f0, "
                     f"{worst['true_all']:+.3f} with all three.")
    for (mu, alpha), g in gauss_table.groupby(["mu", "alpha"]):
        tar = g.set_index("variant")["tar"]
        far = g.set_index("variant")["far_selected"]
        lines.append(f"- Gaussian μ={mu:g}, α={alpha:g}: TAR {tar['estimated']:.3f} as specified → "
                     f"{tar['true_pi0']:.3f} (true π0), {tar['true_f0']:.3f} (true f0), {tar['true_f']:.3f} "
                     f"(true f), {tar['true_pi0_f0']:.3f} (true π0 + f0), {tar['true_all']:.3f} (all three); "
                     f"FAR {far['estimated']:.3f} → {far['true_pi0_f0']:.3f} with true π0 + f0, "
                     f"{far['true_all']:.3f} with all three.")
    return "\n".join(lines)


def build_report(decisions: pd.DataFrame, gaussian_suite: pd.DataFrame, oracle_ablation: pd.DataFrame,
                 benign_density: dict, detector_scores: pd.DataFrame, params: OSCSParams, base_seed: int) -> Report:
    results = benchmark.stream_metrics(decisions, params.burn_in, params.short_horizon)
    claims = benchmark.evaluate_claims(results, gaussian_suite)
    summary = (results[results["metric"].isin(["far_selected", "far_malicious", "tar"])]
               .groupby(["detector", "scenario", "alpha", "method", "metric"])["value"].mean()
               .unstack("metric").reset_index())
    pi0 = (results[results["metric"].isin(["pi0_hat_final", "pi0_true"])
                   & results["scenario"].isin(streams.STATIONARY_SCENARIOS)]
           .groupby(["detector", "scenario", "method", "metric"])["value"].mean().unstack("metric")
           .reset_index())
    gaussian_means = (gaussian_suite[gaussian_suite["metric"].isin(["far_selected", "tar"])]
                      .groupby(["mu", "alpha", "method", "metric"])["value"].mean().unstack("metric").reset_index())
    text_ablation, gauss_ablation = ablation_tables(oracle_ablation)
    body = ["## Reading the results", "", READING, "",
            "### Ablation: the true π0, f0 and f swapped in (seeds " + ", ".join(map(str, params.ablation_seeds))
            + ")", "", ablation_reading(text_ablation, gauss_ablation), "",
            "Text streams (mean FAR − α over stationary scenarios × α, and the worst cell):", "",
            markdown_table(text_ablation), "", "Gaussian suite (mean over seeds):", "",
            markdown_table(gauss_ablation), "",
            "### Detector separation (AUC of malicious vs benign stream sentences)", "",
            markdown_table(benchmark.separation_table(detector_scores)), "",
            "### π̂0 at the end of the stream vs the truth (stationary scenarios, mean over seeds)", "",
            markdown_table(pi0), "",
            "## Mean over seeds (text streams)", "",
            "far_selected = malicious among accepted (the paper's FAR); far_malicious = accepted "
            "among malicious; tar = benign accepted.", "", markdown_table(summary), "",
            "## Gaussian suite (mean over seeds)", "", markdown_table(gaussian_means)]
    metric_rows = pd.concat([
        results.assign(asset="oscs/decisions", dataset=lambda d: d["detector"] + "/" + d["scenario"],
                       partition=lambda d: "alpha=" + d["alpha"].astype(str)),
        gaussian_suite.assign(asset="oscs/gaussian_suite", dataset=lambda d: "gaussian/mu=" + d["mu"].astype(str),
                              partition=lambda d: "alpha=" + d["alpha"].astype(str)),
        oracle_ablation.melt(id_vars=["suite", "detector", "scenario", "seed", "alpha", "variant"],
                             value_vars=["far_selected", "tar"], var_name="metric")
        .assign(asset="oscs/oracle_ablation", dataset=lambda d: d["detector"] + "/" + d["scenario"],
                partition=lambda d: "alpha=" + d["alpha"].astype(str), method=lambda d: "oscs/" + d["variant"]),
    ], ignore_index=True)
    thresholds = pd.DataFrame([{"name": "fixed_threshold_q95", "seed": base_seed, "dataset": det,
                                "method": "fixed_threshold", "value": v["fixed_threshold_q95"]}
                               for det, v in benign_density["detectors"].items()])
    stationary = summary[summary["scenario"].isin(streams.STATIONARY_SCENARIOS)]
    dvc_metrics = {"stationary_mean": {f"{m}@alpha={a:g}": {"far_selected": float(g["far_selected"].mean()),
                                                             "tar": float(g["tar"].mean())}
                                       for (m, a), g in stationary.groupby(["method", "alpha"])}}
    figures = {"ablation": plots.ablation(text_ablation, gauss_ablation),
               "far_by_scenario": plots.far_by_scenario(summary),
               "far_over_time": plots.far_over_time(decisions),
               "pi0_trace": plots.pi0_trace(decisions),
               "gaussian_power": plots.gaussian_power(gaussian_suite)}
    return Report(claims=claims, body="\n".join(body), figures=figures, metrics=metric_rows,
                  dvc_metrics=dvc_metrics, thresholds=thresholds)
