"""limix benchmark report content: pure pandas/matplotlib, no Dagster."""
from __future__ import annotations

import pandas as pd

from assets.common.report import Report, markdown_table
from assets.limix import benchmark, plots, runs
from assets.limix.params import LimiXParams

READING = (
    "Every model is trained from scratch on the tiny SCM prior (NOTES.md); all variants of a seed see the same "
    "task stream and start from the same weights (SNF and FSN: the same modules reordered). A checkpoint counts as "
    "learned when its held-out AUC ≥ the gate and its training loss fell ≥ 20 %; predictions and AUC claims use "
    "learned checkpoints only, and a claim comparing an unlearned one is inconclusive with that premise. "
    "AUC claims pair variants on (seed, task) over the held-out prior tasks and the real suite; rank and "
    "attention claims on (seed, calibration task).")


def _metric_rows(scores: pd.DataFrame, base: pd.DataFrame, ranks: pd.DataFrame, checkpoints: pd.DataFrame
                 ) -> pd.DataFrame:
    rows = []
    for frame, col, asset in ((scores, "variant", "limix/predictions"), (base, "method", "limix/baseline_predictions")):
        for r in frame.to_dict("records"):
            for metric in ("auc", "accuracy", "logloss"):
                rows.append({"asset": asset, "partition": f"task={r['task']}", "seed": int(r.get("seed", -1)),
                             "dataset": f"{r['suite']}/{r['dataset']}", "method": r[col], "metric": metric,
                             "value": float(r[metric])})
    if len(ranks):
        g = ranks.groupby(["variant", "seed", "layer"])[["rank95", "rank99"]].mean().reset_index()
        for r in g.to_dict("records"):
            for metric in ("rank95", "rank99"):
                rows.append({"asset": "limix/embedding_rank", "partition": f"layer={r['layer']}",
                             "seed": int(r["seed"]), "dataset": "calibration", "method": r["variant"],
                             "metric": metric, "value": float(r[metric])})
    for r in checkpoints.to_dict("records"):
        for metric in ("val_auc", "loss_drop", "final_loss"):
            rows.append({"asset": "limix/checkpoints", "partition": "", "seed": int(r["seed"]), "dataset": "val",
                         "method": r["variant"], "metric": metric, "value": float(r[metric])})
    return pd.DataFrame(rows, columns=["asset", "partition", "seed", "dataset", "method", "metric", "value"])


def _timing_rows(train: pd.DataFrame | None, inference: pd.DataFrame | None,
                 baselines: pd.DataFrame | None) -> tuple[pd.DataFrame, str]:
    rows, lines = [], []
    if train is not None and len(train):
        for r in train.to_dict("records"):
            for metric in ("train_seconds", "seconds_per_step"):
                rows.append({"asset": "limix/checkpoints", "partition": "", "seed": int(r["seed"]), "dataset": "prior",
                             "method": r["variant"], "metric": metric, "value": float(r[metric])})
        per = train.groupby("variant")["seconds_per_step"].mean()
        lines.append("- pretraining: " + ", ".join(f"{v} {s * 1e3:.1f} ms/step" for v, s in per.items())
                     + f"; {train['train_seconds'].sum():.0f} s of training in all")
    if inference is not None and len(inference):
        for r in inference.to_dict("records"):
            rows.append({"asset": "limix/predictions", "partition": f"repeat={r['repeat']}", "seed": int(r["seed"]),
                         "dataset": "calibration", "method": r["variant"], "metric": "inference_seconds",
                         "value": float(r["seconds"])})
        per = inference.groupby("variant")["seconds"].median()
        lines.append("- inference over the calibration tasks (median): "
                     + ", ".join(f"{v} {s * 1e3:.1f} ms" for v, s in per.items()))
    if baselines is not None and len(baselines):
        per = baselines.groupby("method")["seconds"].mean()
        lines.append("- baselines per task: " + ", ".join(f"{m} {s:.2f} s" for m, s in per.items()))
    body = "\n".join(["## Training and inference wall clock", "", *lines]) if lines else "No timings were recorded."
    return pd.DataFrame(rows, columns=["asset", "partition", "seed", "dataset", "method", "metric", "value"]), body


