"""Report figures for diffusion_w2 (matplotlib only; no Dagster)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.plotting import new_grid
from assets.diffusion_w2.processes import GRIDS

_FAMILY_STYLE = {"gmm_sup": ("#1f77b4", "GMM-sup (recursion)"), "lipschitz": ("#2ca02c", "Lipschitz"),
                 "general": ("#d62728", "general (radius R)"),
                 "pathwise": ("#7f7f7f", "pathwise surrogate (not a bound)")}


def bound_vs_rms(empirical: pd.DataFrame, bounds: pd.DataFrame):
    """Every configuration: bound (log10) against the measured coupling RMS, one colour per
    bound family; the diagonal is 'bound = RMS' (points below it would be violations)."""
    merged = empirical.merge(bounds, on=["target", "process", "sampler", "grid", "delta", "K", "error_model"])
    fig, axes = new_grid(2, 11.0, 4.4)
    for ax, families, title in ((axes[0], ("gmm_sup", "pathwise"), "sharp bounds"),
                                (axes[1], ("lipschitz", "general"), "Lipschitz and general bounds")):
        for family in families:
            colour, label = _FAMILY_STYLE[family]
            y = merged[f"log10_{family}"].to_numpy(dtype=float)
            x = np.log10(merged["rms"].to_numpy(dtype=float))
            keep = np.isfinite(y) & np.isfinite(x)
            ax.scatter(x[keep], y[keep], s=9, alpha=0.6, color=colour, label=label)
        lim = np.log10(merged["rms"].clip(lower=1e-3)).agg(["min", "max"]).to_numpy()
        ax.plot(lim, lim, "k--", lw=1, label="bound = RMS")
        ax.set_xlabel("log10 coupling RMS (measured)")
        ax.set_ylabel("log10 bound")
        ax.set_title(title)
        ax.legend(fontsize=7)
    return fig


def delta_sweep(bounds: pd.DataFrame, targets: list[str], error_model: str, K: int):
    """log10 bound against δ for the general and Lipschitz bounds (and GMM-sup where defined),
    one panel per target × process, one line style per grid (SDE)."""
    sub = bounds[bounds["target"].isin(targets) & (bounds["error_model"] == error_model)
                 & (bounds["K"] == K) & (bounds["sampler"] == "sde")]
    panels = sub[["target", "process"]].drop_duplicates().sort_values(["target", "process"]).to_numpy()
    fig, axes = new_grid(max(len(panels), 1), 4.2 * max(len(panels), 1), 3.8)
    styles = dict(zip(GRIDS, ("-", "--", ":", "-.")))
    for ax, (target, process) in zip(axes, panels):
        g = sub[(sub["target"] == target) & (sub["process"] == process)]
        for family in ("general", "lipschitz", "gmm_sup"):
            colour, label = _FAMILY_STYLE[family]
            for grid, gg in g.groupby("grid"):
                gg = gg.sort_values("delta")
                if np.isfinite(gg[f"log10_{family}"]).any():
                    ax.plot(gg["delta"], gg[f"log10_{family}"], styles.get(grid, "-"),
                            color=colour, marker="o", ms=3,
                            label=f"{label}, {grid}" if grid == "uniform" or family == "general" else None)
        ax.set_xscale("log")
        ax.set_xlabel("early stopping δ")
        ax.set_title(f"{target} / {process} / SDE")
    axes[0].set_ylabel("log10 bound on coupling RMS")
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=6)
    else:
        axes[0].text(0.5, 0.5, "no δ-sweep in this run", ha="center", va="center", transform=axes[0].transAxes)
    return fig


def grid_ranking(empirical: pd.DataFrame, bounds: pd.DataFrame, targets: list[str], delta: float, K: int):
    """Coupling RMS (bars) and the GMM-sup bound (markers) per time grid."""
    merged = empirical.merge(bounds, on=["target", "process", "sampler", "grid", "delta", "K", "error_model"])
    sub = merged[merged["target"].isin(targets) & (merged["delta"] == delta) & (merged["K"] == K)]
    cells = sub[["target", "process", "error_model"]].drop_duplicates().sort_values(
        ["target", "process", "error_model"]).to_numpy()
    fig, axes = new_grid(max(len(cells), 1), 3.4 * max(len(cells), 1), 3.6)
    for ax, (target, process, err) in zip(axes, cells):
        g = sub[(sub["target"] == target) & (sub["process"] == process) & (sub["error_model"] == err)]
        for offset, sampler, colour in ((-0.2, "sde", "#1f77b4"), (0.2, "ode", "#ff7f0e")):
            gs = g[g["sampler"] == sampler].set_index("grid").reindex(list(GRIDS))
            xs = np.arange(len(GRIDS)) + offset
            ax.bar(xs, gs["rms"], 0.38, color=colour, alpha=0.6, label=f"RMS {sampler}")
            ax.plot(xs, np.power(10.0, gs["log10_gmm_sup"]), "v", color=colour, label=f"bound {sampler}")
        ax.set_yscale("log")
        ax.set_xticks(np.arange(len(GRIDS)), GRIDS, rotation=20)
        ax.set_title(f"{target}/{process}/{err}", fontsize=8)
    axes[0].set_ylabel("coupling RMS / bound")
    axes[0].legend(fontsize=6)
    return fig


def gaussian_closed_form(d1: pd.DataFrame):
    """Monte-Carlo W2 (seed mean, bootstrap CI) against the closed-form Bures W2."""
    fig, axes = new_grid(1, 5.0, 4.4)
    ax = axes[0]
    for target, marker in (("gauss1d", "o"), ("gauss2d", "s")):
        g = d1[d1["target"] == target]
        if g.empty:
            continue
        yerr = np.vstack([g["w2"] - g["w2_ci_lo"], g["w2_ci_hi"] - g["w2"]]).clip(min=0)
        ax.errorbar(g["exact_w2"], g["w2"], yerr=yerr, fmt=marker, ms=4, label=target, alpha=0.8)
    if len(d1):
        lim = [d1["exact_w2"].min() * 0.8, d1["exact_w2"].max() * 1.2]
        ax.plot(lim, lim, "k--", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("closed-form W2 (Bures, analytic recursions)")
    ax.set_ylabel("Monte-Carlo W2")
    ax.legend(fontsize=7)
    return fig
