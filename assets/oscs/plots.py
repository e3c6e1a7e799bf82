"""OSCS report figures (matplotlib only; no Dagster)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.plotting import new_grid
from assets.oscs.benchmark import METHOD_LABELS

_COLORS = {"oscs": "#1f77b4", "oscs_newton": "#17becf", "oscs_two_sided": "#8c564b", "fixed_threshold": "#d62728",
           "batch_lfdr": "#9467bd", "oracle": "#2ca02c", "conformal_lord": "#ff7f0e",
           "no_recursion": "#7f7f7f"}


def far_by_scenario(summary: pd.DataFrame):
    """Mean realized FAR (malicious among accepted) per scenario and method, one panel per
    (detector, α), with the target α drawn as a dashed line.

    summary: rows (detector, scenario, alpha, method, far_selected, ...).
    """
    panels = summary[["detector", "alpha"]].drop_duplicates().sort_values(["detector", "alpha"]).to_numpy()
    fig, axes = new_grid(len(panels), 5.2 * len(panels), 4.2)
    methods = [m for m in METHOD_LABELS if m in set(summary["method"])]
    for ax, (detector, alpha) in zip(axes, panels):
        sub = summary[(summary["detector"] == detector) & (summary["alpha"] == alpha)]
        scenarios = list(dict.fromkeys(sub["scenario"]))
        width = 0.8 / len(methods)
        for i, method in enumerate(methods):
            vals = sub[sub["method"] == method].set_index("scenario").reindex(scenarios)["far_selected"]
            ax.bar(np.arange(len(scenarios)) + i * width, vals, width, label=METHOD_LABELS[method],
                   color=_COLORS[method])
        ax.axhline(alpha, ls="--", color="k", lw=1)
        ax.set_xticks(np.arange(len(scenarios)) + 0.4 - width / 2, scenarios, rotation=30)
        ax.set_title(f"{detector}, α = {alpha:g}")
        ax.set_ylabel("realized FAR (malicious among accepted)")
    axes[0].legend(fontsize=7)
    return fig


def far_over_time(decisions: pd.DataFrame, methods=("oscs", "oscs_newton", "fixed_threshold", "oracle")):
    """Running FAR(t) averaged over seeds, for each scenario (first detector, largest α)."""
    detector = sorted(decisions["detector"].unique())[0]
    alpha = float(decisions["alpha"].max())
    sub = decisions[(decisions["detector"] == detector) & (decisions["alpha"] == alpha)]
    scenarios = list(dict.fromkeys(sub["scenario"]))
    fig, axes = new_grid(len(scenarios), 4.0 * len(scenarios), 3.6)
    for ax, scenario in zip(axes, scenarios):
        runs = sub[sub["scenario"] == scenario]
        for method in methods:
            curves = []
            for _, run in runs.groupby("seed"):
                accepted = np.cumsum(run[method].to_numpy())
                bad = np.cumsum(run[method].to_numpy() * run["label"].to_numpy())
                curves.append(bad / np.maximum(accepted, 1))
            ax.plot(run["t"].to_numpy(), np.mean(curves, axis=0), label=METHOD_LABELS[method],
                    color=_COLORS[method], lw=1.2)
        ax.axhline(alpha, ls="--", color="k", lw=1)
        ax.set_title(f"{scenario} ({detector}, α={alpha:g})")
        ax.set_xlabel("t")
        ax.set_ylim(0, max(0.3, alpha * 3))
    axes[0].set_ylabel("running FAR")
    axes[0].legend(fontsize=7)
    return fig


def pi0_trace(decisions: pd.DataFrame, detector: str = "onion"):
    """π̂0_t of the OSCS variants against the true null proportion (seed-averaged), for one
    detector (ONION by default: its attacks score *low*, where the one-sided p-values miss them)."""
    if detector not in set(decisions["detector"]):
        detector = sorted(decisions["detector"].unique())[0]
    alpha = float(decisions["alpha"].max())
    sub = decisions[(decisions["detector"] == detector) & (decisions["alpha"] == alpha)]
    scenarios = list(dict.fromkeys(sub["scenario"]))
    fig, axes = new_grid(len(scenarios), 4.0 * len(scenarios), 3.4)
    for ax, scenario in zip(axes, scenarios):
        runs = sub[sub["scenario"] == scenario]
        t = runs.groupby("seed").get_group(runs["seed"].iloc[0])["t"].to_numpy()
        for variant in ("oscs", "oscs_newton", "oscs_two_sided"):
            mean = np.mean([r[f"{variant}_pi0_hat"].to_numpy() for _, r in runs.groupby("seed")], axis=0)
            ax.plot(t, mean, label=METHOD_LABELS[variant], color=_COLORS[variant])
        ax.axhline(1 - runs["label"].mean(), ls="--", color="k", lw=1, label="true π0")
        ax.set_title(scenario)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("t")
    axes[0].set_ylabel("π̂0")
    axes[0].legend(fontsize=7)
    return fig


def gaussian_power(gaussian: pd.DataFrame):
    """TAR (benign acceptance) of every method vs μ in the Gaussian suite, per α."""
    tars = gaussian[gaussian["metric"] == "tar"].groupby(["alpha", "mu", "method"])["value"].mean().reset_index()
    alphas = sorted(tars["alpha"].unique())
    fig, axes = new_grid(len(alphas), 4.6 * len(alphas), 3.6)
    for ax, alpha in zip(axes, alphas):
        sub = tars[tars["alpha"] == alpha]
        for method, g in sub.groupby("method"):
            ax.plot(g["mu"], g["value"], marker="o", label=METHOD_LABELS[method], color=_COLORS[method])
        ax.set_title(f"Gaussian suite, α = {alpha:g}")
        ax.set_xlabel("μ (separation of f1 from f0)")
        ax.set_ylabel("TAR (benign accepted)")
    axes[0].legend(fontsize=7)
    return fig


def ablation(text_table: pd.DataFrame, gauss_table: pd.DataFrame):
    """Left: worst mean FAR − α per detector with each piece of m̂ swapped for the truth; right:
    Gaussian-suite TAR per variant (mean over μ and α)."""
    fig, axes = new_grid(2, 10.0, 3.6)
    variants = list(dict.fromkeys(text_table["variant"].astype(str)))
    detectors = list(dict.fromkeys(text_table["detector"]))
    width = 0.8 / max(1, len(variants))
    for i, variant in enumerate(variants):
        values = [float(text_table[(text_table["detector"] == d) & (text_table["variant"].astype(str) == variant)]
                        ["worst_excess"].iloc[0]) for d in detectors]
        axes[0].bar(np.arange(len(detectors)) + i * width, values, width, label=variant)
    axes[0].axhline(0.01, ls="--", color="k", lw=1)
    axes[0].set_xticks(np.arange(len(detectors)) + width * (len(variants) - 1) / 2, detectors)
    axes[0].set_ylabel("worst mean FAR − α (text)")
    axes[0].legend(fontsize=7)
    tar = gauss_table.groupby(gauss_table["variant"].astype(str))["tar"].mean().reindex(variants)
    axes[1].bar(np.arange(len(variants)), tar.to_numpy(), color="#1f77b4")
    axes[1].set_xticks(np.arange(len(variants)), variants, rotation=20, fontsize=7)
    axes[1].set_ylabel("TAR (Gaussian suite)")
    return fig
