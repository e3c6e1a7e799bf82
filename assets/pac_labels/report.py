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


def router_section(summary: pd.DataFrame, quality: dict[str, dict], router: dict | None,
                   params: PACLabelsParams) -> list[str]:
    """The router partitions side by side: cost, violations, AI error of the routing, how well
    U ranks the errors, and (for the learned heads) the gate spread over training."""
    pac = summary[(summary["method"] == "pac") & summary["model"].map(B._is_router)]
    if pac.empty:
        return []
    histories = {B.ROUTER: (router or {}).get("history", [])}
    histories.update({f"{B.ROUTER}_{k}": v.get("history", []) for k, v in (router or {}).get("ablations", {}).items()})
    rows = []
    for r in pac.itertuples():
        q, h = quality.get(r.model, {}), histories.get(r.model, [])
        spreads = [e["gate_spread"] for e in h if e.get("gate_spread") is not None]
        rows.append({"partition": r.model, "cost_mean": r.cost_mean, "violation_freq": r.violation_freq,
                     "save_mean": r.save_mean, "routed AI error": q.get("ai_error"),
                     "AUC(U → error)": q.get("auc"), "share per model": str(q.get("share", {})),
                     "gate spread (first epoch)": spreads[0] if spreads else None,
                     "gate spread (last epoch)": spreads[-1] if spreads else None})
    cfg = params.router
    fit = (router or {}).get("calibration_fit", {})
    fit_line = (f"In-sample, on the {len((router or {}).get('calibration_item_ids', []))} calibration items it was "
                f"trained on, the router's routed AI error is {fit['ai_error']:.3f} and AUC(U → error) "
                f"{fit['auc']:.3f}; the table above measures the same on the routed pool."
                if fit.get("auc") is not None else "")
    return ["## PAC router and its ablations", "",
            f"Router: {cfg.head} uncertainty head, gate σ({cfg.gate_scale:g}·(u − û)), {cfg.epochs} epochs of "
            f"sign-SGD (AdamW lr {cfg.lr:g}) on a {cfg.calibration_frac:.0%} calibration split. "
            "router_authors_sigmoid: the authors' parameterisation (σ on the head, then σ(0.1·(s − û)): the gate "
            "can differ across items by at most 0.025). router_routed_confidence: the main router's routing with "
            "the routed model's own 1 − confidence as U. Gate spread = max − min of σ(a(s − û)) over a training "
            "batch (mean over the batches of an epoch). AUC(U → error) is measured against the hidden labels "
            "after labeling (evaluation only).", "",
            markdown_table(pd.DataFrame(rows), digits=4), "", fit_line, ""]


def build_report(trial_outcomes: pd.DataFrame, calibrated_thresholds: pd.DataFrame, naive_split_study: pd.DataFrame,
                 params: PACLabelsParams, paper_status: dict[str, str], profile: str, base_seed: int,
                 ai_annotations: pd.DataFrame | None = None, expert_oracle: pd.DataFrame | None = None,
                 router: dict | None = None) -> Report:
    """paper_status: paper dataset → "loaded" or why it is absent (data.paper_status)."""
    eps, alpha = params.epsilon, params.alpha
    summary = B.summarize(trial_outcomes, eps, alpha)
    quality = (B.router_quality(ai_annotations, expert_oracle)
               if ai_annotations is not None and expert_oracle is not None else {})
    claims = B.evaluate_claims(summary, naive_split_study, eps, alpha, paper_status, outcomes=trial_outcomes,
                               router_quality=quality)
    body = [f"ε = {eps:g}, α = {alpha:g}, {params.trials} trials per partition (profile {profile}). "
            "violation_freq = fraction of trials with realized error > ε; error_q = the (1 − α) quantile of the "
            "realized error; save = fraction of the dataset not expert-labelled; cost per item with expert = 1 "
            "(model costs only on the router's dataset).", "",
            "## Per partition and method", "", markdown_table(summary[SUMMARY_COLUMNS], digits=4), "",
            "## Naive threshold per digits split seed", "",
            markdown_table(naive_split_study, digits=4), "",
            "## Paper datasets", "", "\n".join(f"- {k}: {v}" for k, v in paper_status.items()) or "none configured", "",
            *router_section(summary, quality, router, params)]
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