def build_report(checkpoints: pd.DataFrame, embedding_rank: dict, attention: pd.DataFrame,
                 predictions: pd.DataFrame, baseline_predictions: pd.DataFrame, params: LimiXParams,
                 curves: dict[str, list[float]], timings: dict[str, pd.DataFrame | None]) -> Report:
    seeds = [int(s) for s in params.seeds]
    gate = (params.gate_min_auc, params.gate_min_loss_drop)
    ranks = pd.DataFrame(embedding_rank["ranks"])
    prop = pd.DataFrame(embedding_rank["prop31"])
    scores = runs.task_scores(predictions, ["variant", "seed"]) if len(predictions) else pd.DataFrame(
        columns=["variant", "seed", "suite", "task", "dataset", "auc", "accuracy", "logloss"])
    base = runs.task_scores(baseline_predictions, ["method"]) if len(baseline_predictions) else pd.DataFrame(
        columns=["method", "suite", "task", "dataset", "auc", "accuracy", "logloss"])
    claims = benchmark.evaluate(checkpoints, ranks, prop, attention, scores, base, timings.get("inference"), seeds,
                                gate)
    ck = checkpoints[["variant", "seed", "params", "steps", "first_loss", "final_loss", "loss_drop", "val_auc",
                      "learned"]]
    rank_table = (ranks.groupby(["variant", "layer"])[["rank95", "rank99"]].mean().reset_index()
                  if len(ranks) else pd.DataFrame())
    att_table = (attention.groupby("variant")[["parent", "other", "own"]].mean().reset_index()
                 if len(attention) else pd.DataFrame())
    auc_rows = []
    for frame, col in ((scores, "variant"), (base, "method")):
        if len(frame):
            auc_rows.append(frame.groupby([col, "suite"])[["auc", "accuracy", "logloss"]].mean().reset_index()
                            .rename(columns={col: "method"}))
    auc_table = pd.concat(auc_rows, ignore_index=True) if auc_rows else pd.DataFrame()
    body = ["## Reading the results", "", READING, "",
            "### Checkpoints and the learning gate (held-out prior tasks)", "", markdown_table(ck, digits=4), "",
            "`loss_drop`: first vs last 10 % of the steps' training CE. At equal steps, which variants learn (and "
            "how fast) is itself a result at this size (the `learning_speed` row).", "",
            "### Layer-1 effective rank (feature tokens of the calibration tasks; mean over seeds × tasks)", "",
            markdown_table(rank_table, digits=2) if len(rank_table) else "no ranks", "",
            "### Query y token's feature-attention mass (mean over layers, heads, query rows, seeds, tasks)", "",
            markdown_table(att_table, digits=3) if len(att_table) else "no attention rows", "",
            "### ROC-AUC, accuracy, log-loss by suite (learned checkpoints; baselines tuned on the context rows)", "",
            markdown_table(auc_table, digits=3) if len(auc_table) else "no learned checkpoint predicted"]
    figures = {"pretraining_loss": plots.loss_curves(curves), "embedding_rank": plots.ranks(ranks),
               "feature_attention": plots.attention(attention), "auc_by_suite": plots.auc_by_suite(scores, base)}
    dvc = {r["variant"]: {"val_auc": float(r["val_auc"]), "loss_drop": float(r["loss_drop"])}
           for r in checkpoints.groupby("variant")[["val_auc", "loss_drop"]].mean().reset_index().to_dict("records")}
    timing_rows, timing_body = _timing_rows(timings.get("checkpoints"), timings.get("inference"),
                                            timings.get("baseline_predictions"))
    return Report(claims=claims, body="\n".join(body), figures=figures,
                  metrics=_metric_rows(scores, base, ranks, checkpoints), dvc_metrics=dvc,
                  thresholds=pd.DataFrame([{"name": "gate_min_auc", "seed": -1, "dataset": "val", "method": "all",
                                            "value": float(params.gate_min_auc)}]),
                  timings=timing_rows, timing_body=timing_body)
