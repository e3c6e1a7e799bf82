"""PAC labeling as Dagster assets — wiring only (runs.py, method.py, router.py, benchmark.py,
checks.py and report.py do the work).

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    source_datasets ─┬─> ai_models (checkpoints) ─┬─> router (checkpoint + routing of the pool;
    paper_datasets ──┼─> expert_oracle ───────────┘         │   buys its calibration labels)
                     │                                      v
                     ├────────────────────────────> ai_annotations (every model's, CSV and routed rows)
                     └─> partitions (dataset × model × CI type, derived once) ─┐      │
                                                                               v      v
                         calibrated_thresholds (û and UCB curve per partition × trial seed)
                                  ├─> labeled_datasets (Ỹ + provenance, trial 0)
                                  └─> trial_outcomes (error / save / cost per trial, baselines)
    naive_split_study ────────────────────────────────┴─> benchmark_report ─> claims

Datasets are a dimension of every table (column dataset_id), so one run of the group labels
every dataset and blocking checks gate all of them. The paper's CSVs come from params
`data_dir` (or env PAPERLAB_PAC_LABELS_DIR) and are skipped with a logged reason when absent.
"""

import dagster as dg
import pandas as pd

from assets.common.paper import Paper
from assets.common.report import markdown_table
from assets.pac_labels import benchmark, checks, data, report, runs
from assets.pac_labels.params import PACLabelsParams
from resources.artifacts import ArtifactsResource, save_checkpoint
from resources.compute import ComputeResource
from resources.profiles import REPO_ROOT

paper = Paper("pac_labels", params=PACLabelsParams)


def _seed_for(compute: ComputeResource):
    return lambda *keys: compute.seed_for(paper.slug, *keys)


def _data_dir(compute: ComputeResource):
    return data.resolve_data_dir(paper.params(compute).data_dir, REPO_ROOT)


# ------------------------------------------------------------------------------ datasets
@paper.asset(kinds={"pandas", "sklearn"}, description="Generated / shipped datasets with a disjoint train split "
             "(for the AI model) and a pool to label: sklearn digits, make_classification (10 classes, 10% "
             "label noise), Friedman #1 (standardized target). Features x_* (NaN where a dataset has fewer).")
