"""PAC labeling report figures (matplotlib only; no Dagster)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.plotting import new_figure, new_grid
from assets.pac_labels.benchmark import METHOD_LABELS

_COLORS = {"pac": "#1f77b4", "plugin": "#ff7f0e", "naive": "#d62728", "ai_only": "#7f7f7f",
           "all_expert": "#2ca02c"}


def _labels(frame: pd.DataFrame) -> list[str]:
    return [f"{d}/{m}/{c}" for d, m, c in frame[["dataset_id", "model", "ci"]].itertuples(index=False)]


def realized_error(outcomes: pd.DataFrame, epsilon: float):
    """Realized error over trials per partition: PAC vs plug-in (box plots), naive (marker),
    the target ε (dashed). Errors are in each partition's loss units."""
    parts = outcomes[["dataset_id", "model", "ci"]].drop_duplicates().sort_values(["dataset_id", "model", "ci"])
    names = _labels(parts)
    fig, ax = new_figure(max(6.0, 0.9 * len(names) + 2), 4.4)
    for offset, method in ((-0.18, "pac"), (0.18, "plugin")):
        data = [outcomes[(outcomes[["dataset_id", "model", "ci"]] == row).all(axis=1)
                         & (outcomes["method"] == method)]["error"].to_numpy() for row in parts.to_numpy()]
        box = ax.boxplot(data, positions=np.arange(len(names)) + offset, widths=0.3, patch_artist=True,
                         showfliers=False)
        for patch in box["boxes"]:
            patch.set_facecolor(_COLORS[method])
            patch.set_alpha(0.6)
        ax.plot([], [], color=_COLORS[method], lw=6, alpha=0.6, label=METHOD_LABELS[method])
    naive = [outcomes[(outcomes[["dataset_id", "model", "ci"]] == row).all(axis=1)
                      & (outcomes["method"] == "naive")]["error"].mean() for row in parts.to_numpy()]
    ax.scatter(np.arange(len(names)), naive, marker="x", color=_COLORS["naive"], label=METHOD_LABELS["naive"], zorder=3)
    ax.axhline(epsilon, ls="--", color="k", lw=1, label="ε")
    ax.set_xticks(np.arange(len(names)), names, rotation=35, ha="right", fontsize=7)
    ax.set_ylabel("realized labeling error")
    finite_naive = [v for v in naive if np.isfinite(v) and v < 10 * epsilon]
    ax.set_ylim(0, max([3 * epsilon, 0.01] + [1.1 * v for v in finite_naive]))
    ax.legend(fontsize=7)
    ax.set_title("Realized error over trials (the guarantee: ≤ ε with prob. ≥ 1 − α)")
    return fig


def violation_and_save(summary: pd.DataFrame, alpha: float):
    """Left: violation frequency per partition and method (α dashed). Right: mean fraction of
    labels saved ± sd."""
    parts = summary[["dataset_id", "model", "ci"]].drop_duplicates().sort_values(["dataset_id", "model", "ci"])
    names = _labels(parts)
    fig, axes = new_grid(2, max(10.0, 1.4 * len(names)), 4.4)
    methods = ("pac", "plugin", "naive")
    width = 0.8 / len(methods)
    for i, method in enumerate(methods):
        sub = summary[summary["method"] == method].set_index(["dataset_id", "model", "ci"]).reindex(
            [tuple(r) for r in parts.to_numpy()])
        x = np.arange(len(names)) + (i - 1) * width
        axes[0].bar(x, sub["violation_freq"], width, color=_COLORS[method], label=METHOD_LABELS[method])
        axes[1].bar(x, sub["save_mean"], width, yerr=sub["save_sd"], color=_COLORS[method],
                    label=METHOD_LABELS[method])
    axes[0].axhline(alpha, ls="--", color="k", lw=1, label="α")
    axes[0].set_ylabel("P(error > ε) over trials")
    axes[1].set_ylabel("fraction of labels not bought")
    for ax in axes:
        ax.set_xticks(np.arange(len(names)), names, rotation=35, ha="right", fontsize=7)
    axes[0].legend(fontsize=7)
    return fig


def ucb_curves(thresholds: pd.DataFrame, epsilon: float, max_panels: int = 8):
    """UCB_α(u) of trial 0 for each partition with its û (vertical line) and ε (dashed)."""
    rows = thresholds[(thresholds["trial"] == 0) & (thresholds["method"] == "pac")].head(max_panels)
    fig, axes = new_grid(max(len(rows), 1), 3.2 * max(len(rows), 1), 3.2)
    for ax, row in zip(axes, rows.itertuples(index=False)):
        u = np.asarray(row.ucb_curve_u, dtype=float)
        v = np.asarray(row.ucb_curve_value, dtype=float)
        ax.plot(u, v, color=_COLORS["pac"], lw=1.3)
        ax.axhline(row.epsilon_pool, ls="--", color="k", lw=1)
        if np.isfinite(row.u_hat):
            ax.axvline(row.u_hat, color=_COLORS["naive"], lw=1)
        ax.set_ylim(0, max(3 * epsilon, float(np.nanmin(v)) * 1.1 if v.size else 0.1))
        ax.set_title(f"{row.dataset_id}/{row.model}/{row.ci}", fontsize=8)
        ax.set_xlabel("threshold u (uncertainty)")
    axes[0].set_ylabel("UCB of L(u)")
    return fig


def router_costs(summary: pd.DataFrame):
    """Mean total cost per item (expert = 1) of PAC labeling with each single model and the router."""
    sub = summary[(summary["method"] == "pac") & summary["dataset_id"].isin(
        summary.loc[summary["model"] == "router", "dataset_id"])]
    fig, ax = new_figure(5.0, 3.6)
    if sub.empty:
        ax.text(0.5, 0.5, "no router partition", ha="center")
        return fig
    ax.bar(sub["model"], sub["cost_mean"], color=["#9467bd" if m == "router" else "#8c564b" for m in sub["model"]])
    ax.set_ylabel("total cost per item (expert = 1)")
    ax.set_title(f"{sub['dataset_id'].iloc[0]}: PAC labeling cost")
    return fig
