"""limix figures (matplotlib, Agg) — no Dagster."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.plotting import new_grid

VARIANTS = ["linear_fsn", "linear_snf", "rabel_fsn", "rabel_snf", "linear_fsn_wide", "mlp_snf", "periodic_snf",
            "ple_snf"]


def loss_curves(curves: dict[str, list[float]], window: int = 25):
    """Training loss (running mean) of every checkpoint, one colour per variant."""
    fig, axes = new_grid(1, 6.0, 3.6)
    ax = axes[0]
    colours = {v: f"C{i}" for i, v in enumerate(VARIANTS)}
    for name, curve in curves.items():
        x = np.asarray(curve, dtype=float)
        if len(x) == 0:
            continue
        w = max(1, min(window, len(x)))
        smooth = np.convolve(x, np.ones(w) / w, mode="valid")
        variant = name.split("/")[0]
        ax.plot(np.arange(len(smooth)) + w, smooth, color=colours.get(variant, "k"), lw=1,
                label=variant if name.endswith("seed 0") or "seed" not in name else None)
    ax.set_xlabel("step")
    ax.set_ylabel("training CE (running mean)")
    ax.legend(fontsize=7)
    return fig


def ranks(table: pd.DataFrame):
    """Rank@95 / Rank@99 of the input tokens (layer 0) and layer 1, per variant (mean over seeds × tasks)."""
    fig, axes = new_grid(2, 9.0, 3.4)
    for ax, metric in zip(axes, ("rank95", "rank99")):
        g = table.groupby(["variant", "layer"])[metric].mean().unstack("layer")
        order = [v for v in VARIANTS if v in g.index]
        xs = np.arange(len(order))
        for j, layer in enumerate(g.columns):
            ax.bar(xs + 0.4 * j - 0.2, g.loc[order, layer], width=0.4, label=f"layer {layer}")
        ax.set_xticks(xs, order, rotation=30, fontsize=7)
        ax.set_title(metric.replace("rank", "Rank@") + " %")
    axes[0].legend(fontsize=7)
    return fig


def attention(table: pd.DataFrame):
    """The y token's attention mass on parent / other / own tokens per variant (stacked bars)."""
    fig, axes = new_grid(1, 6.0, 3.4)
    ax = axes[0]
    if table.empty:
        ax.set_title("no attention rows")
        return fig
    g = table.groupby("variant")[["parent", "other", "own"]].mean()
    order = [v for v in VARIANTS if v in g.index]
    bottom = np.zeros(len(order))
    for col in ("parent", "other", "own"):
        ax.bar(order, g.loc[order, col], bottom=bottom, label=col)
        bottom += g.loc[order, col].to_numpy()
    ax.set_ylabel("feature-attention mass of the query y token")
    ax.tick_params(axis="x", rotation=30, labelsize=7)
    ax.legend(fontsize=7)
    return fig


def auc_by_suite(scores: pd.DataFrame, base: pd.DataFrame):
    """Mean ROC-AUC per method and suite (learned ICL checkpoints and the baselines)."""
    fig, axes = new_grid(1, 7.0, 3.6)
    ax = axes[0]
    frames = []
    if len(scores):
        frames.append(scores.rename(columns={"variant": "method"}))
    if len(base):
        frames.append(base)
    if not frames:
        ax.set_title("no scores")
        return fig
    g = pd.concat(frames).groupby(["method", "suite"])["auc"].mean().unstack("suite")
    xs = np.arange(len(g.index))
    for j, suite in enumerate(g.columns):
        ax.bar(xs + 0.4 * j - 0.2, g[suite], width=0.4, label=suite)
    ax.set_xticks(xs, g.index, rotation=30, fontsize=7)
    ax.set_ylim(0.4, 1.0)
    ax.set_ylabel("ROC-AUC")
    ax.legend(fontsize=7)
    return fig
