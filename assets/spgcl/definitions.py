"""SPGCL as Dagster assets — wiring only (runs.py, checks.py, report.py and the method modules
data / method / model / training / scaling / benchmark / plots do the work).

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    graph_dataset ─> feature_energy ─> positive_keep_probs ─┐
          │                │                                v
          ├─> prealignment_diagnostics            gcl_encoder (method × graph × seed checkpoints)
          │                                                 v           └─> training_scaling (wall clock)
          └──────────────────────────────────────> node_embeddings ─> linear_probe ─> benchmark_report

Instead of Dagster partitions, method × graph × seed are columns of the tables and part of
the checkpoint/file names, so one run materializes the whole group and every blocking check
gates everything downstream. Wall-clock numbers are run records: gcl_encoder's training time
goes to data/runs/spgcl/timings/ (artifacts.record_timings, read back by the report), and
training_scaling is a volatile asset (data/runs/spgcl/).
"""

import time

import dagster as dg
import pandas as pd

from assets.common.paper import Paper
from assets.common.report import markdown_table
from assets.spgcl import benchmark, checks, report, runs
from assets.spgcl.params import SPGCLParams
from resources.artifacts import ArtifactsResource
from resources.compute import ComputeResource

paper = Paper("spgcl", params=SPGCLParams)


def _seed_for(compute: ComputeResource):
    return lambda *keys: compute.seed_for(paper.slug, *keys)


# ------------------------------------------------------------------------------ dataset
@paper.asset(kinds={"numpy", "pandas"}, description="Dataset: CSBM graphs (frozen generator configs; Gaussian "
             "and Cora-like BoW features; homophily 0.8 / 0.2) and the karate sanity graph, per graph × seed: "
             "edges, features, labels and a random stratified 10/10/80 split (npz), with measured homophily and "
             "the generator config.")
def graph_dataset(context: dg.AssetExecutionContext, compute: ComputeResource,
                  artifacts: ArtifactsResource) -> pd.DataFrame:
    frame = runs.make_graphs(paper.params(compute), _seed_for(compute), artifacts.paper_dir(paper.slug) / "graphs",
                             context.log.info)
    context.add_output_metadata({"graphs": dg.MetadataValue.md(markdown_table(
        frame[["graph", "seed", "n_nodes", "n_directed_edges", "n_features", "target_homophily",
               "measured_homophily", "isolated_fraction"]])), **compute.provenance(paper.slug)})
    return frame


# ------------------------------------------------------------------------------ annotations
@paper.asset(kinds={"numpy", "pandas"}, description="Annotation: per-feature Dirichlet energy E_f = mean over "
             "edges of (x_if/√d_i − x_jf/√d_j)² (degree normalisation done right), its rank, the high-energy set "
             "H (top dim_keep) and, as a variant, the Rayleigh-normalised energy.")
def feature_energy(context: dg.AssetExecutionContext, graph_dataset: pd.DataFrame,
                   compute: ComputeResource) -> pd.DataFrame:
    with compute.blas_limits():
        return runs.feature_energy(graph_dataset, paper.params(compute).dim_keep, context.log.info)


@paper.asset(kinds={"numpy", "pandas"}, description="Annotation: EPS keep probability per edge entry, "
             "min(α·clamp(cos(x_i^L, x_j^L), 0, 1), 1) on the low-energy dims L (stored per edge, never n×n).")
