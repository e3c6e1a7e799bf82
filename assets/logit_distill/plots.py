"""Report figures (matplotlib only; no Dagster). Seeds are drawn as points, means as bars."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.plotting import new_grid
from assets.logit_distill.benchmark import OBJECTIVE_LABELS

OBJECTIVE_ORDER = ("kl", "l1", "l2", "ce")
_COLORS = {"kl": "#d62728", "l1": "#2ca02c", "l2": "#1f77b4", "ce": "#7f7f7f"}


def per_objective(metrics: pd.DataFrame, panels: list[tuple[str, str, str]], title: str,
                  reference: dict[tuple[str, str], float] | None = None):
    """One panel per (dataset, metric, y label): bar = mean over seeds, dots = seeds.
    reference: {(dataset, metric): value} drawn as a dashed line (e.g. the teacher's)."""
    fig, axes = new_grid(len(panels), 4.2 * len(panels), 3.8)
    rng = np.random.default_rng(0)
    for ax, (dataset, metric, ylabel) in zip(axes, panels):
        sub = metrics[(metrics["dataset"] == dataset) & (metrics["metric"] == metric)]
        objectives = [o for o in OBJECTIVE_ORDER if o in set(sub["objective"])]
        for i, objective in enumerate(objectives):
            values = sub[sub["objective"] == objective]["value"].to_numpy(dtype=float)
            ax.bar(i, np.mean(values), 0.6, color=_COLORS[objective], alpha=0.35)
            ax.scatter(i + rng.uniform(-0.15, 0.15, len(values)), values, s=18,
                       color=_COLORS[objective], zorder=3)
        if reference and (dataset, metric) in reference:
            ax.axhline(reference[(dataset, metric)], ls="--", color="black", lw=1, label="teacher")
            ax.legend(fontsize=7, loc="lower right")
        ax.set_xticks(range(len(objectives)))
        ax.set_xticklabels([OBJECTIVE_LABELS[o].split(" (")[0] for o in objectives], fontsize=8)
        ax.set_ylabel(ylabel)
        ax.set_title(f"{dataset}: {metric}", fontsize=9)
        if metric in ("d_rep", "d2_logit"):
            ax.set_yscale("log")
    fig.suptitle(title, fontsize=10)
    return fig


def kl_vs_logit_distance(metrics: pd.DataFrame):
    """Each student as a point: KL to the teacher (x) vs d²_logit (y), log–log, per dataset.
    Small KL does not mean small logit distance (the KL students sit high)."""
    datasets = sorted(metrics["dataset"].unique())
    fig, axes = new_grid(len(datasets), 4.6 * len(datasets), 3.8)
    for ax, dataset in zip(axes, datasets):
        sub = metrics[metrics["dataset"] == dataset]
        w = sub.pivot_table(index=["objective", "teacher_seed", "seed"], columns="metric",
                            values="value").reset_index()
        for objective in OBJECTIVE_ORDER:
            g = w[w["objective"] == objective]
            if len(g):
                ax.scatter(g["kl_to_teacher"], g["d2_logit"], s=20, color=_COLORS[objective],
                           label=OBJECTIVE_LABELS[objective])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("KL(teacher‖student) [nats]")
        ax.set_ylabel("d²_logit [nats²]")
        ax.set_title(dataset, fontsize=9)
        ax.legend(fontsize=7)
    return fig
