"""SPGCL benchmark report content: pure pandas/matplotlib, no Dagster.

`build_report` turns the probes, diagnostics and annotations into a Report (claims, tables,
figures, tidy rows); the wall-clock measurements — the training runs' time and the
training_scaling benchmark — become its run-record part (TIMINGS.md, timing rows).
definitions.py publishes it.
"""
from __future__ import annotations

from dataclasses import fields

import pandas as pd

from assets.common.params import thaw
from assets.common.report import METRIC_COLUMNS, Report, markdown_table
from assets.spgcl import benchmark
from assets.spgcl.params import SPGCLParams

SCALING_COLUMNS = ["n", "directed_edges", "device", "hidden", "chunk", "similarity_chunked", "epochs",
                   "seconds_per_epoch", "epochs_per_second", "cpu_seconds_per_epoch", "peak_memory_mib",
                   "load_average_1min"]
SCALING_METRICS = ["seconds_per_epoch", "epochs_per_second", "peak_memory_mib"]
TRAINING_METRICS = ["train_seconds", "epochs_per_second"]
README_ABLATION = (
    "README ablation (real data): SPGCL / w/o EAP / w/o EPS / w/o both — Cora 85.44 / 84.10 / 84.91 / 83.70; "
    "Photo 94.83 / 93.21 / 93.99 / 93.73; CS 95.03 / 92.99 / 94.67 / 93.67; Cornell 75.41 / 50.27 / 66.76 / 50.08; "
    "Texas 80.81 / 68.91 / 78.65 / 66.76; Actor 37.23 / 24.86 / 35.00 / 23.33.")
PREALIGNMENT = (
    "One randomly initialised SPGCL encoder stack (2 layers, PReLU, LayerNorm, eval mode) run on the "
    "unmasked features WITH propagation (GCN) and WITHOUT it (MLP: the same weights and biases). "
    "rayleigh_quotient = tr(ZᵀL̃Z)/tr(ZᵀZ) with L̃ = I − Â on the GCN's normalized graph "
    "Â = D̃^-½(A+I)D̃^-½; the variant without self-loops (I − D^-½AD^-½) is shown beside it. "
    "The claim compares GCN with MLP on every homophilous CSBM.")


