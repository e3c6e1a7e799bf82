"""LimiX-2M (limix) as Dagster assets — wiring only (data.py, tokens.py, model.py, baselines.py,
runs.py, checks.py, benchmark.py and report.py do the work).

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    prior_config ─┬─> val_tasks ──────────┬─> checkpoints ─┬─> embedding_rank ──┐
                  ├─> calibration_tasks ──┤                ├─> feature_attention ┤
                  └─> real_suite ─────────┤                └─> predictions ──────┼─> benchmark_report
                                          └─> baseline_predictions ──────────────┘

Seeds and variants are table columns and checkpoint-name parts (no partitions), so one run
holds the whole group and every blocking check gates everything downstream.
"""

import dagster as dg
import numpy as np
import pandas as pd

from assets.common.paper import Paper
from assets.limix import benchmark, checks, report, runs
from assets.limix.params import LimiXParams
from resources.artifacts import ArtifactsResource, load_checkpoint, save_checkpoint
from resources.compute import ComputeResource

paper = Paper("limix", params=LimiXParams)


def _seed_for(compute: ComputeResource):
    return lambda *keys: compute.seed_for(paper.slug, *keys)


def _tasks(value: dict) -> list[dict]:
    state, _ = load_checkpoint(value["bank"])
    return runs.unpack({k: v.numpy() for k, v in state.items()}, value["meta"])


def _save_bank(name: str, arrays: dict, meta: list[dict], compute: ComputeResource, artifacts: ArtifactsResource,
               **extra) -> dict:
    ref = save_checkpoint(artifacts.checkpoint_path(paper.slug, name), arrays,
                          provenance=compute.provenance(paper.slug), config={"kind": name})
    return {"bank": ref, "meta": meta, **extra}


