"""pfn_causal figures (matplotlib, Agg) — no Dagster."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.plotting import new_grid

ORDER = ["zero_shot", "continued", "msf", "random_ft", "full_coverage", "g_formula", "s_learner", "naive"]


def nmse_by_size(table: pd.DataFrame):
    """nMSE by |S| (one panel per context size), one line per method."""
    sizes = sorted(table["n"].unique())
    fig, axes = new_grid(len(sizes), 4.2 * len(sizes), 3.6)
    for ax, n in zip(axes, sizes):
        t = table[table["n"] == n]
        for method in [m for m in ORDER if m in set(t["method"])]:
            g = t[t["method"] == method].sort_values("size")
            ax.plot(g["size"], g["nmse"], marker="o", label=method)
        ax.set_xlabel("|S| (intervened covariates)")
        ax.set_ylabel("nMSE")
        ax.set_title(f"n = {n}")
        ax.set_yscale("log")
    axes[0].legend(fontsize=7)
    return fig


def pwf_gain(table: pd.DataFrame):
    """nMSE at v* and at the far point: zero-shot, continued, PWF (mean over seeds × targets)."""
    fig, axes = new_grid(1, 5.0, 3.6)
    ax = axes[0]
    if len(table):
        g = table.groupby("point")[["zero_shot", "continued", "pwf"]].mean().reindex(["target", "far"])
        x = np.arange(len(g))
        for i, col in enumerate(g.columns):
            ax.bar(x + (i - 1) * 0.27, g[col], width=0.27, label=col)
        ax.set_xticks(x, ["at v*", "≥ 1 sd away"])
    ax.set_ylabel("nMSE")
    ax.legend(fontsize=7)
    ax.set_title("PWF on its target subset")
    return fig


def acquisition(trace: pd.DataFrame):
    """Estimated loss per subset size over MSF rounds, and the picks."""
    fig, axes = new_grid(1, 5.0, 3.6)
    ax = axes[0]
    if len(trace):
        t = trace[trace["regime"] == "msf"]
        g = t.groupby(["round", "size"])["estimated_loss"].mean().unstack("size")
        for size in g.columns:
            ax.plot(g.index + 1, g[size], marker="o", label=f"|S|={size}")
        ax.set_xlabel("MSF round")
        ax.set_ylabel("estimated NLL (fresh prior SCMs)")
        ax.legend(fontsize=7)
    ax.set_title("MSF acquisition")
    return fig


def loss_curves(pretrained: pd.DataFrame, curves: dict[str, list[float]]):
    fig, axes = new_grid(1, 5.0, 3.6)
    ax = axes[0]
    for name, losses in curves.items():
        x = np.asarray(losses, dtype=float)
        w = max(1, len(x) // 50)
        smooth = np.convolve(x, np.ones(w) / w, mode="valid")
        ax.plot(np.arange(len(smooth)) + w, smooth, label=name)
    ax.set_xlabel("step")
    ax.set_ylabel("training NLL (standardised y)")
    ax.legend(fontsize=7)
    ax.set_title("pretraining")
    return fig