def source_datasets(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    frame = runs.source_datasets(paper.params(compute), _seed_for(compute))
    counts = frame.groupby(["dataset_id", "split"]).size()
    context.log.info(f"rows per dataset/split: {counts.to_dict()}")
    context.add_output_metadata({"rows_per_split": dg.MetadataValue.json(
        {f"{d}/{s}": int(v) for (d, s), v in counts.items()}), **compute.provenance(paper.slug)})
    return frame


@paper.asset(kinds={"pandas"}, description="The paper's own CSVs (tijana-zrnic/pac-labels, MIT): label, AI "
             "label and confidence columns as read (strings), one dataset_id each; read from params data_dir "
             "or env PAPERLAB_PAC_LABELS_DIR, skipped with a logged reason when absent.")
def paper_datasets(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    directory = _data_dir(compute)
    frame, status = data.paper_tables(directory, paper.params(compute).paper_datasets, context.log.info)
    for name, text in status.items():
        if text.startswith("skipped"):
            context.log.warning(f"paper dataset {name} {text} (set data_dir or {data.DATA_DIR_ENV_VAR})")
    context.add_output_metadata({"status": dg.MetadataValue.json(status), "data_dir": str(directory)})
    return frame


@paper.asset(kinds={"python"}, description="The partitions to label, derived once: each configured "
             "dataset × model × CI type (with K draws), plus one per paper CSV that was loaded.")
def partitions(context: dg.AssetExecutionContext, paper_datasets: pd.DataFrame, compute: ComputeResource) -> list:
    specs = runs.partition_specs(paper.params(compute), sorted(set(paper_datasets["dataset_id"])))
    context.add_output_metadata({"partitions": dg.MetadataValue.json([runs.spec_key(s) for s in specs])})
    return specs


# ------------------------------------------------------------------------------ models
@paper.asset(kinds={"sklearn", "torch"}, description="Checkpoints: the 'pre-trained AI models' (logistic "
             "regression and Gaussian NB on digits, a weak MLP on the synthetic task, a bootstrap "
             "GradientBoosting ensemble on Friedman #1), trained on the train split; state_dict of arrays + "
             "JSON sidecar.")
def ai_models(context: dg.AssetExecutionContext, source_datasets: pd.DataFrame, compute: ComputeResource,
              artifacts: ArtifactsResource) -> dict:
    def save(name, state, **sidecar):
        return save_checkpoint(artifacts.checkpoint_path(paper.slug, name), state,
                               provenance=compute.provenance(paper.slug), device="cpu", **sidecar)

    out = runs.train_models(paper.params(compute), source_datasets, _seed_for(compute), save, context.log.info)
    context.add_output_metadata({"models": dg.MetadataValue.json(
        {k: round(v["train_metric"], 4) for k, v in out.items()})})
    return out


@paper.asset(kinds={"pandas"}, description="Hidden expert labels of every pool (dataset_id, item_id, y; "
             "class codes for 0-1 loss). Read only through method.ExpertOracle, which keeps the purchase ledger.")
def expert_oracle(context: dg.AssetExecutionContext, source_datasets: pd.DataFrame, paper_datasets: pd.DataFrame,
                  compute: ComputeResource) -> pd.DataFrame:
    frame = runs.expert_labels(paper.params(compute), source_datasets, paper_datasets)
    context.add_output_metadata({"items": dg.MetadataValue.json(frame.groupby("dataset_id").size().to_dict())})
    return frame


@paper.asset(kinds={"torch"}, description="PAC router: a softmax weighter over the cheap and the expensive "
             "model and a learned uncertainty MLP, trained on a calibration split whose expert labels are "
             "bought; value = its checkpoint reference, the calibration split and the routing (model, "
             "uncertainty logit) of the rest of the pool.")
def router(context: dg.AssetExecutionContext, source_datasets: pd.DataFrame, ai_models: dict,
           expert_oracle: pd.DataFrame, compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    seed = compute.seed_for(paper.slug, "router")
    state, config, record = runs.train_router(
        compute.torch(seed), paper.params(compute), source_datasets, ai_models, expert_oracle,
        compute.rng(paper.slug, "router_calibration"), seed, context.log.info)
    ref = save_checkpoint(artifacts.checkpoint_path(paper.slug, "router"), state,
                          provenance=compute.provenance(paper.slug), config=config, seed=seed, device="cpu",
                          dataset=record["dataset"], models=record["models"], costs=record["costs"],
                          n_classes=record["n_classes"], calibration_items=len(record["calibration_item_ids"]))
    context.add_output_metadata({"checkpoint": ref["checkpoint"], "checkpoint_md5": ref["md5"],
                                 "calibration_items": len(record["calibration_item_ids"]),
                                 "routed_items": len(record["routed"]["item_id"]),
                                 "share_per_model": dg.MetadataValue.json(record["share_per_model"])})
    return {**ref, "seed": seed, **record}


@paper.asset(kinds={"pandas"}, description="Every AI annotation of every pool: Ŷ, confidence, uncertainty "
             "U = 1 − confidence + seeded 1e-5 jitter (ties broken), loss, per-item model cost. Generated pools "
             "are predicted from the reloaded checkpoints, paper pools come from their CSVs, and the router's "
             "rows (model 'router') label the pool minus its calibration split.")
def ai_annotations(context: dg.AssetExecutionContext, source_datasets: pd.DataFrame, paper_datasets: pd.DataFrame,
                   ai_models: dict, router: dict, compute: ComputeResource) -> pd.DataFrame:
    frame = runs.annotations(paper.params(compute), source_datasets, paper_datasets, ai_models, router,
                             context.log.info)
    context.add_output_metadata({"partitions": dg.MetadataValue.json(
        frame.groupby(["dataset_id", "model"]).size().rename("items").reset_index().to_dict("records"))})
    return frame


# ------------------------------------------------------------------------------ PAC labeling
@paper.asset(kinds={"numpy"}, description="Per partition × trial seed: PAC's threshold û (largest u with "
             "UCB_α(u) ≤ ε, −inf when none) and the paired plug-in threshold (L̂(u) ≤ ε) on the same K draws; "
             "trial 0 carries the UCB curve.")
def calibrated_thresholds(context: dg.AssetExecutionContext, ai_annotations: pd.DataFrame, partitions: list,
                          expert_oracle: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    frame = runs.calibrate(paper.params(compute), partitions, ai_annotations, expert_oracle, _seed_for(compute),
                           context.log.info)
    context.add_output_metadata({"trials_total": len(frame)})
    return frame


@paper.asset(kinds={"pandas"}, description="The product: labels Ỹ with provenance (ai / expert_sampled / "
             "expert_threshold) for every item of every partition, for trial 0, with the oracle's ledger reason.")
def labeled_datasets(context: dg.AssetExecutionContext, calibrated_thresholds: pd.DataFrame,
                     ai_annotations: pd.DataFrame, partitions: list, expert_oracle: pd.DataFrame) -> pd.DataFrame:
    frame = runs.label_first_trials(partitions, ai_annotations, expert_oracle, calibrated_thresholds)
    counts = frame.groupby(["dataset_id", "model", "ci", "provenance"]).size().unstack(fill_value=0).reset_index()
    context.add_output_metadata({"provenance_counts": dg.MetadataValue.md(markdown_table(counts))})
    return frame


@paper.asset(kinds={"pandas"}, description="Every trial re-labelled from its seed and û and scored against "
             "the full truth: realized error, fraction saved, cost, purchases per reason, ledger = provenance; "
             "plus AI-only, naive-threshold and all-expert baselines.")
def trial_outcomes(context: dg.AssetExecutionContext, calibrated_thresholds: pd.DataFrame,
                   ai_annotations: pd.DataFrame, partitions: list, expert_oracle: pd.DataFrame,
                   compute: ComputeResource) -> pd.DataFrame:
    return runs.score_trials(paper.params(compute), partitions, ai_annotations, expert_oracle,
                             calibrated_thresholds, context.log.info)


@paper.asset(kinds={"sklearn"}, description="Naive confidence threshold on digits for several train/pool "
             "split seeds (it is deterministic given the split): its error, labels saved and AI-only error.")
def naive_split_study(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    frame = runs.naive_split_study(paper.params(compute), _seed_for(compute))
    context.log.info(frame.groupby("model")[["naive_error", "naive_save", "ai_only_error"]].median().to_string())
    return frame


# ------------------------------------------------------------------------------ report
@paper.asset(kinds={"duckdb", "markdown"}, description="PAC labels vs plug-in, naive threshold, AI only and "
             "all-expert over trials: violation frequency, error quantile, labels saved, cost → warehouse rows, "
             "REPORT.md with plots, metrics.json, claims.")
def benchmark_report(context: dg.AssetExecutionContext, trial_outcomes: pd.DataFrame,
                     calibrated_thresholds: pd.DataFrame, naive_split_study: pd.DataFrame,
                     ai_annotations: pd.DataFrame, expert_oracle: pd.DataFrame, router: dict,
                     compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    p = paper.params(compute)
    built = report.build_report(trial_outcomes, calibrated_thresholds, naive_split_study, p,
                                data.paper_status(_data_dir(compute), p.paper_datasets), compute.profile,
                                compute.base_seed, ai_annotations, expert_oracle, router)
    return paper.publish(context, compute, artifacts, built)


PAPER = paper.define(
    assets=[source_datasets, paper_datasets, partitions, ai_models, expert_oracle, router, ai_annotations,
            calibrated_thresholds, labeled_datasets, trial_outcomes, naive_split_study, benchmark_report],
    checks=[
        paper.gate(source_datasets, "schema", "GX: labels present, known splits and datasets; train and pool "
                   "per dataset; finite features.", checks.source_schema),
        paper.gate(paper_datasets, "tables_valid", "Each paper CSV: columns present, no NaN, confidence in "
                   "[0, 1], AI labels in the label space (errors name the column and rows).",
                   checks.paper_tables_valid, uses_params=True),
        paper.gate(ai_models, "loads_back", "Checkpoints reload (weights_only), finite, better than chance.",
                   checks.models_load_back),
        paper.gate(expert_oracle, "complete", "One finite hidden label per pool item.", checks.oracle_complete),
        paper.gate(router, "loads_back", "Router checkpoint reloads and reproduces the routed annotations.",
                   checks.router_loads_back,
                   additional={"source_datasets": source_datasets, "ai_models": ai_models}),
        paper.gate(ai_annotations, "valid", "Confidence finite in [0, 1]; uncertainty ties broken; Ŷ in the "
                   "label space; ε, α in (0, 1) and K ≤ pool for every partition.", checks.annotations_valid,
                   uses_params=True, additional={"expert_oracle": expert_oracle, "partitions": partitions}),
        paper.gate(ai_annotations, "not_trivial", "Warning when AI-only labels already meet ε.",
                   checks.annotations_not_trivial, uses_params=True, blocking=False, severity="warn",
                   additional={"expert_oracle": expert_oracle}),
        paper.gate(calibrated_thresholds, "valid", "All trials present; û finite or −inf only when infeasible; "
                   "sampled purchases ≤ K.", checks.thresholds_valid, uses_params=True),
        paper.gate(labeled_datasets, "complete_and_ledger", "Ỹ complete; provenance known; AI labels untouched; "
                   "oracle ledger = provenance item by item.", checks.labeled_complete,
                   additional={"ai_annotations": ai_annotations}),
        paper.gate(trial_outcomes, "ledger_matches_provenance", "In every trial the oracle's purchase ledger "
                   "equals the provenance counts and AI-labelled items keep Ŷ.", checks.outcomes_ledger),
    ],
    claims=["violation_control", "paper_stance", "paper_misinfo", "paper_imagenetv2", "paper_alphafold",
            "naive_fails_overconfident", "plugin_violates", "budget_save", "router_cost"],
    observations=list(benchmark.OBSERVATIONS),
)