def _prior_bank(name: str, stream: str, n: int, compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    p = paper.params(compute)
    seed = compute.seed_for(paper.slug, name)
    arrays, meta = runs.task_bank(p, seed, stream, n)
    spreads = np.concatenate([v for k, v in arrays.items() if k.endswith(".log10_spread")])
    share = float(np.mean(spreads >= checks.MIN_SPREAD_DECADES))
    return _save_bank(name, arrays, meta, compute, artifacts, seed=int(seed), stream=stream,
                      tasks=int(len(spreads)), spread_share=share)


@paper.asset(kinds={"numpy"}, description="Annotation: the tiny SCM prior (MLP/tree mechanisms, D, classes, rows, "
             "log-uniform column scales in [1e-3, 1e4], exp/rounded columns, MCAR missing), the variants and their "
             "model configs and parameter counts.")
def prior_config(context: dg.AssetExecutionContext, compute: ComputeResource) -> dict:
    from assets.limix.model import count_parameters

    p = paper.params(compute)
    configs = {v: runs.variant_config(p, v).to_dict() for v in p.variants}
    counts = {v: int(count_parameters(runs.build_model(p, v, 0))) for v in p.variants}
    context.log.info("parameters: " + ", ".join(f"{v} {c}" for v, c in counts.items()))
    from dataclasses import asdict

    return {"prior": asdict(runs.prior(p)), "variants": list(p.variants), "configs": configs, "params": counts,
            "stream_seeds": {str(s): runs.stream_seed(_seed_for(compute), s) for s in p.seeds}}


@paper.asset(kinds={"numpy", "torch"}, deps=[prior_config], description="Dataset: frozen held-out prior tasks (the "
             "learning gate and the AUC claims) on the 'val' stream, disjoint from pretraining.")
def val_tasks(context: dg.AssetExecutionContext, compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    return _prior_bank("val_tasks", "val", paper.params(compute).eval.val_tasks, compute, artifacts)


@paper.asset(kinds={"numpy", "torch"}, deps=[prior_config], description="Dataset: frozen held-out prior tasks with "
             "their parent masks for the rank and attention diagnostics ('calibration' stream).")
def calibration_tasks(context: dg.AssetExecutionContext, compute: ComputeResource,
                      artifacts: ArtifactsResource) -> dict:
    return _prior_bank("calibration_tasks", "calibration", paper.params(compute).eval.calibration_tasks, compute,
                       artifacts)


@paper.asset(kinds={"numpy", "sklearn"}, deps=[prior_config], description="Dataset: the packaged real tables "
             "(sklearn breast_cancer, wine, iris, digits 3v8/1v7/4v9; statsmodels fair, star98, anes96), a seeded "
             "≤ 8-column subset, seeded context/query splits holding every class.")
def real_suite(context: dg.AssetExecutionContext, compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    p = paper.params(compute)
    arrays, meta = runs.real_bank(p, 0)
    context.log.info(f"{len(meta)} real tasks over {len({m['name'] for m in meta})} tables")
    return _save_bank("real_suite", arrays, meta, compute, artifacts)


@paper.asset(gpu=True, description="Checkpoints: every variant × seed pretrained on the shared prior stream "
             "(warm-up + cosine), loss curve in the sidecar, held-out AUC, loss drop and the learned flag.")
def checkpoints(context: dg.AssetExecutionContext, val_tasks: dict, compute: ComputeResource,
                artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    with compute.blas_limits():
        frame, timings = runs.train_all(p, _tasks(val_tasks), compute, artifacts, _seed_for(compute),
                                        context.log.info)
    artifacts.record_timings(paper.slug, "checkpoints", pd.DataFrame(timings))
    return frame


@paper.asset(kinds={"torch"}, description="Annotation: Rank@95/99 of the input tokens and the layer-1 hidden "
             "states (feature tokens of the calibration tasks) per checkpoint, and Prop. 3.1's rank of 200 "
             "scalars of one column under each trained cell embedding.")
def embedding_rank(context: dg.AssetExecutionContext, checkpoints: pd.DataFrame, calibration_tasks: dict,
                   compute: ComputeResource) -> dict:
    compute.torch(threads=paper.params(compute).torch_threads)
    ranks = runs.embedding_rank(checkpoints, _tasks(calibration_tasks), context.log.info)
    return {"ranks": ranks.to_dict("records"), "prop31": runs.prop31_ranks(checkpoints).to_dict("records")}


@paper.asset(kinds={"torch", "pandas"}, description="Annotation: the query y token's feature-attention mass on "
             "parent tokens, other feature tokens and itself, per checkpoint × calibration task.")
def feature_attention(context: dg.AssetExecutionContext, checkpoints: pd.DataFrame, calibration_tasks: dict,
                      compute: ComputeResource) -> pd.DataFrame:
    compute.torch(threads=paper.params(compute).torch_threads)
    return runs.feature_attention(checkpoints, _tasks(calibration_tasks), context.log.info)


@paper.asset(kinds={"torch", "pandas"}, description="Dataset: query-row class probabilities of the learned "
             "checkpoints on the val tasks and the real suite; repeated inference timings (a run record).")
def predictions(context: dg.AssetExecutionContext, checkpoints: pd.DataFrame, val_tasks: dict, real_suite: dict,
                calibration_tasks: dict, compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    compute.torch(threads=p.torch_threads)
    learned = checkpoints[checkpoints["learned"]]
    context.log.info(f"{len(learned)} of {len(checkpoints)} checkpoints learned; only those predict")
    timings = runs.inference_timings(checkpoints, _tasks(calibration_tasks), p.eval.timing_repeats)
    artifacts.record_timings(paper.slug, "inference", timings)
    return runs.predictions(learned, {"val": _tasks(val_tasks), "real": _tasks(real_suite)}, context.log.info)


@paper.asset(kinds={"sklearn"}, description="Dataset: logistic regression, kNN, random forest and "
             "HistGradientBoosting (tuned by CV on the context rows) on the real suite and the first val tasks.")
def baseline_predictions(context: dg.AssetExecutionContext, val_tasks: dict, real_suite: dict,
                         compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    with compute.blas_limits():
        frame, timings = runs.baseline_predictions({"val": _tasks(val_tasks), "real": _tasks(real_suite)}, p,
                                                   compute, context.log.info)
    artifacts.record_timings(paper.slug, "baseline_predictions", pd.DataFrame(timings))
    return frame


@paper.asset(kinds={"duckdb", "markdown"}, description="ROC-AUC / accuracy / log-loss per variant and baseline, "
             "layer-1 ranks, attention masses, the learning gate → warehouse rows, REPORT.md with plots, "
             "metrics.json, claims.")
def benchmark_report(context: dg.AssetExecutionContext, checkpoints: pd.DataFrame, embedding_rank: dict,
                     feature_attention: pd.DataFrame, predictions: pd.DataFrame,
                     baseline_predictions: pd.DataFrame, compute: ComputeResource,
                     artifacts: ArtifactsResource) -> dict:
    p = paper.params(compute)
    curves = {f"{r.variant}/seed {r.seed}": load_checkpoint(r.checkpoint)[1]["loss_curve"]
              for r in checkpoints.itertuples()}
    timings = {name: artifacts.recorded_timings(paper.slug, name)
               for name in ("checkpoints", "inference", "baseline_predictions")}
    built = report.build_report(checkpoints, embedding_rank, feature_attention, predictions, baseline_predictions,
                                p, curves, timings)
    return paper.publish(context, compute, artifacts, built)


_CK = {"checkpoints": checkpoints}

PAPER = paper.define(
    assets=[prior_config, val_tasks, calibration_tasks, real_suite, checkpoints, embedding_rank, feature_attention,
            predictions, baseline_predictions, benchmark_report],
    checks=[
        paper.gate(val_tasks, "classes_nan_scales", "Every class in context and query of every task, NaN only where "
                   "the missing mask says, column scales spanning ≥ 3 decades in ≥ 30 % of tasks, not the "
                   "pretraining stream.", checks.prior_tasks),
        paper.gate(calibration_tasks, "classes_nan_scales", "As val_tasks.", checks.prior_tasks),
        paper.gate(real_suite, "packaged_rows_no_leakage", "Row counts as packaged, no column with |r| > 0.99 to the "
                   "label, context/query disjoint and holding every class.", checks.real_suite),
        paper.gate(checkpoints, "loads_back_finite", "Every variant × seed reloads (weights_only, md5) with finite "
                   "weights; SNF and FSN have equal parameter counts.", checks.checkpoints_load_back,
                   uses_params=True),
        paper.gate(checkpoints, "learned_flag", "The learned flag is the rule (held-out AUC ≥ 0.65 and training loss "
                   "−20 %) on each checkpoint's numbers; only learned checkpoints predict.", checks.learned_gate,
                   uses_params=True),
        paper.gate(checkpoints, "all_learned", "Every checkpoint learned (warning: an unlearned one makes its "
                   "claims inconclusive).", checks.all_learned, uses_params=True, severity="warn"),
        paper.gate(embedding_rank, "complete", "Rank@95/99 for every checkpoint, 1 ≤ Rank@95 ≤ Rank@99.",
                   checks.ranks_complete, uses_params=True),
        paper.gate(feature_attention, "masses_sum_to_one", "Parent + other + own mass = 1 on every row.",
                   checks.attention_valid, uses_params=True),
        paper.gate(predictions, "learned_only_valid", "Only learned checkpoints, each on every task; probabilities "
                   "finite, summing to 1.", checks.predictions_valid, uses_params=True, additional=_CK),
        paper.gate(baseline_predictions, "complete_valid", "Every baseline present; probabilities finite, summing "
                   "to 1.", checks.baselines_valid, uses_params=True),
    ],
    claims=benchmark.CLAIMS,
    observations=benchmark.OBSERVATIONS,
)
