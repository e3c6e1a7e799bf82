"""Dream-MPC report figures (matplotlib only; no Dagster)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.plotting import new_grid

PLANNER_ORDER = ["policy_only", "mppi", "cem", "naive_grad", "dream_mpc", "dream_mpc_no_uncertainty",
                 "dream_mpc_no_reuse", "dream_mpc_i3"]
FAMILY_COLORS = {"policy_only": "#7f7f7f", "mppi": "#d62728", "cem": "#ff7f0e", "naive_grad": "#9467bd",
                 "dream_mpc": "#1f77b4"}


def aggregate_bars(aggregates: pd.DataFrame, budget: str = "strong"):
    """IQM / mean / median / optimality gap per planner with bootstrap 95 % CIs (strong prior)."""
    sub = aggregates[aggregates["budget"] == budget]
    kinds = ["iqm", "mean", "median", "optimality_gap"]
    fig, axes = new_grid(len(kinds), 4.0 * len(kinds), 3.8)
    planners = [p for p in PLANNER_ORDER if p in set(sub["planner"])]
    for ax, kind in zip(axes, kinds):
        rows = sub[sub["aggregate"] == kind].set_index("planner").reindex(planners)
        y = np.arange(len(planners))
        ax.barh(y, rows["value"], color="#1f77b4", alpha=0.7)
        ax.errorbar(rows["value"], y, xerr=[rows["value"] - rows["ci_low"], rows["ci_high"] - rows["value"]],
                    fmt="none", ecolor="k", lw=1)
        ax.set_yticks(y, planners if ax is axes[0] else [""] * len(planners))
        ax.set_title(kind.replace("_", " "))
        ax.set_xlabel("normalised score")
    return fig


def per_task_scores(episodes: pd.DataFrame, budget: str = "strong"):
    """Mean normalised score per task and planner (dots = runs)."""
    sub = episodes[episodes["budget"] == budget]
    tasks = sorted(sub["task"].unique())
    fig, axes = new_grid(len(tasks), 4.2 * len(tasks), 3.8)
    planners = [p for p in PLANNER_ORDER if p in set(sub["planner"])]
    for ax, task in zip(axes, tasks):
        t = sub[sub["task"] == task]
        runs = t.groupby(["planner", "seed"])["normalised_score"].mean()
        for i, p in enumerate(planners):
            vals = runs.loc[p].to_numpy() if p in runs.index.get_level_values(0) else np.array([])
            ax.bar(i, vals.mean() if len(vals) else np.nan, color="#1f77b4", alpha=0.6)
            ax.scatter(np.full(len(vals), i), vals, color="k", s=10)
        ax.set_xticks(range(len(planners)), planners, rotation=60, ha="right", fontsize=7)
        ax.set_title(task)
        ax.set_ylabel("normalised score")
    return fig


def prior_quality_trend(episodes: pd.DataFrame):
    """Mean normalised score of policy / Dream-MPC / MPPI at the weak, medium, strong priors."""
    fig, axes = new_grid(1, 5.5, 3.8)
    ax = axes[0]
    order = ["weak", "medium", "strong"]
    for p in ["policy_only", "dream_mpc", "mppi"]:
        sub = episodes[episodes["planner"] == p]
        means = sub.groupby(["budget", "task"])["normalised_score"].mean().groupby("budget").mean().reindex(order)
        ax.plot(order, means.to_numpy(), marker="o", label=p, color=FAMILY_COLORS[p])
    ax.set_xlabel("policy prior (checkpoint at 25 / 50 / 100 % of training)")
    ax.set_ylabel("normalised score (mean over tasks)")
    ax.legend(fontsize=8)
    return fig


def learning_curves(curves: pd.DataFrame):
    """Training episode returns and held-out policy evaluation per task (one line per seed)."""
    tasks = sorted(curves["task"].unique())
    fig, axes = new_grid(len(tasks), 4.2 * len(tasks), 3.5)
    for ax, task in zip(axes, tasks):
        for seed, g in curves[curves["task"] == task].groupby("seed"):
            tr = g[g["kind"] == "episode_return"]
            ev = g[g["kind"] == "eval_return"]
            line, = ax.plot(tr["decision"], tr["value"], alpha=0.6, label=f"seed {seed} train")
            ax.plot(ev["decision"], ev["value"], marker="s", ls="--", color=line.get_color(),
                    label=f"seed {seed} policy eval")
        ax.set_title(task)
        ax.set_xlabel("decisions")
        ax.set_ylabel("episode return")
    axes[0].legend(fontsize=6)
    return fig


def microbench(synthetic: pd.DataFrame, frozen: pd.DataFrame):
    """Objective reached vs optimisation evaluations: synthetic LQ per action dim (fraction of
    the prior→optimum gap closed) and frozen learned models (J − J_policy)."""
    dims = sorted(synthetic["action_dim"].unique())
    fig, axes = new_grid(len(dims) + 1, 3.6 * (len(dims) + 1), 3.6)
    for ax, m in zip(axes, dims):
        sub = synthetic[synthetic["action_dim"] == m]
        _family_lines(ax, sub, "gap_closed")
        ax.set_title(f"synthetic LQ, action dim {m}")
        ax.set_ylabel("fraction of prior→optimum gap closed")
        ax.axhline(1.0, color="k", lw=0.8, ls=":")
    ax = axes[len(dims)]
    _family_lines(ax, frozen.groupby(["planner", "family"], as_index=False)
                  [["optimisation_evaluations", "improvement"]].mean(), "improvement")
    ax.set_title("frozen learned models (mean)")
    ax.set_ylabel("J − J(policy)")
    axes[0].legend(fontsize=7)
    return fig


def _family_lines(ax, frame: pd.DataFrame, value: str) -> None:
    for fam, g in frame.groupby("family"):
        if fam == "policy_only":
            continue
        g = g.sort_values("optimisation_evaluations")
        ax.plot(np.maximum(g["optimisation_evaluations"], 1), g[value], marker="o", label=fam,
                color=FAMILY_COLORS.get(fam))
    ax.axhline(0.0, color="#7f7f7f", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("optimisation evaluations per decision")
