"""VIAR as Dagster assets — wiring only (data.py, tokenizer.py, model.py, metrics.py, runs.py,
checks.py, benchmark.py and report.py do the work).

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    images ─┬─> eval_classifier ─> reference_stats ──────────────────────────────┐
            └─> msvq_tokenizer ─> token_pyramids ─┬─> var_models ─┐              │
                                                  ├─> viar_models ┼─> iteration_schedule
                                                  └─> memory_profile             │
              samples (model × schedule × seed) <─┘               │              │
              ├─> sample_quality ─┐    throughput, convergence_profile           │
              └───────────────────┴──────────────> benchmark_report ─> claims v1–v6

var_models and viar_models come from one step (the multi-asset ar_models), so all their training
runs share the worker pool.

Dagster partitions are not used: dataset × model × depth × schedule × seed are columns of
the tables and parts of the checkpoint names, so one run of the group lets every blocking
check gate everything downstream of it. Wall-clock seconds (training, sampling) go to the
materialization metadata; `throughput` is itself a wall-clock measurement (volatile).
"""

import dagster as dg
import pandas as pd

from assets.common.paper import Paper
from assets.common.tags import gpu_asset_kwargs
from assets.viar import benchmark, checks, data, report, runs
from assets.viar.params import VIARRunParams
from resources.artifacts import ArtifactsResource
from resources.compute import ComputeResource

paper = Paper("viar", params=VIARRunParams)


def _meta(compute: ComputeResource, **extra) -> dict:
    return {**compute.provenance(paper.slug), **extra}


# ------------------------------------------------------------------------------ data
@paper.asset(kinds={"pandas"}, description="Dataset: sklearn's bundled 8×8 digits (stratified train/val/test) and "
             "seeded procedural coloured shapes (8 classes), pixels in [-1, 1], one row per image.")
