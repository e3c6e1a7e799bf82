"""SPGCL report figures (matplotlib only; no Dagster)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.plotting import new_grid
from assets.spgcl.training import METHOD_LABELS


def energy_spectrum(energy: pd.DataFrame):
    """Per-feature Dirichlet energy sorted high → low, one panel per graph (first seed).
    Gaussian graphs colour the informative dims (the first n_informative); the dashed line is
    the high/low cut at k."""
    graphs = list(dict.fromkeys(energy["graph"]))
    fig, axes = new_grid(len(graphs), 4.0 * len(graphs), 3.4)
    for ax, graph in zip(axes, graphs):
        sub = energy[(energy["graph"] == graph) & (energy["seed"] == energy["seed"].min())].sort_values("rank")
        colors = np.where(sub["informative"].to_numpy(), "#d62728", "#1f77b4")
        ax.bar(sub["rank"], sub["energy"], color=colors, width=1.0)
        ax.axvline(int(sub["k"].iloc[0]) - 0.5, ls="--", color="k", lw=1)
        ax.set_yscale("log")
        ax.set_title(f"{graph}: E_f (red = informative dim)", fontsize=9)
        ax.set_xlabel("rank (0 = highest energy)")
    axes[0].set_ylabel("Dirichlet energy E_f")
    return fig


def accuracy_bars(summary: pd.DataFrame):
    """Test accuracy (%) mean ± 95% CI per method, one panel per graph; solid = numhop 0,
    hatched = numhop 3 (the same smoothing for every method)."""
    graphs = list(dict.fromkeys(summary.sort_values("graph")["graph"]))
    fig, axes = new_grid(len(graphs), 4.6 * len(graphs), 4.4)
    for ax, graph in zip(axes, graphs):
        sub = summary[summary["graph"] == graph]
        methods = [m for m in METHOD_LABELS if m in set(sub["method"])]
        for offset, hop, hatch in ((-0.2, 0, None), (0.2, 3, "//")):
            vals = sub[sub["numhop"] == hop].set_index("method").reindex(methods)
            ax.bar(np.arange(len(methods)) + offset, vals["mean"], 0.4, yerr=vals["ci95"].fillna(0),
                   hatch=hatch, color="#1f77b4" if hop == 0 else "#aec7e8", edgecolor="k", lw=0.3,
                   label=f"numhop {hop}")
        ax.set_xticks(np.arange(len(methods)), [METHOD_LABELS[m] for m in methods], rotation=60,
                      ha="right", fontsize=7)
        ax.set_title(graph)
        ax.set_ylim(0, 100)
    axes[0].set_ylabel("test accuracy (%)")
    axes[0].legend(fontsize=7)
    return fig


def prealignment(diag: pd.DataFrame):
    """Edge cosine and normalised Dirichlet energy at initialisation: input X, MLP, GCN."""
    means = diag.groupby(["graph", "encoder"])[["edge_cosine", "rayleigh_quotient"]].mean().reset_index()
    graphs = list(dict.fromkeys(means["graph"]))
    fig, axes = new_grid(2, 10.0, 3.6)
    for ax, metric in zip(axes, ("edge_cosine", "rayleigh_quotient")):
        for i, enc in enumerate(("input", "mlp", "gcn")):
            vals = means[means["encoder"] == enc].set_index("graph").reindex(graphs)[metric]
            ax.bar(np.arange(len(graphs)) + (i - 1) * 0.27, vals, 0.27, label=enc)
        ax.set_xticks(np.arange(len(graphs)), graphs, rotation=20)
        ax.set_title({"edge_cosine": "mean edge cosine at init",
                      "rayleigh_quotient": "normalised Dirichlet energy at init"}[metric])
    axes[0].legend(fontsize=8)
    return fig


def loss_curves(encoders: pd.DataFrame):
    """Training loss per epoch (mean over seeds), one panel per graph."""
    graphs = list(dict.fromkeys(encoders.sort_values("graph")["graph"]))
    fig, axes = new_grid(len(graphs), 4.2 * len(graphs), 3.4)
    for ax, graph in zip(axes, graphs):
        sub = encoders[encoders["graph"] == graph]
        for method, runs in sub.groupby("method"):
            curves = [np.asarray(c, dtype=float) for c in runs["loss_curve"]]
            length = min(len(c) for c in curves)
            ax.plot(np.mean([c[:length] for c in curves], axis=0), label=METHOD_LABELS[method], lw=1)
        ax.set_title(graph)
        ax.set_xlabel("epoch")
    axes[0].set_ylabel("training loss")
    axes[0].legend(fontsize=6)
    return fig
