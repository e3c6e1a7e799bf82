"""ts_layers as Dagster assets — wiring only (data.py, model.py, method.py, runs.py, pipeline.py,
checks.py, benchmark.py, report.py do the work).

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    synthetic_corpus ─┐
                      ├─> windows ─> text_backbone ─> checkpoints ─> layer_importance ─> keep_rule ─┐
    real_series ──────┘                                   │                                          │
                                                          └──────────> pruned_checkpoints <──────────┘
                                                                              │
                                               forecast_eval <───────────────┘ ─> latency_benchmark
                                                      └──────────────> benchmark_report

Family × depth × seed and pruning method are table columns and checkpoint-name parts (no
partitions), so one run holds the whole group and every blocking check gates everything downstream.
"""

import dagster as dg
import pandas as pd

from assets.common.paper import Paper
from assets.ts_layers import checks, data, pipeline, report
from assets.ts_layers.params import TSLayersParams
from resources.artifacts import ArtifactsResource, load_checkpoint, resolve_data_ref, save_checkpoint
from resources.compute import ComputeResource

paper = Paper("ts_layers", params=TSLayersParams)


def _seed_for(compute: ComputeResource):
    return lambda *keys: compute.seed_for(paper.slug, *keys)


def _saver(compute: ComputeResource, artifacts: ArtifactsResource):
    def save(name: str, state: dict, config=None, seed=None, **extra) -> dict:
        return save_checkpoint(artifacts.checkpoint_path(paper.slug, name), state,
                               provenance=compute.provenance(paper.slug), config=config, seed=seed, **extra)
    return save


def _resolve(ref: str) -> str:
    return str(resolve_data_ref(ref))


def _bundle(synthetic_corpus, real_series, windows, compute, artifacts) -> str:
    path = artifacts.runs_dir(paper.slug) / "bundle.npz"
    return pipeline.bundle(synthetic_corpus, real_series, windows, paper.params(compute), path)


def _workers(compute: ComputeResource, jobs: int) -> int:
    return compute.workers(jobs, paper.params(compute).workers)


@paper.asset(kinds={"pandas", "numpy"}, description="Dataset: seeded synthetic pretraining corpus — 1–3 sinusoids "
             "(periods 4–96), linear/piecewise trends, AR(2) noise, level shifts, scales 1e-2…1e3; last 10 % of "
             "the series are synthetic validation.")
