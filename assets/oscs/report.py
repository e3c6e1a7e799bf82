"""OSCS benchmark report content: pure pandas/matplotlib, no Dagster.

`build_report` turns the decisions and the Gaussian suite into a Report (claims, tables,
figures, tidy rows); definitions.py publishes it.
"""
from __future__ import annotations

import pandas as pd

from assets.common.report import Report, markdown_table
from assets.oscs import benchmark, plots, streams
from assets.oscs.params import OSCSParams

READING = (
    "OSCS only sees the benign calibration scores and the unlabeled stream. It can control the FAR "
    "of the accepted set only if the stream's score distribution reveals how many malicious inputs "
    "there are (π0) and where they sit. The two tables below measure that: an attack whose AUC is "
    "near 0.5 (or below) is invisible to the detector, the Storey estimate π̂0 then drifts toward 1, "
    "the estimated posterior m̂ is too small and accepted malicious inputs exceed α. Any FAR claim "
    "red on the text streams is therefore read against the detector separation, not hidden; the "
    "Gaussian suite isolates the statistical layer where the two-group model is identifiable.")


def build_report(decisions: pd.DataFrame, gaussian_suite: pd.DataFrame, benign_density: dict,
                 detector_scores: pd.DataFrame, params: OSCSParams, base_seed: int) -> Report:
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
    body = ["## Reading the results", "", READING, "",
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
    ], ignore_index=True)
    thresholds = pd.DataFrame([{"name": "fixed_threshold_q95", "seed": base_seed, "dataset": det,
                                "method": "fixed_threshold", "value": v["fixed_threshold_q95"]}
                               for det, v in benign_density["detectors"].items()])
    stationary = summary[summary["scenario"].isin(streams.STATIONARY_SCENARIOS)]
    dvc_metrics = {"stationary_mean": {f"{m}@alpha={a:g}": {"far_selected": float(g["far_selected"].mean()),
                                                             "tar": float(g["tar"].mean())}
                                       for (m, a), g in stationary.groupby(["method", "alpha"])}}
    figures = {"far_by_scenario": plots.far_by_scenario(summary),
               "far_over_time": plots.far_over_time(decisions),
               "pi0_trace": plots.pi0_trace(decisions),
               "gaussian_power": plots.gaussian_power(gaussian_suite)}
    return Report(claims=claims, body="\n".join(body), figures=figures, metrics=metric_rows,
                  dvc_metrics=dvc_metrics, thresholds=thresholds)
