"""PAC labeling benchmark report content: pure pandas/matplotlib, no Dagster.

`build_report` turns the scored trials, the thresholds and the naive split study into a
Report (claims, tables, figures, tidy rows); definitions.py publishes it.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.report import Report, markdown_table
from assets.pac_labels import benchmark as B
from assets.pac_labels import plots
from assets.pac_labels.params import PACLabelsParams

SLUG = "pac_labels"
SUMMARY_COLUMNS = ["dataset_id", "model", "ci", "method", "trials", "violation_freq", "error_q", "error_max",
                   "save_mean", "save_sd", "cost_mean"]
METRICS = ["violation_freq", "error_mean", "error_q", "error_max", "save_mean", "save_sd", "cost_mean", "trials"]


def build_report(trial_outcomes: pd.DataFrame, calibrated_thresholds: pd.DataFrame, naive_split_study: pd.DataFrame,
                 params: PACLabelsParams, paper_status: dict[str, str], profile: str, base_seed: int) -> Report:
    """paper_status: paper dataset → "loaded" or why it is absent (data.paper_status)."""
    eps, alpha = params.epsilon, params.alpha
    summary = B.summarize(trial_outcomes, eps, alpha)
    claims = B.evaluate_claims(summary, naive_split_study, eps, alpha, paper_status)
    body = [f"ε = {eps:g}, α = {alpha:g}, {params.trials} trials per partition (profile {profile}). "
            "violation_freq = fraction of trials with realized error > ε; error_q = the (1 − α) quantile of the "
            "realized error; save = fraction of the dataset not expert-labelled; cost per item with expert = 1 "
            "(model costs only on the router's dataset).", "",
            "## Per partition and method", "", markdown_table(summary[SUMMARY_COLUMNS], digits=4), "",
            "## Naive threshold per digits split seed", "",
            markdown_table(naive_split_study, digits=4), "",
            "## Paper datasets", "", "\n".join(f"- {k}: {v}" for k, v in paper_status.items()) or "none configured", ""]
    metric_rows = summary.melt(id_vars=["dataset_id", "model", "ci", "method"], value_vars=METRICS, var_name="metric")
    metric_rows = metric_rows.assign(asset=f"{SLUG}/trial_outcomes", partition=lambda d: d["model"] + "/" + d["ci"],
                                     seed=int(base_seed), dataset=metric_rows["dataset_id"])
    metric_rows["value"] = metric_rows["value"].astype(float)
    pac = calibrated_thresholds[calibrated_thresholds["method"] == "pac"]
    thresholds = pd.DataFrame({"name": "u_hat", "seed": pac["seed"].astype(np.int64),
                               "dataset": pac["dataset_id"] + "/" + pac["model"] + "/" + pac["ci"],
                               "method": "pac", "value": pac["u_hat"].astype(float)})
    thresholds = thresholds[np.isfinite(thresholds["value"])]
    figures = {"realized_error": plots.realized_error(trial_outcomes, eps),
               "violation_and_save": plots.violation_and_save(summary, alpha),
               "ucb_curves": plots.ucb_curves(calibrated_thresholds, eps),
               "router_costs": plots.router_costs(summary)}
    dvc_metrics = {"pac": {f"{r.dataset_id}/{r.model}/{r.ci}": {"violation_freq": float(r.violation_freq),
                                                                 "save_mean": float(r.save_mean),
                                                                 "error_q": float(r.error_q)}
                           for r in summary[summary["method"] == "pac"].itertuples()}}
    return Report(claims=claims, body="\n".join(body), figures=figures, metrics=metric_rows,
                  dvc_metrics=dvc_metrics, thresholds=thresholds)
