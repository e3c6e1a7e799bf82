"""SPGCL data-quality predicates: pure functions returning the problems found (empty = pass).

definitions.py turns each into a Dagster check with paper.gate (blocking, or a non-blocking
warning); tests call them directly on corrupted inputs.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.findings import Finding, expectations, finding
from assets.spgcl import benchmark, data
from assets.spgcl.runs import graph_rows, load_encoder, load_graph
from resources.artifacts import resolve_data_ref
from resources.quality import expect
from resources.versioning import file_md5

REPRODUCE_TOLERANCE = 1e-4       # reloaded checkpoint vs its training-time embedding (max |Δ|)
KEPT_FRACTION_WARNING = 0.10     # EPS keeps fewer edges than this: warn
MAX_MEAN_PAIRWISE_COSINE = 0.95  # an embedding at or above this mean pairwise cosine: warn


def graphs_valid(frame: pd.DataFrame) -> Finding:
    """Every stored graph: md5 intact and data.graph_problems empty."""
    problems = []
    for graph, seed, row in graph_rows(frame):
        if file_md5(resolve_data_ref(row.path)) != row.md5:
            problems.append(f"{graph}/seed {seed}: file changed after writing")
            continue
        for p in data.graph_problems(load_graph(row.path), row.feature_model, float(row.target_homophily)):
            problems.append(f"{graph}/seed {seed}: {p}")
    return finding(problems, ok=f"{len(frame)} graphs: symmetric, no self-loops/duplicates, endpoints in range, "
                   "≤ 2% isolated, homophily on target, classes balanced, features finite")


def manifest_schema(frame: pd.DataFrame) -> Finding:
    return expectations(frame, [
        expect("ExpectColumnValuesToNotBeNull", column="path"),
        expect("ExpectColumnValuesToBeInSet", column="graph", value_set=list(data.ALL_GRAPHS)),
        expect("ExpectColumnValuesToBeBetween", column="n_nodes", min_value=2),
        expect("ExpectColumnValuesToBeBetween", column="n_features", min_value=1),
        expect("ExpectColumnValuesToBeBetween", column="isolated_fraction", min_value=0.0, max_value=0.02),
        expect("ExpectColumnValuesToBeBetween", column="out_of_range_endpoints", min_value=0, max_value=0),
    ], name="spgcl_graph_dataset")


def energy_split_valid(frame: pd.DataFrame) -> Finding:
    """E_f ≥ 0 and finite; |H| = k ≤ F; mean E(H) ≥ mean E(L)."""
    problems = []
    for (graph, seed), g in frame.groupby(["graph", "seed"]):
        k, n_features = int(g["k"].iloc[0]), int(g["n_features"].iloc[0])
        energy = g["energy"].to_numpy()
        if not np.isfinite(energy).all() or (energy < 0).any():
            problems.append(f"{graph}/seed {seed}: negative or non-finite energies")
        if k > n_features or k < 1:
            problems.append(f"{graph}/seed {seed}: dim_keep k = {k} is outside [1, F = {n_features}]")
            continue
        high = g["in_high"].to_numpy(dtype=bool)
        if high.sum() != k:
            problems.append(f"{graph}/seed {seed}: |H| = {int(high.sum())} ≠ k = {k}")
        if high.any() and (~high).any() and energy[high].mean() < energy[~high].mean():
            problems.append(f"{graph}/seed {seed}: mean E(H) < mean E(L)")
    return finding(problems, ok="energies ≥ 0 and finite; |H| = k ≤ F; mean E(H) ≥ mean E(L) for every graph")


def _kept(frame: pd.DataFrame) -> pd.Series:
    return frame.groupby("graph")["keep_prob"].mean()


def keep_probs_in_range(frame: pd.DataFrame) -> Finding:
    values = frame["keep_prob"].to_numpy(dtype=float)
    bad = int((~np.isfinite(values) | (values < 0) | (values > 1)).sum())
    kept = _kept(frame).round(4).to_dict()
    return finding([f"{bad} keep probabilities outside [0, 1]"] if bad else [],
                   ok=f"keep probabilities in [0, 1]; expected kept fraction per graph {kept}",
                   expected_kept_fraction=kept)


def kept_fraction_not_tiny(frame: pd.DataFrame) -> Finding:
    """Warning: EPS keeps so few edges that the positives are almost only the node itself."""
    kept = _kept(frame)
    low = {g: round(float(v), 4) for g, v in kept.items() if v < KEPT_FRACTION_WARNING}
    return finding([f"EPS keeps < {KEPT_FRACTION_WARNING:.0%} of the edges on {low}: positives are then almost "
                    "only the node itself"] if low else [],
                   ok=f"EPS keeps ≥ {KEPT_FRACTION_WARNING:.0%} of the edges on every graph",
                   expected_kept_fraction={g: float(v) for g, v in kept.items()})


def diagnostics_finite(frame: pd.DataFrame) -> Finding:
    values = frame[["edge_cosine", "rayleigh_quotient"]].to_numpy(dtype=float)
    problems = []
    if not np.isfinite(values).all():
        problems.append(f"{int((~np.isfinite(values)).sum())} non-finite diagnostics")
    missing = {"gcn", "mlp"} - set(frame["encoder"])
    if missing:
        problems.append(f"diagnostics missing for encoders {sorted(missing)}")
    return finding(problems, ok="diagnostics finite for GCN and MLP")


def checkpoints_load_back(frame: pd.DataFrame) -> Finding:
    """Each checkpoint reloads (weights_only, md5), has finite weights and a finite loss curve."""
    import torch

    problems = []
    for r in frame.itertuples(index=False):
        name = f"{r.method}/{r.graph}/seed {r.seed}"
        try:
            model, _, _ = load_encoder(r.checkpoint)
        except Exception as exc:  # a broken checkpoint must be reported, not crash the check
            problems.append(f"{name}: does not load ({exc})")
            continue
        if not all(torch.isfinite(p).all() for p in model.state_dict().values() if p.is_floating_point()):
            problems.append(f"{name}: non-finite weights")
        if not np.isfinite(np.asarray(r.loss_curve, dtype=float)).all():
            problems.append(f"{name}: non-finite training loss")
    return finding(problems, ok=f"{len(frame)} checkpoints reload with weights_only, finite weights and losses")


def embeddings_sane(frame: pd.DataFrame) -> Finding:
    """Finite; the reloaded checkpoint reproduces its training-time embedding; no collapse."""
    problems = []
    for r in frame.itertuples(index=False):
        name = f"{r.method}/{r.graph}/seed {r.seed}"
        if not r.finite:
            problems.append(f"{name}: non-finite embedding")
        if r.reload_max_abs_diff > REPRODUCE_TOLERANCE:
            problems.append(f"{name}: reloaded checkpoint gives embeddings differing by {r.reload_max_abs_diff:.2e}")
        problems += [f"{name}: {p}" for p in benchmark.collapse_problems(r._asdict(), max_mean_cosine=None)]
    return finding(problems, ok=f"{len(frame)} embeddings finite, reproduced by their checkpoints "
                   f"(≤ {REPRODUCE_TOLERANCE}), not collapsed (some dim std > 1e-4, effective rank > 5)")


def embeddings_not_aligned(frame: pd.DataFrame) -> Finding:
    """Warning where the mean pairwise cosine of an embedding is ≥ 0.95. At n = 2000 GRACE's
    ReLU (non-negative, uncentred) embeddings on bow_homo reach 0.95-0.96 with effective rank
    13-16 and 98-99% probe accuracy (measured): a common offset, not a collapse, so this
    criterion reports instead of stopping the run; std and effective rank stay blocking."""
    aligned = {f"{r.method}/{r.graph}/seed {r.seed}": round(float(r.mean_pairwise_cosine), 3)
               for r in frame.itertuples(index=False) if r.mean_pairwise_cosine >= MAX_MEAN_PAIRWISE_COSINE}
    return finding([f"mean pairwise cosine ≥ {MAX_MEAN_PAIRWISE_COSINE} for {len(aligned)} embeddings: "
                    f"{dict(list(aligned.items())[:10])}"] if aligned else [],
                   ok=f"every embedding has mean pairwise cosine < {MAX_MEAN_PAIRWISE_COSINE}", aligned=aligned)


def _majority_table(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["numhop"] == 0].groupby(["graph", "method"])[["test_acc", "majority_acc"]].mean()


def probe_valid(frame: pd.DataFrame) -> Finding:
    """GX ranges and C on the grid; on every graph the best method beats the majority class
    (a pipeline sanity check: labels, splits and probe work). A single weak method is a
    result, not an input error: it is flagged by the non-blocking check below."""
    best = _majority_table(frame).groupby("graph").max()
    failing = [f"{g} (best {r.test_acc:.3f} ≤ majority {r.majority_acc:.3f})" for g, r in best.iterrows()
               if r.test_acc <= r.majority_acc]
    found = expectations(frame, [
        expect("ExpectColumnValuesToBeBetween", column="test_acc", min_value=0.0, max_value=1.0),
        expect("ExpectColumnValuesToBeBetween", column="val_acc", min_value=0.0, max_value=1.0),
        expect("ExpectColumnValuesToBeBetween", column="C", min_value=2.0 ** -10, max_value=2.0 ** 10),
    ], name="spgcl_linear_probe", problems=[f"no method beats the majority class on {failing}"] if failing else [])
    return Finding(found.problems, f"accuracies in range; the best method beats the majority class on all "
                   f"{len(best)} graphs", {**found.metadata, "failing_graphs": failing})


def every_method_beats_majority(frame: pd.DataFrame) -> Finding:
    """Warning for method × graph cells at or below the majority-class accuracy."""
    means = _majority_table(frame)
    losers = [f"{m}/{g} ({r.test_acc:.3f} ≤ {r.majority_acc:.3f})" for (g, m), r in means.iterrows()
              if r.test_acc <= r.majority_acc]
    return finding([f"probe no better than the majority class for {losers[:10]}"] if losers else [],
                   ok=f"all {len(means)} method × graph cells beat the majority class", losers=losers)


def scaling_measured(frame: pd.DataFrame) -> Finding:
    """Every size measured: positive finite epochs/s and peak memory; ≥ 2 sizes (finite exponent)."""
    problems = [f"n={int(r.n)}: epochs/s {r.epochs_per_second} or peak {r.peak_memory_bytes} not positive"
                for r in frame.itertuples()
                if not (np.isfinite(r.epochs_per_second) and r.epochs_per_second > 0 and r.peak_memory_bytes > 0)]
    if len(frame) < 2 or not np.isfinite(frame["time_exponent"].iloc[0]):
        problems.append(f"{len(frame)} size(s) measured: no scaling exponent")
    exponent = frame["time_exponent"].iloc[0] if len(frame) else float("nan")
    return finding(problems, ok=f"{len(frame)} sizes measured; time exponent {exponent:.2f}")