def accuracy_table(summary: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(method × numhop by graph "mean ± std" table, the SPGCL ablation rows)."""
    from assets.spgcl.training import METHOD_LABELS

    wide = summary.assign(cell=lambda d: d["mean"].map("{:.1f}".format) + " ± " + d["std"].map("{:.1f}".format))
    table = (wide.pivot_table(index=["method", "numhop"], columns="graph", values="cell", aggfunc="first")
             .reset_index().fillna("—"))
    table["method"] = table["method"].map(lambda m: METHOD_LABELS.get(m, m))
    ablation = wide[wide["method"].str.startswith("spgcl")].pivot_table(
        index=["method", "numhop"], columns="graph", values="cell", aggfunc="first").reset_index().fillna("—")
    return table, ablation


def timing_rows(training_scaling: pd.DataFrame, encoder_timings: pd.DataFrame | None) -> pd.DataFrame:
    """Wall-clock measurements as tidy metric rows (METRIC_COLUMNS)."""
    parts = [training_scaling.melt(id_vars=["n", "graph"], value_vars=SCALING_METRICS, var_name="metric")
             .assign(asset="spgcl/training_scaling", dataset=lambda d: d["graph"], method="spgcl", seed=0,
                     partition=lambda d: "n=" + d["n"].astype(str))]
    if encoder_timings is not None and len(encoder_timings):
        parts.append(encoder_timings.melt(id_vars=["method", "graph", "seed"], value_vars=TRAINING_METRICS,
                                          var_name="metric")
                     .assign(asset="spgcl/gcl_encoder", dataset=lambda d: d["graph"], partition="train"))
    return pd.concat(parts, ignore_index=True)[METRIC_COLUMNS]


def timing_body(training_scaling: pd.DataFrame, encoder_timings: pd.DataFrame | None, params: SPGCLParams) -> str:
    """TIMINGS.md content: training time per run and SPGCL's cost versus n."""
    lines = ["## Training cost (mean per run)", ""]
    if encoder_timings is not None and len(encoder_timings):
        first = encoder_timings.iloc[0]
        lines += [f"{len(encoder_timings)} runs trained with {int(first['workers'])} worker process(es), "
                  f"{int(first['threads'])} torch thread(s) each; train_seconds is wall time per run.", "",
                  markdown_table(encoder_timings.groupby("method")[TRAINING_METRICS].mean().reset_index()), ""]
    else:
        lines += ["No training timings were recorded for this run (gcl_encoder ran in another Dagster "
                  "instance, or not at all).", ""]
    lines += ["## Performance: SPGCL training cost versus n", "",
              f"Fresh bow_homo CSBMs (average degree 10, F = 300), SPGCL with EPS on from epoch 0, encoder "
              f"{thaw(params.encoder)}, on {training_scaling['device'].iloc[0]}; sparse propagation only (no dense "
              "n×n adjacency), the n×n similarity in row blocks of `chunk` rows, recomputed in the backward pass "
              "when n > chunk. Peak memory: " + str(training_scaling["memory_kind"].iloc[0]) + " over one epoch "
              "(graph, model and activations). Timings are wall time on a shared machine: the 1-minute load "
              "average at each measurement is shown.", "",
              markdown_table(training_scaling[[c for c in SCALING_COLUMNS if c in training_scaling]]), "",
              f"Scaling exponents (least-squares log-log slope over these sizes): seconds/epoch ∝ n^"
              f"{training_scaling['time_exponent'].iloc[0]:.2f}, peak memory ∝ n^"
              f"{training_scaling['memory_exponent'].iloc[0]:.2f}."]
    return "\n".join(lines)


def build_report(linear_probe: pd.DataFrame, prealignment_diagnostics: pd.DataFrame, feature_energy: pd.DataFrame,
                 gcl_encoder: pd.DataFrame, positive_keep_probs: pd.DataFrame, graph_dataset: pd.DataFrame,
                 training_scaling: pd.DataFrame, params: SPGCLParams,
                 encoder_timings: pd.DataFrame | None = None) -> Report:
    """encoder_timings: gcl_encoder's wall-clock rows (method, graph, seed, train_seconds,
    epochs_per_second, workers, threads), None when not recorded."""
    from assets.spgcl import plots

    claims = benchmark.evaluate_claims(prealignment_diagnostics, linear_probe)
    summary = benchmark.summary_table(linear_probe)
    paired = benchmark.paired_table(linear_probe)
    acc_table, ablation = accuracy_table(summary)
    diag_columns = [c for c in ("edge_cosine", "rayleigh_quotient", "rayleigh_quotient_no_self_loops")
                    if c in prealignment_diagnostics]
    diag = prealignment_diagnostics.groupby(["graph", "encoder"])[diag_columns].mean().reset_index()
    kept = positive_keep_probs.groupby("graph")["keep_prob"].mean().rename("expected_kept_fraction").reset_index()
    energy_split = (feature_energy.groupby(["graph", "in_high"])["energy"].mean().unstack("in_high")
                    .rename(columns={True: "mean_E_high", False: "mean_E_low"}).reset_index())
    informative = feature_energy[feature_energy["informative"]]
    if len(informative):
        share = informative.groupby("graph")["in_high"].mean().rename("informative_dims_in_H").reset_index()
        energy_split = energy_split.merge(share, on="graph", how="left")
    epochs = ", ".join(f"{f.name} {getattr(params.methods, f.name).epochs}" for f in fields(params.methods))
    sizes = (f"n = {int(graph_dataset['n_nodes'].max())} nodes per CSBM, graphs {list(params.graphs)}, "
             f"seeds {list(params.seeds)}, encoder {thaw(params.encoder)}, dim_keep k = {params.dim_keep}, "
             f"α = {params.alpha}, epochs {epochs}")
    body = ["## Sizes (this profile)", "", sizes, "",
            "## Test accuracy (%) — mean ± std over seeds", "",
            "Common protocol: random stratified 10/10/80 split per seed, liblinear LR, C on validation. "
            "numhop 3 applies Â³ smoothing to every method's embedding.", "", markdown_table(acc_table), "",
            "## SPGCL ablation (ours) and the README anchor", "", markdown_table(ablation), "",
            README_ABLATION, "",
            "## Paired comparisons (SPGCL − other; two-sided paired t-test over seeds)", "",
            markdown_table(paired) if len(paired) else "(SPGCL not run)", "",
            "## Pre-alignment at initialisation (mean over seeds)", "", PREALIGNMENT, "", markdown_table(diag), "",
            "## Feature energy split and EPS", "", markdown_table(energy_split), "", markdown_table(kept), "",
            "Training time per run and SPGCL's cost versus n (seconds/epoch, epochs/s, peak memory, scaling "
            "exponents) are wall-clock measurements, recorded per run in `data/runs/spgcl/TIMINGS.md`.", ""]
    metric_rows = pd.concat([
        linear_probe.melt(id_vars=["method", "graph", "seed", "numhop"], value_vars=["test_acc", "val_acc", "C"],
                          var_name="metric").assign(asset="spgcl/linear_probe", dataset=lambda d: d["graph"],
                                                    partition=lambda d: "numhop=" + d["numhop"].astype(str)),
        prealignment_diagnostics.melt(id_vars=["graph", "seed", "encoder"],
                                      value_vars=["edge_cosine", "rayleigh_quotient"], var_name="metric")
        .rename(columns={"encoder": "method"})
        .assign(asset="spgcl/prealignment_diagnostics", dataset=lambda d: d["graph"], partition="init"),
    ], ignore_index=True)[METRIC_COLUMNS]
    thresholds = linear_probe[linear_probe["numhop"] == 0].assign(
        name="probe_C", dataset=lambda d: d["graph"])[["name", "seed", "dataset", "method", "C"]].rename(
        columns={"C": "value"})
    figures = {"accuracy": plots.accuracy_bars(summary), "energy_spectrum": plots.energy_spectrum(feature_energy),
               "prealignment": plots.prealignment(prealignment_diagnostics),
               "loss_curves": plots.loss_curves(gcl_encoder)}
    dvc_metrics = {"accuracy_numhop0": {f"{r.graph}/{r.method}": round(float(r.mean), 3)
                                        for r in summary[summary["numhop"] == 0].itertuples()}}
    return Report(claims=claims, body="\n".join(body), figures=figures, metrics=metric_rows, dvc_metrics=dvc_metrics,
                  thresholds=thresholds, timings=timing_rows(training_scaling, encoder_timings),
                  timing_body=timing_body(training_scaling, encoder_timings, params))
