"""dispat as Dagster assets — wiring only (data.py, serialize.py, lm.py, method.py, baselines.py,
runs.py, checks.py, benchmark.py, report.py do the work).

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    raw_tables ─> splits ─> serialized_corpus ─> tokenizer ─> policy_sft ─┬─> policy_sft_matched ─┐
                                                                          └─> pseudo_anomalies ─> policy_dispat
                                                                                                      │
              benchmark_report <─ thresholds <─ scores <──────────────────────────────────────────────┘
                      ^── alignment (C2ST, no-collapse), speed_benchmark (wall clock),
                          renorm_ablation (policy_sft + pseudo_anomalies + policy_dispat: issue 48's ablation)

Dataset × seed are table columns (no partitions), so one run holds the whole group and every
blocking check gates everything downstream.
"""

import dagster as dg
import pandas as pd

from assets.common.paper import Paper
from assets.dispat import checks, report, runs
from assets.dispat.params import DispatParams
from resources.artifacts import ArtifactsResource, resolve_data_ref, save_checkpoint
from resources.compute import ComputeResource

paper = Paper("dispat", params=DispatParams)
TIMED = ("policy_sft", "policy_sft_matched", "pseudo_anomalies", "policy_dispat", "renorm_ablation", "scores")


def _seed_for(compute: ComputeResource):
    return lambda *keys: compute.seed_for(paper.slug, *keys)


def _rng_for(compute: ComputeResource):
    return lambda *keys: compute.rng(paper.slug, *keys)


def _saver(compute: ComputeResource, artifacts: ArtifactsResource):
    def save(name: str, state: dict, config=None, seed=None, **extra) -> dict:
        return save_checkpoint(artifacts.checkpoint_path(paper.slug, name), state,
                               provenance=compute.provenance(paper.slug), config=config, seed=seed, **extra)
    return save


def _resolve(ref: str) -> str:
    return str(resolve_data_ref(ref))


def _workers(compute: ComputeResource, jobs: int) -> int:
    return compute.workers(jobs, paper.params(compute).workers)


def _cells(compute: ComputeResource) -> int:
    return len(runs.cells(paper.params(compute)))


@paper.asset(kinds={"pandas"}, description="Dataset: synthetic_transactions (generated pool: amount, hour, "
             "category, country, merchant, description; global / local / dependency / clustered anomalies), "
             "statsmodels fair (6,366 rows), sklearn breast_cancer (10 'mean' features; malignant = anomalous).")
