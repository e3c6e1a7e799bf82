"""dispat figures (matplotlib, Agg) — no Dagster import."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.plotting import new_grid


def rounds_figure(rounds: pd.DataFrame, f: str):
    """Per self-play round (default f, every cell): the variational estimate D̂_f = −L_f at the end
    of the round, and the validation NLL after the round relative to θ0's."""
    fig, (ax, bx) = new_grid(2, 10, 3.8)
    part = rounds[rounds["f"] == f]
    for (d, s), g in part.groupby(["dataset", "seed"]):
        g = g.sort_values("round")
        ax.plot(g["round"] + 1, g["divergence"], marker="o", label=f"{d} / {s}", alpha=0.8)
        base = float(g["val_nll_before"].iloc[0])
        bx.plot(np.r_[0, g["round"] + 1], np.r_[1.0, g["val_nll_after"] / base], marker="o", alpha=0.8)
    ax.set_xlabel("round t + 1")
    ax.set_ylabel(f"D̂_{f} (end of round)")
    ax.set_title("f-divergence estimate per round")
    ax.legend(fontsize=6)
    bx.axhline(1.02, color="grey", ls="--", lw=0.8)
    bx.set_xlabel("round")
    bx.set_ylabel("validation NLL / θ0's")
    bx.set_title("no-collapse check (dashed: +2 %)")
    return fig


def auroc_figure(methods: pd.DataFrame):
    """Mean test AUROC per method and dataset."""
    datasets = sorted(methods["dataset"].unique())
    fig, axes = new_grid(len(datasets), 4.2 * len(datasets), 4.0)
    for ax, d in zip(axes, datasets):
        g = methods[methods["dataset"] == d].sort_values("auroc")
        colours = ["tab:red" if m.startswith("dispat") else "tab:orange" if m.startswith("anollm") else "tab:grey"
                   for m in g["method"]]
        ax.barh(g["method"], g["auroc"], color=colours)
        ax.set_xlim(max(0.0, float(g["auroc"].min()) - 0.05), 1.0)
        ax.set_title(d, fontsize=9)
        ax.set_xlabel("test AUROC (mean over seeds)")
        ax.tick_params(labelsize=7)
    return fig


def c2st_figure(al: pd.DataFrame):
    fig, axes = new_grid(1, 5, 3.8)
    ax = axes[0]
    for d, g in al.groupby("dataset"):
        ax.scatter(g["c2st_theta0"], g["c2st_thetaT"], label=d)
    lo = float(min(al["c2st_theta0"].min(), al["c2st_thetaT"].min())) - 0.02
    ax.plot([lo, 1], [lo, 1], color="grey", lw=0.8)
    ax.set_xlabel("C2ST AUC, θ0 samples")
    ax.set_ylabel("C2ST AUC, θ_T samples")
    ax.set_title("below the diagonal: θ_T closer to data")
    ax.legend(fontsize=7)
    return fig
