"""PWF / MSF (pfn_causal) as Dagster assets — wiring only (prior.py, model.py, method.py,
baselines.py, runs.py, checks.py, benchmark.py and report.py do the work).

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    prior_config (+ coverage) ─> eval_bank ─> pretrained ─┬─> continued_pretrain ─┐
                                     │                    ├─> pwf ────────────────┤
                                     │                    ├─> msf ────────────────┤
                                     │                    ├─> random_subset_ft ───┼─> predictions ─┐
                                     │                    ├─> finetune_rule ──────┼────────────────┤
                                     │                    └─> pwf_ablation ───────┼────────────────┤
                                     └─> baseline_estimates ──────────────────────┴─> benchmark_report

msf_ablation (report-only, the acquisition ablation for msf_uniform) reads pretrained,
msf, random_subset_ft, predictions and eval_bank and feeds benchmark_report.

Seeds are table columns and checkpoint-name parts (no partitions), so one run holds the
whole group and every blocking check gates everything downstream.
"""

import dagster as dg
import pandas as pd

from assets.common.paper import Paper
from assets.pfn_causal import checks, report, runs
from assets.pfn_causal.params import PFNCausalParams
from resources.artifacts import ArtifactsResource, load_checkpoint, save_checkpoint
from resources.compute import ComputeResource

paper = Paper("pfn_causal", params=PFNCausalParams)
FINETUNE_LOAD = "Every checkpoint reloads (weights_only, md5) with finite weights and finite predictions."
DECLARED = ("Fine-tuning SCMs and masks as declared: no eval-bank SCM among its training SCMs, steps × batch SCMs, "
            "declared subsets only (PWF: its target subset).")


def _seed_for(compute: ComputeResource):
    return lambda *keys: compute.seed_for(paper.slug, *keys)


def _bank(eval_bank: dict) -> dict:
    state, _ = load_checkpoint(eval_bank["bank"])
    return {"arrays": {k: v.numpy() for k, v in state.items()}, "targets": eval_bank["targets"]}


def _timed(artifacts: ArtifactsResource, name: str, rows: list[dict]) -> None:
    artifacts.record_timings(paper.slug, name, pd.DataFrame(rows))


@paper.asset(kinds={"numpy"}, description="Annotation: the SCM prior (d covariates + Y sink, MLP(8, tanh), "
             "p_edge), π_pre (|S| = 1: 0.9, |S| = 2: 0.1), the PWF targets, the coverage table of a pretraining-"
             "stream sample vs 2^d − 1 subsets, and the exponential-space count.")
def prior_config(context: dg.AssetExecutionContext, compute: ComputeResource) -> dict:
    p = paper.params(compute)
    with compute.blas_limits():
        value = runs.prior_config(p, _seed_for(compute), lambda *k: compute.rng(paper.slug, *k))
    value["stream_seeds"] = {str(s): runs.stream_seed(_seed_for(compute), s) for s in p.seeds}
    context.log.info(f"{len(value['targets'])} PWF targets; coverage sample of {value['coverage_queries']} queries")
    return value


@paper.asset(kinds={"numpy", "torch"}, description="Dataset: held-out SCMs (graphs + weights), D_obs at every "
             "context size (nested), the query grid (every subset × values ~ U(−1.5, 1.5)) plus the PWF targets "
             "and far points, and the Monte-Carlo truth (common antithetic noise) — a tensor file + fingerprints.")
def eval_bank(context: dg.AssetExecutionContext, prior_config: dict, compute: ComputeResource,
              artifacts: ArtifactsResource) -> dict:
    p = paper.params(compute)
    with compute.blas_limits():
        bank = runs.eval_bank(p, prior_config["targets"], compute.rng(paper.slug, "eval_bank"), context.log.info)
    ref = save_checkpoint(artifacts.checkpoint_path(paper.slug, "eval_bank"), bank["arrays"],
                          provenance=compute.provenance(paper.slug), config={"kind": "eval_bank"})
    return {"bank": ref, "fingerprints": bank["fingerprints"], "targets": prior_config["targets"],
            "query_kinds": [int(k) for k in bank["arrays"]["q_kind"]], "n_scms": p.eval.scms}