def raw_tables(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    frame = runs.raw_tables(paper.params(compute), _rng_for(compute))
    context.add_output_metadata({"rows": dg.MetadataValue.json(frame.groupby("dataset").size().to_dict())})
    return frame


@paper.asset(kinds={"pandas"}, description="Dataset: per dataset × seed, train and validation (normal only) and "
             "test (normal + 15 % anomalies; fair: 2–3 values swapped from train rows).")
def splits(context: dg.AssetExecutionContext, raw_tables: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    frame = runs.splits(raw_tables, paper.params(compute), _rng_for(compute))
    context.add_output_metadata({"rows": dg.MetadataValue.json(
        frame.groupby(["dataset", "split"]).size().rename("n").reset_index().to_dict("records"))})
    return frame


@paper.asset(kinds={"pandas"}, description="Dataset: schema fitted on train (numeric at fixed decimals, "
             "categorical levels, truncated text), formatted values and 'col is value, …' text under a seeded "
             "random column order per row.")
def serialized_corpus(context: dg.AssetExecutionContext, splits: pd.DataFrame, compute: ComputeResource
                      ) -> pd.DataFrame:
    return runs.serialized_corpus(splits, paper.params(compute), _rng_for(compute))


@paper.asset(kinds={"json"}, description="Checkpoint: per cell a tokenizers BPE (vocab ≈ 512) on train values, "
             "one token per digit, reserved column-name / 'is' / ',' tokens; token round-trip rate, longest row.")
def tokenizer(context: dg.AssetExecutionContext, serialized_corpus: pd.DataFrame, compute: ComputeResource) -> dict:
    value = runs.tokenizer(serialized_corpus, paper.params(compute))
    context.add_output_metadata({"vocab_sizes": dg.MetadataValue.json(
        {f"{c['dataset']}/{c['seed']}": c["vocab_size"] for c in value["cells"]})})
    return value


@paper.asset(gpu=True, description="Checkpoints: θ0 = AnoLLM-SFT — the shared tiny LM (2 layers, d = 64) trained "
             "from scratch on random-order serialisations of normal train rows.")
def policy_sft(context: dg.AssetExecutionContext, serialized_corpus: pd.DataFrame, tokenizer: dict,
               compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    frame, timings = runs.policy_sft(serialized_corpus, tokenizer, p, _seed_for(compute), _saver(compute, artifacts),
                                     _workers(compute, _cells(compute)), context.log.info, compute.resolved_device())
    artifacts.record_timings(paper.slug, "policy_sft", pd.DataFrame(timings))
    return frame


@paper.asset(gpu=True, description="Checkpoints: AnoLLM compute-matched — θ0 + T·K more SFT steps with 2 × batch "
             "rows per step (a self-play step's tokens): the essential control.")
def policy_sft_matched(context: dg.AssetExecutionContext, serialized_corpus: pd.DataFrame, tokenizer: dict,
                       policy_sft: pd.DataFrame, compute: ComputeResource, artifacts: ArtifactsResource
                       ) -> pd.DataFrame:
    p = paper.params(compute)
    frame, timings = runs.policy_sft_matched(serialized_corpus, tokenizer, policy_sft, p, _seed_for(compute),
                                             _saver(compute, artifacts), _resolve, _workers(compute, _cells(compute)),
                                             context.log.info, compute.resolved_device())
    artifacts.record_timings(paper.slug, "policy_sft_matched", pd.DataFrame(timings))
    return frame


@paper.asset(gpu=True, description="Annotation: round-0 pseudo-anomalies — N_gen = |train| rows per cell sampled "
             "from θ0 by schema-constrained decoding (values only); unparsable rows kept as rejected.")
def pseudo_anomalies(context: dg.AssetExecutionContext, serialized_corpus: pd.DataFrame, tokenizer: dict,
                     policy_sft: pd.DataFrame, compute: ComputeResource, artifacts: ArtifactsResource
                     ) -> pd.DataFrame:
    p = paper.params(compute)
    frame, timings = runs.pseudo_anomalies(serialized_corpus, tokenizer, policy_sft, p, _seed_for(compute), _resolve,
                                           _workers(compute, _cells(compute)), context.log.info,
                                           compute.resolved_device())
    artifacts.record_timings(paper.slug, "pseudo_anomalies", pd.DataFrame(timings))
    return frame


@paper.asset(gpu=True, description="Checkpoints: θ_T after T self-play rounds of L_f(θ; θt) + γ·SFT (f-SPIN-style "
             "reconstruction, implicit log-ratio critic); one row per round: D̂_f, validation NLL, accepted, samples.")
def policy_dispat(context: dg.AssetExecutionContext, serialized_corpus: pd.DataFrame, tokenizer: dict,
                  policy_sft: pd.DataFrame, pseudo_anomalies: pd.DataFrame, compute: ComputeResource,
                  artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    frame, timings = runs.policy_dispat(serialized_corpus, tokenizer, policy_sft, pseudo_anomalies, p,
                                        _seed_for(compute), _saver(compute, artifacts), _resolve,
                                        _workers(compute, len(runs.dispat_runs(p))), context.log.info,
                                        compute.resolved_device())
    artifacts.record_timings(paper.slug, "policy_dispat", pd.DataFrame(timings))
    return frame


@paper.asset(gpu=True, description="Ablation (report-only, issue 48): the first renorm_ablation.rounds self-play "
             "rounds from the run's θ0 on its round-0 pseudo-anomalies, renormalised log-ratio (the run's "
             "policy_dispat rows) vs unconstrained vs a contrast-free control (samples = train rows), same seeds; "
             "per round validation NLL before → after, kept, log P(allowed).")
def renorm_ablation(context: dg.AssetExecutionContext, serialized_corpus: pd.DataFrame, tokenizer: dict,
                    policy_sft: pd.DataFrame, pseudo_anomalies: pd.DataFrame, policy_dispat: pd.DataFrame,
                    compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    jobs = len(runs.ablation_cells(p)) * (len(runs.ablation_arms(p)) - 1)
    frame, timings = runs.renorm_ablation(serialized_corpus, tokenizer, policy_sft, pseudo_anomalies, policy_dispat,
                                          p, _seed_for(compute), _resolve, _workers(compute, jobs), context.log.info,
                                          compute.resolved_device())
    artifacts.record_timings(paper.slug, "renorm_ablation", pd.DataFrame(timings))
    return frame


@paper.asset(gpu=True, description="Per val/test row × method: anomaly score — DiSPaT, AnoLLM-SFT, AnoLLM matched "
             "(mean over 8 column orders of value-span NLL; DiSPaT with per-column attributions), IForest, LOF, "
             "OCSVM, ECOD, COPOD, KNN, AutoEncoder, DeepSVDD.")
def scores(context: dg.AssetExecutionContext, serialized_corpus: pd.DataFrame, tokenizer: dict,
           policy_sft: pd.DataFrame, policy_sft_matched: pd.DataFrame, policy_dispat: pd.DataFrame,
           compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    frame, timings = runs.scores(serialized_corpus, tokenizer, policy_sft, policy_sft_matched, policy_dispat, p,
                                 _seed_for(compute), _resolve, _workers(compute, _cells(compute)), context.log.info,
                                 compute.resolved_device())
    artifacts.record_timings(paper.slug, "scores", pd.DataFrame(timings))
    return frame


@paper.asset(gpu=True, description="Annotation: C2ST AUC (validation rows vs samples) for θ0 and θ_T, validation "
             "NLL of both (no-collapse).")
def alignment(context: dg.AssetExecutionContext, serialized_corpus: pd.DataFrame, tokenizer: dict,
              policy_sft: pd.DataFrame, policy_dispat: pd.DataFrame, pseudo_anomalies: pd.DataFrame,
              compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    return runs.alignment(serialized_corpus, tokenizer, policy_sft, policy_dispat, pseudo_anomalies, p,
                          _seed_for(compute), _resolve, _workers(compute, _cells(compute)), context.log.info,
                          compute.resolved_device())


@paper.asset(kinds={"pandas"}, description="Calibrated threshold per cell × method: (1 − α) quantile of "
             "validation-normal scores; validation FPR, test AUROC / AUPRC / F1 / FPR, AUROC per anomaly type.")
def thresholds(context: dg.AssetExecutionContext, scores: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    return runs.thresholds(scores, paper.params(compute))


@paper.asset(volatile=True, kinds={"torch"}, deps=[thresholds], description="Benchmark (wall clock, a run "
             "record): AnoLLM scoring rows/s vs IForest; greedy sampling rows/s with vs without the KV cache.")
def speed_benchmark(context: dg.AssetExecutionContext, serialized_corpus: pd.DataFrame, tokenizer: dict,
                    policy_dispat: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    return runs.speed_benchmark(serialized_corpus, tokenizer, policy_dispat, paper.params(compute), _resolve,
                                compute.resolved_device())


@paper.asset(kinds={"duckdb", "markdown"}, description="AUROC / AUPRC / F1 / FPR per method × dataset × seed, "
             "per-round curves, C2ST, the renormalisation ablation → warehouse rows, REPORT.md with plots, claims.")
def benchmark_report(context: dg.AssetExecutionContext, thresholds: pd.DataFrame, scores: pd.DataFrame,
                     alignment: pd.DataFrame, policy_dispat: pd.DataFrame, policy_sft: pd.DataFrame,
                     policy_sft_matched: pd.DataFrame, pseudo_anomalies: pd.DataFrame,
                     speed_benchmark: pd.DataFrame, renorm_ablation: pd.DataFrame, compute: ComputeResource,
                     artifacts: ArtifactsResource) -> dict:
    timings = {name: artifacts.recorded_timings(paper.slug, name) for name in TIMED}
    built = report.build_report(thresholds, scores, alignment, policy_dispat, policy_sft, policy_sft_matched,
                                pseudo_anomalies, speed_benchmark, paper.params(compute), timings, renorm_ablation)
    return paper.publish(context, compute, artifacts, built)


PAPER = paper.define(
    assets=[raw_tables, splits, serialized_corpus, tokenizer, policy_sft, policy_sft_matched, pseudo_anomalies,
            policy_dispat, renorm_ablation, scores, alignment, thresholds, speed_benchmark, benchmark_report],
    checks=[
        paper.gate(splits, "normal_train_one_schema", "Train/val contamination 0; test anomaly ratio in [0.05, 0.2]; "
                   "labels non-null; one schema (columns, types, no undeclared missing values); test levels ⊆ train "
                   "∪ declared novel.", checks.splits_valid, uses_params=True),
        paper.gate(serialized_corpus, "round_trip", "Every serialised row parses back to its formatted values "
                   "(100 %).", checks.corpus_round_trip),
        paper.gate(tokenizer, "token_round_trip_context", "Token round trip 100 %; every row fits the context.",
                   checks.tokenizer_valid),
        paper.gate(policy_sft, "finite_learned", "θ0 finite; SFT lowered the loss.", checks.policies_learned),
        paper.gate(policy_sft_matched, "finite", "Matched control finite.", checks.policies_finite),
        paper.gate(pseudo_anomalies, "parse_no_collapse", "Samples parse ≥ 0.9; ≤ 0.5 copy a train row.",
                   checks.generated_valid, uses_params=True),
        paper.gate(policy_dispat, "rounds_parse_no_collapse", "Every round's samples parse ≥ 0.9 and copy train rows "
                   "≤ 0.5; finite D̂_f and validation NLL.", checks.rounds_valid, uses_params=True),
        paper.gate(scores, "finite_scores", "No NaN/inf score.", checks.scores_finite),
        paper.gate(thresholds, "validation_fpr", "Validation FPR within ±0.01 of α for every cell and method.",
                   checks.thresholds_calibrated, uses_params=True),
    ],
    claims=["beats_matched", "beats_non_llm", "alignment", "calibrated_fpr"],
    observations=["f_variants", "dispat_vs_sft", "best_method", "speed", "renorm_ablation"],
)