def positive_keep_probs(context: dg.AssetExecutionContext, graph_dataset: pd.DataFrame,
                        feature_energy: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    return runs.positive_keep_probs(graph_dataset, feature_energy, paper.params(compute).alpha, context.log.info)


# ------------------------------------------------------------------------------ diagnostics
@paper.asset(kinds={"torch", "pandas"}, description="Benchmark: mean edge cosine and normalised Dirichlet energy "
             "of a randomly initialised encoder's outputs with (GCN) and without (MLP, same weights) message "
             "passing, per graph × seed (claim P1).")
def prealignment_diagnostics(context: dg.AssetExecutionContext, graph_dataset: pd.DataFrame,
                             compute: ComputeResource) -> pd.DataFrame:
    frame = runs.prealignment(graph_dataset, paper.params(compute), _seed_for(compute), compute.torch)
    context.add_output_metadata({"means": dg.MetadataValue.md(markdown_table(
        frame.groupby(["graph", "encoder"])[["edge_cosine", "rayleigh_quotient"]].mean().reset_index()))})
    return frame


# ------------------------------------------------------------------------------ training
@paper.asset(gpu=True, description="Checkpoints: every method × graph × seed encoder (SPGCL, its ablations, GRACE, "
             "GRACE-noPos, their MLP controls, DGI, BGRL) — torch state_dict + JSON sidecar with config, seed, "
             "device; the loss curve and an embedding fingerprint. Training time goes to the metadata.")
def gcl_encoder(context: dg.AssetExecutionContext, graph_dataset: pd.DataFrame, feature_energy: pd.DataFrame,
                positive_keep_probs: pd.DataFrame, compute: ComputeResource,
                artifacts: ArtifactsResource) -> pd.DataFrame:
    params = paper.params(compute)
    workers = compute.workers(len(runs.training_runs(params, graph_dataset)), params.train_workers)
    start = time.monotonic()
    frame, timings = runs.train_encoders(
        graph_dataset, feature_energy, positive_keep_probs, params, seed_for=_seed_for(compute),
        torch_for=compute.torch, device=compute.resolved_device(), workers=workers, threads=compute.threads,
        deterministic=compute.deterministic, checkpoint_path=lambda name: artifacts.checkpoint_path(paper.slug, name),
        provenance=compute.provenance(paper.slug), log=context.log.info)
    recorded = [{**row, "workers": workers, "threads": compute.threads} for row in timings]
    context.add_output_metadata({
        "runs": len(frame), "workers": workers, "device": compute.resolved_device(),
        "train_seconds_total": float(sum(t["train_seconds"] for t in timings)),
        "wall_seconds": time.monotonic() - start})
    artifacts.record_timings(paper.slug, "gcl_encoder", pd.DataFrame(recorded))
    return frame


@paper.asset(gpu=True, description="Dataset: Z for every method × graph × seed, recomputed from the reloaded "
             "checkpoint (numhop 0) and smoothed Â³Z (numhop 3); the non-learned references (raw X, SGC Â²X) "
             "too. Collapse statistics and the reload-reproduction error.")
def node_embeddings(context: dg.AssetExecutionContext, graph_dataset: pd.DataFrame, gcl_encoder: pd.DataFrame,
                    compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    with compute.blas_limits():
        frame = runs.node_embeddings(graph_dataset, gcl_encoder, paper.params(compute),
                                     artifacts.paper_dir(paper.slug) / "embeddings", compute.torch)
    context.log.info(f"{len(frame)} embeddings; worst reload difference {frame['reload_max_abs_diff'].max():.2e}")
    return frame


# ------------------------------------------------------------------------------ performance
@paper.asset(gpu=True, volatile=True, deps=[gcl_encoder], description="Benchmark (wall clock, a run record under "
             "data/runs): SPGCL training cost versus n (params scaling.sizes; fresh bow_homo CSBMs, EPS on, "
             "sparse propagation, chunked similarity): seconds/epoch, epochs/s, peak memory (torch profiler on "
             "CPU, cuda max_memory_allocated on GPU) and the log-log scaling exponents. Runs after training so "
             "it does not compete with it.")
def training_scaling(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    frame = runs.training_scaling(paper.params(compute), compute.resolved_device(), compute.torch, context.log.info)
    context.add_output_metadata({"time_exponent": float(frame["time_exponent"].iloc[0]),
                                 "memory_exponent": float(frame["memory_exponent"].iloc[0]),
                                 "device": compute.resolved_device()})
    return frame


# ------------------------------------------------------------------------------ probe + report
@paper.asset(kinds={"pandas"}, description="Calibrated probe: liblinear one-vs-rest LR on L2-normalised "
             "embeddings, C chosen on the validation nodes (grid 2^lo..2^hi, params probe_c_exponents), val/test "
             "accuracy per method × graph × seed × numhop — one protocol for every method.")
def linear_probe(context: dg.AssetExecutionContext, graph_dataset: pd.DataFrame, node_embeddings: pd.DataFrame,
                 compute: ComputeResource) -> pd.DataFrame:
    with compute.blas_limits():
        frame = runs.linear_probe(graph_dataset, node_embeddings, paper.params(compute))
    context.log.info(f"{len(frame)} probes")
    return frame


@paper.asset(kinds={"duckdb", "markdown"}, description="Method × graph accuracy (mean ± std, 95% CI) at numhop "
             "0 and 3, the ablation table, paired tests, pre-alignment diagnostics, energy plots, the README "
             "numbers as anchors, and the claims P1–P3 → warehouse rows, REPORT.md, metrics.json; training time "
             "and the scaling benchmark → data/runs (TIMINGS.md).")
def benchmark_report(context: dg.AssetExecutionContext, linear_probe: pd.DataFrame,
                     prealignment_diagnostics: pd.DataFrame, feature_energy: pd.DataFrame,
                     gcl_encoder: pd.DataFrame, positive_keep_probs: pd.DataFrame, graph_dataset: pd.DataFrame,
                     training_scaling: pd.DataFrame, compute: ComputeResource,
                     artifacts: ArtifactsResource) -> dict:
    built = report.build_report(linear_probe, prealignment_diagnostics, feature_energy, gcl_encoder,
                                positive_keep_probs, graph_dataset, training_scaling, paper.params(compute),
                                encoder_timings=artifacts.recorded_timings(paper.slug, "gcl_encoder"))
    value = paper.publish(context, compute, artifacts, built)
    accuracy, _ = report.accuracy_table(benchmark.summary_table(linear_probe))
    context.add_output_metadata({"accuracy": dg.MetadataValue.md(markdown_table(accuracy))})
    return value


PAPER = paper.define(
    assets=[graph_dataset, feature_energy, positive_keep_probs, prealignment_diagnostics, gcl_encoder,
            node_embeddings, linear_probe, training_scaling, benchmark_report],
    checks=[
        paper.gate(graph_dataset, "graphs_valid", "Symmetric edges, no self-loops or duplicates, endpoints in "
                   "range, ≤ 2% isolated nodes, |homophily − target| ≤ 0.05, smallest class ≥ 0.5/C, one finite "
                   "feature row per node, BoW rows sum to 1.", checks.graphs_valid),
        paper.gate(graph_dataset, "manifest_schema", "GX on the graph manifest (paths, sizes, ranges).",
                   checks.manifest_schema),
        paper.gate(feature_energy, "energy_split_valid", "E_f ≥ 0; |H| = k ≤ F; mean E(H) ≥ mean E(L).",
                   checks.energy_split_valid),
        paper.gate(positive_keep_probs, "keep_probs_in_range", "EPS keep probabilities in [0, 1].",
                   checks.keep_probs_in_range),
        paper.gate(positive_keep_probs, "kept_fraction_not_tiny", "Warn when EPS keeps < 10% of edges.",
                   checks.kept_fraction_not_tiny, blocking=False, severity="warn"),
        paper.gate(prealignment_diagnostics, "diagnostics_finite", "Finite GCN and MLP diagnostics.",
                   checks.diagnostics_finite),
        paper.gate(gcl_encoder, "checkpoints_load_back", "Checkpoints reload (weights_only), finite weights and "
                   "losses.", checks.checkpoints_load_back),
        paper.gate(node_embeddings, "embeddings_sane", "Finite; the reloaded checkpoint reproduces its "
                   "embeddings; no collapse (some dim std > 1e-4, effective rank > 5).", checks.embeddings_sane),
        paper.gate(node_embeddings, "embeddings_not_aligned", "Warn where an embedding's mean pairwise cosine is "
                   "≥ 0.95 (the spec's third collapse criterion, reported without blocking).",
                   checks.embeddings_not_aligned, blocking=False, severity="warn"),
        paper.gate(linear_probe, "probe_valid", "Accuracies in [0, 1], C in [2^-10, 2^10], on every graph the best "
                   "method beats the majority class.", checks.probe_valid),
        paper.gate(linear_probe, "every_method_beats_majority", "Warn for method × graph cells at or below the "
                   "majority-class accuracy.", checks.every_method_beats_majority, blocking=False, severity="warn"),
        paper.gate(training_scaling, "scaling_measured", "Every size has positive epochs/s and peak memory; ≥ 2 "
                   "sizes so the log-log exponent is defined.", checks.scaling_measured),
    ],
    claims=["prealignment", "no_positive_phenomenon", "spgcl_hetero_gain", "spgcl_homo_competitive"],
)
