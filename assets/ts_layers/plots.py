"""ts_layers figures (matplotlib, Agg) — no Dagster import."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.plotting import new_grid


def scaling_figure(ev: pd.DataFrame, ckpts: pd.DataFrame):
    """Test MSE by TSFM depth per series (mean over seeds), and synthetic-val loss by depth."""
    fig, (ax, bx) = new_grid(2, 10, 3.8)
    full = ev[(ev["family"] == "tsfm") & (ev["method"] == "full")]
    table = full.groupby(["task", "depth"])["mse"].mean().unstack("task")
    for task in table.columns:
        ax.plot(table.index, table[task] / table[task].min(), marker="o", label=task)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("depth L")
    ax.set_ylabel("test MSE / best depth's")
    ax.set_title("scaling sweep (TSFM)")
    ax.legend(fontsize=7)
    syn = ckpts[ckpts["family"] == "tsfm"].groupby("depth")["synthetic_val_loss"].agg(["mean", "std"])
    bx.errorbar(syn.index, syn["mean"], yerr=syn["std"].fillna(0), marker="o")
    bx.set_xscale("log", base=2)
    bx.set_xlabel("depth L")
    bx.set_ylabel("synthetic-val next-patch MSE")
    bx.set_title("training fit")
    return fig


def cka_figure(cka: np.ndarray, rows: pd.DataFrame, title: str):
    """CKA(H_i, H_j) heat map and the per-layer scores s, a, I, removal drop."""
    fig, (ax, bx) = new_grid(2, 10, 4.0)
    im = ax.imshow(cka, vmin=0, vmax=1, cmap="viridis")
    ax.set_title(f"linear CKA, {title}")
    ax.set_xlabel("H_j")
    ax.set_ylabel("H_i")
    fig.colorbar(im, ax=ax, fraction=0.046)
    layer = rows["layer"].to_numpy()
    for col in ("s", "a", "importance"):
        bx.plot(layer, rows[col] / max(1e-12, rows[col].abs().max()), marker="o", label=f"{col} (scaled)")
    bx.bar(layer, rows["removal_drop"] / max(1e-12, rows["removal_drop"].abs().max()), alpha=0.3,
           label="removal drop (scaled)")
    for x in layer[rows["selected"].to_numpy()]:
        bx.axvline(x, color="k", lw=0.6, ls=":")
    bx.set_xlabel("layer (dotted: kept)")
    bx.legend(fontsize=7)
    return fig


def pruning_figure(table: pd.DataFrame):
    """keep-τ − baseline MSE with its CI, per pruned model."""
    models = table[["family", "depth"]].drop_duplicates().to_records(index=False)
    fig, axes = new_grid(len(models), 4 * len(models), 3.6)
    for ax, (family, depth) in zip(axes, models):
        g = table[(table["family"] == family) & (table["depth"] == depth)]
        y = np.arange(len(g))
        ax.errorbar(g["diff"], y, xerr=[g["diff"] - g["low"], g["high"] - g["diff"]], fmt="o")
        ax.axvline(0, color="k", lw=0.6)
        ax.set_yticks(y, g["baseline"])
        ax.set_title(f"{family}-{depth}: keep-τ − baseline")
        ax.set_xlabel("Δ test MSE (90 % CI)")
    return fig