def images(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    frame = runs.build_images(paper.params(compute), lambda *k: compute.seed_for(paper.slug, *k), context.log.info)
    context.add_output_metadata({
        "rows_per_dataset_split": dg.MetadataValue.json(
            {f"{d}/{s}": int(n) for (d, s), n in frame.groupby(["dataset", "split"]).size().items()}),
        **_meta(compute, generator_version=data.GENERATOR_VERSION)})
    return frame


# ------------------------------------------------------------------------------ evaluation network
@paper.asset(gpu=True, description="Checkpoint: small CNN trained on the train split only, used solely for "
             "metrics (FCD/sFCD/KID/class consistency/precision-recall); test accuracy in the value.")
def eval_classifier(context: dg.AssetExecutionContext, images: pd.DataFrame, compute: ComputeResource,
                    artifacts: ArtifactsResource) -> dict:
    out = runs.train_classifiers(images, paper.params(compute), compute, artifacts, context.log.info)
    context.add_output_metadata({"test_accuracy": dg.MetadataValue.json(
        {d: round(v["test_accuracy"], 4) for d, v in out.items()})})
    return out


@paper.asset(kinds={"numpy", "torch"}, description="Calibrated reference: classifier features of the real test "
             "(and val) split and the real-vs-real noise floors (FCD/sFCD/KID of a train subset of the "
             "generated-set size vs test; FCD between two disjoint test halves).")
def reference_stats(context: dg.AssetExecutionContext, images: pd.DataFrame, eval_classifier: dict,
                    compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    return runs.reference_stats(images, eval_classifier, paper.params(compute), compute, artifacts, context.log.info)


# ------------------------------------------------------------------------------ tokenizer
@paper.asset(gpu=True, description="Checkpoint: VAR-style multi-scale residual VQ-VAE (shared codebook, φ residual "
             "convs, straight-through, β = 0.25 commitment, dead-code restart), trained on the train split, then "
             "frozen. Validation reconstruction MSE and codebook usage.")
def msvq_tokenizer(context: dg.AssetExecutionContext, images: pd.DataFrame, compute: ComputeResource,
                   artifacts: ArtifactsResource) -> dict:
    out, seconds = runs.train_tokenizers(images, paper.params(compute), compute, artifacts, context.log.info)
    context.add_output_metadata({
        "val": dg.MetadataValue.json({d: {k: v[k] for k in ("recon_mse", "codebook_usage", "codes_used_per_scale")}
                                      for d, v in out.items()}),
        "train_seconds": dg.MetadataValue.json(seconds)})
    return out


@paper.asset(kinds={"pandas", "torch"}, description="Dataset: every image's token ids scale by scale (L = Σ p_k²) "
             "and its VAR teacher-forcing inputs (area-downsampled cumulative f̂), from the frozen tokenizer.")
def token_pyramids(context: dg.AssetExecutionContext, images: pd.DataFrame, msvq_tokenizer: dict,
                   compute: ComputeResource) -> pd.DataFrame:
    return runs.token_pyramids(images, msvq_tokenizer, paper.params(compute), compute, context.log.info)


# ------------------------------------------------------------------------------ AR models
def _training_timing(artifacts: ArtifactsResource) -> pd.DataFrame | None:
    parts = [artifacts.recorded_timings(paper.slug, name) for name in ("var_models", "viar_models")]
    parts = [p for p in parts if p is not None]
    return pd.concat(parts, ignore_index=True)[runs.TRAINING_TIMING] if parts else None


AR_MODELS = {
    "var_models": ("var", "Checkpoints: VAR baselines (explicit AdaLN stacks) at every ladder depth × seed, same "
                   "width, tokenizer, steps, batch and optimiser as VIAR."),
    "viar_models": ("viar", "Checkpoints: VIAR (pre-blocks + one implicit block with Proj([z, x]) + post-blocks) "
                    "trained with stochastic Jacobian-free backprop (n ~ U{0..N} detached, m ~ U{1..M} with "
                    "gradient), one per seed."),
}
_GPU = gpu_asset_kwargs()


@dg.multi_asset(
    name=f"{paper.slug}__ar_models", group_name=paper.slug, pool=_GPU["pool"], op_tags=_GPU["op_tags"], can_subset=True,
    outs={name: dg.AssetOut(key=paper.key(name), description=text, kinds=_GPU["kinds"], is_required=False,
                            code_version=paper.code_version())
          for name, (_, text) in AR_MODELS.items()},
    ins={name: dg.AssetIn(key=paper.key(name)) for name in ("token_pyramids", "msvq_tokenizer")})
def ar_models(context: dg.AssetExecutionContext, token_pyramids: pd.DataFrame, msvq_tokenizer: dict,
              compute: ComputeResource, artifacts: ArtifactsResource):
    """var_models and viar_models, trained in one step so that all their runs share the worker
    pool longest first (two steps in the gpu pool ran one after the other and left a worker idle
    for the last VIAR run). Selecting one of them trains only its runs."""
    p = paper.params(compute)
    chosen = [name for name in AR_MODELS if name in context.selected_output_names]
    plan = {"var": runs.var_runs(p), "viar": runs.viar_runs(p)}
    frame, timing = runs.train_models([r for name in chosen for r in plan[AR_MODELS[name][0]]], token_pyramids,
                                      msvq_tokenizer, p, compute, artifacts, context.log.info)
    for name in chosen:
        mine = (frame["kind"] == AR_MODELS[name][0]).to_numpy()
        part, part_timing = frame[mine].reset_index(drop=True), timing[mine].reset_index(drop=True)
        artifacts.record_timings(paper.slug, name, part_timing)
        yield dg.Output(part, output_name=name, metadata={
            "runs": len(part), "train_seconds_total": float(part_timing["train_seconds"].sum())})


# ------------------------------------------------------------------------------ calibrated schedule
@paper.asset(gpu=True, description="Calibrated threshold: per VIAR run, the fewest per-scale implicit iterations "
             "whose held-out (val) per-scale token NLL is within the tolerance of the converged schedule; val FCD "
             "of calibrated vs converged reported alongside.")
def iteration_schedule(context: dg.AssetExecutionContext, viar_models: pd.DataFrame, token_pyramids: pd.DataFrame,
                       msvq_tokenizer: dict, eval_classifier: dict, reference_stats: dict,
                       compute: ComputeResource) -> pd.DataFrame:
    return runs.calibrate_schedules(viar_models, token_pyramids, msvq_tokenizer, eval_classifier, reference_stats,
                                    paper.params(compute), compute, context.log.info)


# ------------------------------------------------------------------------------ samples
@paper.asset(gpu=True, description="Dataset: generated images for every model × schedule × seed (per_class per "
             "class, same CFG ramp, top-p and sampling seed for every model), stored as tensor files; one row per "
             "run with FLOPs/image (sampling wall time in the metadata).")
def samples(context: dg.AssetExecutionContext, var_models: pd.DataFrame, viar_models: pd.DataFrame,
            iteration_schedule: pd.DataFrame, msvq_tokenizer: dict, compute: ComputeResource,
            artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    frame, seconds = runs.draw_samples(runs.sampling_runs(p, var_models, viar_models, iteration_schedule),
                                       msvq_tokenizer, p, compute, artifacts, context.log.info)
    context.add_output_metadata({"runs": len(frame), "sampling_seconds": seconds})
    return frame


@paper.asset(kinds={"pandas"}, description="Benchmark rows: FCD, sFCD, KID, class consistency, precision/recall of "
             "every sample set against the held-out test split (fixed N and classifier), plus the real-train and "
             "tokenizer-reconstruction reference rows.")
def sample_quality(context: dg.AssetExecutionContext, samples: pd.DataFrame, eval_classifier: dict,
                   reference_stats: dict, images: pd.DataFrame, msvq_tokenizer: dict,
                   compute: ComputeResource) -> pd.DataFrame:
    frame = runs.score_samples(samples, eval_classifier, reference_stats, images, msvq_tokenizer,
                               paper.params(compute), compute)
    context.log.info("mean FCD per model/schedule: " + ", ".join(
        f"{m}/{s} {v:.2f}" for (m, s), v in frame.groupby(["model", "schedule"])["fcd"].mean().items()))
    return frame


# ------------------------------------------------------------------------------ efficiency
@paper.asset(gpu=True, volatile=True, description="Benchmark rows (wall clock, a run record): sampling images/s of "
             "every VAR depth and every VIAR schedule (first seed), interleaved round-robin with warm-up, median of "
             "repetitions, one run; peak GPU memory when on CUDA.")
def throughput(context: dg.AssetExecutionContext, var_models: pd.DataFrame, viar_models: pd.DataFrame,
               iteration_schedule: pd.DataFrame, msvq_tokenizer: dict, compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    first = int(p.seeds[0])
    chosen = [r for r in runs.sampling_runs(p, var_models, viar_models, iteration_schedule) if r["seed"] == first]
    frame = runs.measure_throughput(chosen, msvq_tokenizer, p, compute)
    context.log.info("images/s: " + ", ".join(f"{r.model}/{r.schedule} {r.images_per_second:.1f}"
                                               for r in frame.itertuples()))
    return frame


@paper.asset(kinds={"pandas", "torch"}, description="Benchmark rows: per VIAR seed, scale and iteration t, the "
             "relative residual ‖z^{t+1} − z^t‖/‖z^t‖ and cosine of successive iterates, at sampling time (KV cache) "
             "and teacher-forced on validation pyramids (training semantics).")
def convergence_profile(context: dg.AssetExecutionContext, viar_models: pd.DataFrame, token_pyramids: pd.DataFrame,
                        msvq_tokenizer: dict, compute: ComputeResource) -> pd.DataFrame:
    frame = runs.convergence_profile(viar_models, token_pyramids, msvq_tokenizer, paper.params(compute), compute)
    fin = frame[(frame["source"] == "sampling") & (frame["scale"] == frame["scale"].max())]
    context.log.info("finest-scale residual by t: " + ", ".join(
        f"{t}: {v:.4f}" for t, v in fin.groupby("t")["rel_residual"].mean().items()))
    return frame


@paper.asset(kinds={"pandas", "torch"}, description="Benchmark rows: bytes of activations saved for backward in one "
             "training step (saved-tensor hooks; deterministic, not RSS) for VAR vs depth and VIAR vs no-grad "
             "iterations n and grad iterations m; parameter, gradient and AdamW-state bytes.")
def memory_profile(context: dg.AssetExecutionContext, token_pyramids: pd.DataFrame, msvq_tokenizer: dict,
                   compute: ComputeResource) -> pd.DataFrame:
    frame = runs.memory_profile(token_pyramids, msvq_tokenizer, paper.params(compute), compute)
    context.log.info("saved activation MB: " + ", ".join(f"{r.sweep}={r.value}: {r.saved_bytes / 1e6:.2f}"
                                                          for r in frame.itertuples()))
    return frame


# ------------------------------------------------------------------------------ report
@paper.asset(kinds={"duckdb", "markdown"}, description="VIAR vs the VAR ladder over seeds: FCD/sFCD/KID/consistency/"
             "P/R, FLOPs, memory, convergence, calibrated schedules → warehouse rows, REPORT.md with plots, "
             "metrics.json, claims v1–v6; throughput and training speed → data/runs/viar/TIMINGS.md.")
def benchmark_report(context: dg.AssetExecutionContext, sample_quality: pd.DataFrame, throughput: pd.DataFrame,
                     memory_profile: pd.DataFrame, convergence_profile: pd.DataFrame, var_models: pd.DataFrame,
                     viar_models: pd.DataFrame, iteration_schedule: pd.DataFrame, reference_stats: dict,
                     samples: pd.DataFrame, msvq_tokenizer: dict, eval_classifier: dict,
                     compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    built = report.build_report(sample_quality, throughput, memory_profile, convergence_profile, var_models,
                                viar_models, iteration_schedule, reference_stats, samples, msvq_tokenizer,
                                eval_classifier, paper.params(compute), training=_training_timing(artifacts))
    return paper.publish(context, compute, artifacts, built)


PAPER = paper.define(
    assets=[images, eval_classifier, reference_stats, msvq_tokenizer, token_pyramids, ar_models,
            iteration_schedule, samples, sample_quality, throughput, convergence_profile, memory_profile,
            benchmark_report],
    checks=[
        paper.gate(images, "schema", "GX: labels/splits non-null, known split and dataset names, labels in range.",
                   checks.images_schema),
        paper.gate(images, "shape_range_labels", "Image shape as configured, pixels finite in [-1, 1], labels in "
                   "the conditioning set, every split holds every class.", checks.images_valid, uses_params=True),
        paper.gate(eval_classifier, "test_accuracy", "Reloads (weights_only); test accuracy ≥ "
                   "min_classifier_accuracy (gates every FCD asset).", checks.classifier_accurate,
                   uses_params=True, additional={"images": images}),
        paper.gate(reference_stats, "floors_finite", "Noise floors finite, reference features finite.",
                   checks.floors_valid),
        paper.gate(msvq_tokenizer, "reconstruction_and_usage", "Reloads; val reconstruction MSE ≤ max_recon_mse; "
                   "codebook usage ≥ min_codebook_usage; ids in range.", checks.tokenizer_usable, uses_params=True,
                   additional={"images": images}),
        paper.gate(token_pyramids, "ids_in_range_and_round_trip", "Token ids within [0, V); decode(tokens) ≈ "
                   "encode–decode reconstruction; teacher forcing consistent.", checks.pyramids_valid,
                   additional={"msvq_tokenizer": msvq_tokenizer, "images": images}),
        paper.gate("var_models", "trained", "Checkpoints reload finite; train CE below the unigram entropy.",
                   checks.models_trained, uses_params=True),
        paper.gate("viar_models", "trained", "Checkpoints reload finite; train CE below the unigram entropy.",
                   checks.models_trained, uses_params=True),
        paper.gate("viar_models", "fixed_point_not_diverging", "Relative fixed-point residual at t = 8 below t = 1 on "
                   "validation pyramids.", checks.viar_not_diverging,
                   additional={"token_pyramids": token_pyramids, "msvq_tokenizer": msvq_tokenizer}),
        paper.gate(iteration_schedule, "schedule_valid", "One integer count per scale in 1..converged; NLL target "
                   "met on the calibration split.", checks.schedule_valid,
                   additional={"msvq_tokenizer": msvq_tokenizer}),
        paper.gate(samples, "finite_in_range_balanced", "Samples finite, in [-1, 1], per_class per class.",
                   checks.samples_valid, uses_params=True),
    ],
    claims=["v2_quality_parity", "v3_knob_works"],
    # sanity (v1, v4); report-only (v5 wall clock, v6 a one-seed ladder): shown, not counted
    observations=[c for c in benchmark.CLAIM_IDS if c not in ("v2_quality_parity", "v3_knob_works")],
)