def synthetic_corpus(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    frame = data.synthetic_corpus(p.synthetic.series, p.synthetic.length, p.synthetic.val_fraction,
                                  compute.seed_for(paper.slug, "synthetic"))
    context.add_output_metadata({"series": len(frame), "trend_kinds": dg.MetadataValue.json(
        frame["trend"].value_counts().to_dict())})
    return frame


@paper.asset(kinds={"pandas"}, description="Dataset: statsmodels' bundled series (offline) — co2 (gaps forward-"
             "filled), sunspots monthly (parsed from src/sunspots_monthly.dat), elnino (732 months), macrodata (12 "
             "quarterly columns, one task), elec_equip; nile excluded (too short).")
def real_series(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    frame = data.load_real_series(paper.params(compute).series)
    context.add_output_metadata({"points": dg.MetadataValue.json(frame.groupby("task").size().to_dict()),
                                 "filled": int(frame["filled"].sum())})
    return frame


@paper.asset(kinds={"pandas"}, description="Dataset: chronological 70/10/20 window index by target time, RevIN "
             "stats per window, the fixed synthetic-val windows and the 512 calibration windows (train only).")
def windows(context: dg.AssetExecutionContext, synthetic_corpus: pd.DataFrame, real_series: pd.DataFrame,
            compute: ComputeResource) -> pd.DataFrame:
    frame = pipeline.windows(synthetic_corpus, real_series, paper.params(compute),
                             compute.rng(paper.slug, "windows"))
    context.add_output_metadata({"windows": dg.MetadataValue.json(
        frame.groupby(["task", "split"]).size().rename("n").reset_index().to_dict("records"))})
    return frame


@paper.asset(gpu=True, deps=[windows], description="Checkpoints: the char-level LM (L = LLM4TS depth) pretrained "
             "per seed on gensim's lee_background.cor — LLM4TS's text backbone.")
def text_backbone(context: dg.AssetExecutionContext, compute: ComputeResource,
                  artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    frame, timings = pipeline.text_backbone(p, _seed_for(compute), _saver(compute, artifacts),
                                            _workers(compute, len(p.seeds)), p.torch_threads, context.log.info,
                                            compute.resolved_device())
    artifacts.record_timings(paper.slug, "text_backbone", pd.DataFrame(timings))
    return frame


@paper.asset(gpu=True, description="Checkpoints: TSFM at every depth and LLM4TS (text backbone + new patch layers, "
             "full fine-tune) per seed, next-patch MSE on synthetic + real train windows; val and synthetic-val "
             "losses, last-value naive on val.")
def checkpoints(context: dg.AssetExecutionContext, synthetic_corpus: pd.DataFrame, real_series: pd.DataFrame,
                windows: pd.DataFrame, text_backbone: pd.DataFrame, compute: ComputeResource,
                artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    path = _bundle(synthetic_corpus, real_series, windows, compute, artifacts)
    jobs = len(pipeline.model_grid(p)) * len(p.seeds)
    frame, timings = pipeline.checkpoints(p, text_backbone, path, _seed_for(compute), _saver(compute, artifacts),
                                          _resolve, _workers(compute, jobs), p.torch_threads, context.log.info,
                                          compute.resolved_device())
    artifacts.record_timings(paper.slug, "checkpoints", pd.DataFrame(timings))
    return frame


@paper.asset(kinds={"torch", "pandas"}, description="Annotation: per pruned model × seed × layer — s_l (CKA shift, "
             "K = 2, α = 0.5), a_l (head diversity), I_l, ShortGPT BI, removal drop on val, CKA rows; on 512 "
             "calibration (train) windows.")
def layer_importance(context: dg.AssetExecutionContext, synthetic_corpus: pd.DataFrame, real_series: pd.DataFrame,
                     windows: pd.DataFrame, checkpoints: pd.DataFrame, compute: ComputeResource,
                     artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    compute.torch(threads=p.torch_threads)
    path = _bundle(synthetic_corpus, real_series, windows, compute, artifacts)
    with compute.blas_limits(p.torch_threads):
        return pipeline.layer_importance(p, checkpoints, path, load_checkpoint, context.log.info)


def _param_fraction(p: TSLayersParams):
    from assets.ts_layers.model import PatchForecaster
    from assets.ts_layers.runs import patch_config

    def fraction(family: str, depth: int, keep: list) -> float:
        model = PatchForecaster(patch_config(p, family, depth))
        return model.n_parameters(list(keep)) / model.n_parameters()
    return fraction


@paper.asset(kinds={"numpy"}, description="Decision rule: keep the top τ = 25 % of layers by I_l (layer 1 always, "
             "order kept) and the baselines' keep lists at the same k (bottom-k, BI top-k, drop-last, random draws, "
             "scratch), with parameter fractions.")
def keep_rule(context: dg.AssetExecutionContext, layer_importance: pd.DataFrame, compute: ComputeResource) -> dict:
    p = paper.params(compute)
    value = pipeline.keep_rule(p, layer_importance, _param_fraction(p), lambda *k: compute.rng(paper.slug, *k))
    for m in value["models"]:
        context.log.info(f"{m['family']}-{m['depth']} seed {m['seed']}: keep {m['keeps']['keep_tau']}")
    return value


@paper.asset(gpu=True, description="Checkpoints: every pruned model realigned 150 steps on one shared stream "
             "(keep-τ, random draws, bottom-k, BI top-k, drop-last), the full model continued 150 steps, and a "
             "k-layer TSFM from scratch for pretraining + realignment steps.")
def pruned_checkpoints(context: dg.AssetExecutionContext, synthetic_corpus: pd.DataFrame, real_series: pd.DataFrame,
                       windows: pd.DataFrame, checkpoints: pd.DataFrame, keep_rule: dict, compute: ComputeResource,
                       artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    path = _bundle(synthetic_corpus, real_series, windows, compute, artifacts)
    jobs = sum(len(m["keeps"]) + 1 for m in keep_rule["models"])
    frame, timings = pipeline.pruned_checkpoints(p, checkpoints, keep_rule, path, _seed_for(compute),
                                                 _saver(compute, artifacts), _resolve, _workers(compute, jobs),
                                                 p.torch_threads, context.log.info, compute.resolved_device())
    artifacts.record_timings(paper.slug, "pruned_checkpoints", pd.DataFrame(timings))
    return frame


@paper.asset(kinds={"torch", "pandas"}, description="Per test window MSE / MAE (RevIN scale) of every pretrained, "
             "pruned and baseline model, and of last-value / seasonal-naive, ETS and ARIMA on 32 windows per series.")
def forecast_eval(context: dg.AssetExecutionContext, synthetic_corpus: pd.DataFrame, real_series: pd.DataFrame,
                  windows: pd.DataFrame, checkpoints: pd.DataFrame, pruned_checkpoints: pd.DataFrame,
                  compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    compute.torch(threads=p.torch_threads)
    path = _bundle(synthetic_corpus, real_series, windows, compute, artifacts)
    with compute.blas_limits(p.torch_threads):
        return pipeline.forecast_eval(p, windows, checkpoints, pruned_checkpoints, path, load_checkpoint,
                                      context.log.info)


@paper.asset(volatile=True, kinds={"torch"}, deps=[forecast_eval], description="Benchmark (wall clock, a run "
             "record): median latency of the two-patch forecast, full vs compact keep-τ model, at batch 1 and 256, "
             "per pruned model × seed; parameter and FLOP fractions.")
def latency_benchmark(context: dg.AssetExecutionContext, checkpoints: pd.DataFrame, keep_rule: dict,
                      compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    compute.torch(threads=p.torch_threads)
    return pipeline.latency(p, checkpoints, keep_rule, load_checkpoint, p.torch_threads)


@paper.asset(kinds={"duckdb", "markdown"}, description="Scaling sweep, importance, pruning vs baselines, "
             "superiority cells, classical baselines, ablation → warehouse rows, REPORT.md with plots, claims.")
def benchmark_report(context: dg.AssetExecutionContext, forecast_eval: pd.DataFrame, checkpoints: pd.DataFrame,
                     text_backbone: pd.DataFrame, layer_importance: pd.DataFrame, keep_rule: dict,
                     pruned_checkpoints: pd.DataFrame, latency_benchmark: pd.DataFrame, compute: ComputeResource,
                     artifacts: ArtifactsResource) -> dict:
    timings = {name: artifacts.recorded_timings(paper.slug, name)
               for name in ("text_backbone", "checkpoints", "pruned_checkpoints")}
    built = report.build_report(forecast_eval, checkpoints, text_backbone, layer_importance, keep_rule,
                                pruned_checkpoints, latency_benchmark, paper.params(compute), timings)
    return paper.publish(context, compute, artifacts, built)


PAPER = paper.define(
    assets=[synthetic_corpus, real_series, windows, text_backbone, checkpoints, layer_importance, keep_rule,
            pruned_checkpoints, forecast_eval, latency_benchmark, benchmark_report],
    checks=[
        paper.gate(synthetic_corpus, "finite_nonconstant", "Declared size and length, finite, non-constant series, "
                   "train and val splits.", checks.corpus_valid, uses_params=True),
        paper.gate(real_series, "finite_monotone_long_enough", "Every series present; finite (no NaN/inf), strictly "
                   "increasing index, not constant, ≥ 10 test windows per channel.", checks.real_series_valid,
                   uses_params=True),
        paper.gate(windows, "chronological_no_leakage", "≥ 10 test windows per channel; test targets disjoint from "
                   "train/val; calibration ⊆ train; RevIN std > 0.", checks.windows_valid),
        paper.gate(text_backbone, "loads_back_learned", "Text LM reloads (weights_only, md5), finite, held-out loss "
                   "< uniform.", checks.text_backbone_valid),
        paper.gate(checkpoints, "finite_beats_naive", "Every family × depth × seed reloads with finite weights and "
                   "beats last-value naive on val.", checks.checkpoints_valid, uses_params=True),
        paper.gate(layer_importance, "finite_one_per_layer", "Scores finite; importance length = depth for every "
                   "pruned model × seed.", checks.importance_valid, uses_params=True,
                   additional={"checkpoints": checkpoints}),
        paper.gate(keep_rule, "same_k_fraction", "τ in (0, 1]; valid keep lists; layer 1 kept; the same k for "
                   "every method; keep-τ param fraction ≤ 0.30.", checks.keep_rule_valid),
        paper.gate(pruned_checkpoints, "equal_realign_budget", "Every method present; realign steps equal (scratch: "
                   "pretraining + realignment); reload finite.", checks.pruned_valid, uses_params=True,
                   additional={"keep_rule": keep_rule}),
        paper.gate(forecast_eval, "complete_finite", "Every model on the same test windows; finite MSE.",
                   checks.eval_complete, additional={"pruned_checkpoints": pruned_checkpoints,
                                                     "checkpoints": checkpoints}),
    ],
    claims=["scaling_paradox", "concentration", "majority_redundant", "pruned_better", "superior_95", "speedup"],
    observations=["flop_ratio", "classical_baselines", "importance_ablation", "llm4ts_vs_tsfm",
                  "realignment_ablation"],
)