@paper.asset(gpu=True, deps=[eval_bank], description="Checkpoints: the zero-shot PFN per seed (π_pre, the shared "
             "loop), with its loss curve in the sidecar and the held-out covered nMSE before / after training.")
def pretrained(context: dg.AssetExecutionContext, compute: ComputeResource,
               artifacts: ArtifactsResource) -> pd.DataFrame:
    frame, timings = runs.pretrain(paper.params(compute), compute, artifacts, _seed_for(compute), context.log.info)
    _timed(artifacts, "pretrained", timings)
    return frame


def _finetune(regime: str, context, pretrained, compute, artifacts, targets=None):
    frame, trace, timings = runs.finetune(regime, pretrained, paper.params(compute), compute, artifacts,
                                          _seed_for(compute), targets, context.log.info)
    _timed(artifacts, regime, timings)
    return frame, trace


@paper.asset(gpu=True, description="Checkpoints: compute-matched continued pretraining (K more π_pre steps from "
             "the pretrained weights, K = PWF's steps).")
def continued_pretrain(context: dg.AssetExecutionContext, pretrained: pd.DataFrame, compute: ComputeResource,
                       artifacts: ArtifactsResource) -> pd.DataFrame:
    return _finetune("continued", context, pretrained, compute, artifacts)[0]


@paper.asset(gpu=True, description="Checkpoints: PWF per seed × target (S*, v*): K steps on prior SCMs with "
             "S = S*, v ~ N(v*, 0.25²); never the target's truth.")
def pwf(context: dg.AssetExecutionContext, pretrained: pd.DataFrame, prior_config: dict, compute: ComputeResource,
        artifacts: ArtifactsResource) -> pd.DataFrame:
    return _finetune("pwf", context, pretrained, compute, artifacts, prior_config["targets"])[0]


@paper.asset(gpu=True, description="Checkpoints + acquisition trace: MSF per seed — R rounds of loss estimation on "
             "fresh prior SCMs, the worst subset (+ Hamming bonus) added, fine-tuned on the picks mixed 50/50 with "
             "π_pre replay.")
def msf(context: dg.AssetExecutionContext, pretrained: pd.DataFrame, compute: ComputeResource,
        artifacts: ArtifactsResource) -> dict:
    frame, trace = _finetune("msf", context, pretrained, compute, artifacts)
    return {"checkpoints": frame.to_dict("records"), "trace": trace}


@paper.asset(gpu=True, description="Checkpoints + trace: random-subset fine-tuning — MSF's schedule, budget and "
             "replay with uniformly random picks (the control).")
def random_subset_ft(context: dg.AssetExecutionContext, pretrained: pd.DataFrame, compute: ComputeResource,
                     artifacts: ArtifactsResource) -> dict:
    frame, trace = _finetune("random_ft", context, pretrained, compute, artifacts)
    return {"checkpoints": frame.to_dict("records"), "trace": trace}


@paper.asset(kinds={"torch"}, description="Decision rule: a query goes to PWF when its score (mean NLL on fresh "
             "prior SCMs) exceeds the covered calibration queries' 95th percentile; verdicts on bank queries.")
def finetune_rule(context: dg.AssetExecutionContext, pretrained: pd.DataFrame, eval_bank: dict,
                  compute: ComputeResource) -> dict:
    compute.torch(threads=paper.params(compute).torch_threads)
    with compute.blas_limits():
        return runs.finetune_rule(pretrained, _bank(eval_bank), eval_bank["targets"], paper.params(compute),
                                  compute, _seed_for(compute), context.log.info)


@paper.asset(gpu=True, description="Ablation for pwf_local: PWF at K × m steps (first seed, first value of every "
             "target subset), nMSE on the bank's targets.")
def pwf_ablation(context: dg.AssetExecutionContext, pretrained: pd.DataFrame, eval_bank: dict,
                 compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    frame, timings = runs.pwf_ablation(pretrained, _bank(eval_bank), paper.params(compute), compute,
                                       _seed_for(compute), context.log.info)
    _timed(artifacts, "pwf_ablation", timings)
    return frame


@paper.asset(gpu=True, description="Ablation for msf_uniform: MSF re-run from the pretrained checkpoint of each "
             "msf_ablation seed (MSF's schedule, streams, replay, budget) with acquisition by the predicted mean's "
             "nMSE instead of mean NLL; worst-subset, mean and covered nMSE on the bank grid next to the run's "
             "zero-shot, MSF and random-subset predictions.")
def msf_ablation(context: dg.AssetExecutionContext, pretrained: pd.DataFrame, predictions: pd.DataFrame, msf: dict,
                 random_subset_ft: dict, eval_bank: dict, compute: ComputeResource,
                 artifacts: ArtifactsResource) -> pd.DataFrame:
    frame, timings = runs.msf_ablation(pretrained, predictions, msf["trace"] + random_subset_ft["trace"],
                                       _bank(eval_bank), paper.params(compute), compute, _seed_for(compute),
                                       context.log.info)
    _timed(artifacts, "msf_ablation", timings)
    return frame


@paper.asset(kinds={"sklearn"}, description="Baselines on every bank SCM × context size × query: oracle-graph "
             "g-formula (HistGradientBoosting per node), S-learner, naive E[Y | X_S = v].")
def baseline_estimates(context: dg.AssetExecutionContext, eval_bank: dict, compute: ComputeResource,
                       artifacts: ArtifactsResource) -> pd.DataFrame:
    frame, timings = runs.baseline_estimates(_bank(eval_bank), paper.params(compute), compute, _seed_for(compute),
                                             context.log.info)
    _timed(artifacts, "baseline_estimates", timings)
    return frame


@paper.asset(kinds={"torch", "pandas"}, description="Dataset: predicted μ (and variance) per seed × method × "
             "context size × bank SCM × query: zero-shot, continued, MSF, random-subset FT on every query; PWF "
             "on its target subset.")
def predictions(context: dg.AssetExecutionContext, pretrained: pd.DataFrame, continued_pretrain: pd.DataFrame,
                pwf: pd.DataFrame, msf: dict, random_subset_ft: dict, eval_bank: dict,
                compute: ComputeResource) -> pd.DataFrame:
    finetuned = {"continued": continued_pretrain, "pwf": pwf, "msf": pd.DataFrame(msf["checkpoints"]),
                 "random_ft": pd.DataFrame(random_subset_ft["checkpoints"])}
    compute.torch(threads=paper.params(compute).torch_threads)
    with compute.blas_limits():
        return runs.predictions(pretrained, finetuned, _bank(eval_bank), paper.params(compute), context.log.info)


@paper.asset(kinds={"duckdb", "markdown"}, description="nMSE by |S|, worst subset, PWF at / away from v*, MSF vs "
             "random, rule verdicts, baselines → warehouse rows, REPORT.md with plots, metrics.json, claims.")
def benchmark_report(context: dg.AssetExecutionContext, prior_config: dict, eval_bank: dict,
                     predictions: pd.DataFrame, baseline_estimates: pd.DataFrame, pretrained: pd.DataFrame,
                     msf: dict, random_subset_ft: dict, finetune_rule: dict, pwf_ablation: pd.DataFrame,
                     msf_ablation: pd.DataFrame, compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    p = paper.params(compute)
    bank = runs.bank_frame(_bank(eval_bank)["arrays"], eval_bank["targets"])
    curves = {f"seed {r.seed}": load_checkpoint(r.checkpoint)[1]["loss_curve"] for r in pretrained.itertuples()}
    timings = {name: artifacts.recorded_timings(paper.slug, name) for name in
               ("pretrained", "continued", "pwf", "msf", "random_ft", "pwf_ablation", "msf_ablation",
                "baseline_estimates")}
    built = report.build_report(prior_config, bank, predictions, baseline_estimates, pretrained, msf,
                                random_subset_ft, finetune_rule, pwf_ablation, p, curves, timings,
                                msf_ablation=msf_ablation)
    return paper.publish(context, compute, artifacts, built)


_BANK = {"eval_bank": eval_bank}

PAPER = paper.define(
    assets=[prior_config, eval_bank, pretrained, continued_pretrain, pwf, msf, random_subset_ft, finetune_rule,
            pwf_ablation, baseline_estimates, predictions, msf_ablation, benchmark_report],
    checks=[
        paper.gate(prior_config, "coverage_premise", "In a pretraining-stream sample every subset and size frequency "
                   "is within ±0.02 of π_pre and |S| ≥ 3 is drawn exactly 0 times.", checks.coverage_premise),
        paper.gate(eval_bank, "dag_acyclic_y_sink", "Every bank DAG is acyclic (networkx) and Y is a sink.",
                   checks.bank_graphs),
        paper.gate(eval_bank, "truth_precise_grid_complete", "MC SE of every μ < 0.02·sd(Y); finite; every SCM × "
                   "subset × value, every target and far point present.", checks.bank_truth),
        paper.gate(eval_bank, "disjoint_from_training", "Bank SCM fingerprints unique and disjoint from every "
                   "training / estimation stream (regenerated).", checks.bank_disjoint, uses_params=True,
                   additional={"prior_config": prior_config}),
        paper.gate(pretrained, "loads_back_finite", FINETUNE_LOAD, checks.checkpoints_load_back, uses_params=True),
        paper.gate(pretrained, "learned", "'Loss −20 %' (validation nMSE of the mean vs the untrained model) and "
                   "held-out covered nMSE ≤ 0.7.", checks.pretrained_learned, uses_params=True),
        paper.gate(pretrained, "training_nll_drop", "Literal 'loss −20 %' on the training NLL (warning only: "
                   "single-draw targets bound it).", checks.training_nll_drop, severity="warn"),
        paper.gate(continued_pretrain, "loads_back_finite", FINETUNE_LOAD, checks.checkpoints_load_back,
                   uses_params=True),
        paper.gate(continued_pretrain, "trained_as_declared", DECLARED, checks.trained_as_declared, uses_params=True,
                   additional=_BANK),
        paper.gate(pwf, "loads_back_finite", FINETUNE_LOAD, checks.checkpoints_load_back, uses_params=True),
        paper.gate(pwf, "trained_as_declared", DECLARED, checks.trained_as_declared, uses_params=True,
                   additional=_BANK),
        paper.gate(msf, "loads_back_finite", FINETUNE_LOAD, checks.finetuned_load_back, uses_params=True),
        paper.gate(msf, "trained_as_declared", DECLARED, checks.finetuned_as_declared, uses_params=True,
                   additional=_BANK),
        paper.gate(random_subset_ft, "loads_back_finite", FINETUNE_LOAD, checks.finetuned_load_back,
                   uses_params=True),
        paper.gate(random_subset_ft, "trained_as_declared", DECLARED, checks.finetuned_as_declared,
                   uses_params=True, additional=_BANK),
        paper.gate(finetune_rule, "threshold_valid", "Thresholds finite; calibration queries above it ≤ 5 % + 0.01.",
                   checks.rule_valid),
        paper.gate(baseline_estimates, "complete_finite", "One finite estimate per method × n × SCM × query.",
                   checks.baselines_complete, uses_params=True, additional=_BANK),
        paper.gate(predictions, "complete_finite", "Every PFN predicts every bank query (PWF: its target subset); "
                   "finite, variances positive.", checks.predictions_complete, uses_params=True, additional=_BANK),
    ],
    claims=["uncoverage_bias", "inconsistency", "pwf_local", "msf_uniform"],
    observations=["exponential_space", "nmse_by_size", "effect_normalised_ratio", "finetune_rule",
                  "pwf_steps_ablation", "msf_acquisition_ablation"],
)
