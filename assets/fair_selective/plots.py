"""fair_selective figures (matplotlib, Agg) — no Dagster import."""
from __future__ import annotations

import json

import pandas as pd

from assets.common.plotting import new_grid


def training_curves(checkpoints: pd.DataFrame, selected: pd.DataFrame):
    """True |Δ| (TPR, training windows) over steps, mean over seeds, per env and selected agent."""
    envs = sorted(checkpoints["env"].unique())
    fig, axes = new_grid(len(envs), 5.5 * len(envs), 3.8)
    for ax, env in zip(axes, envs):
        for row in selected[selected["env"] == env].itertuples():
            runs = checkpoints[(checkpoints["env"] == env) & (checkpoints["agent"] == row.agent)
                               & (checkpoints["beta1"] == row.beta1) & (checkpoints["beta2"] == row.beta2)]
            curves = pd.concat([pd.DataFrame(json.loads(c)) for c in runs["curve"]])
            mean = curves.groupby("steps")["delta_true"].mean()
            ax.plot(mean.index, mean.values, label=f"{row.agent} (β1={row.beta1:g})")
        ax.axhline(0.05, color="k", ls="--", lw=0.8)
        ax.set_title(env)
        ax.set_xlabel("training steps")
        ax.set_ylabel("true |Δ| (TPR) in the window")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def fairness_vs_profit(table: pd.DataFrame):
    """Eval: mean true |Δ| vs mean profit per agent (error bars: std over seeds)."""
    envs = sorted(table["env"].unique())
    fig, axes = new_grid(len(envs), 5.5 * len(envs), 3.8)
    for ax, env in zip(axes, envs):
        agg = table[table["env"] == env].groupby("agent").agg(d=("delta_true", "mean"), ds=("delta_true", "std"),
                                                              p=("profit", "mean"), ps=("profit", "std"))
        for agent, r in agg.iterrows():
            ax.errorbar(r["d"], r["p"], xerr=r["ds"], yerr=r["ps"], fmt="o", label=agent, capsize=3)
        ax.axvline(0.05, color="k", ls="--", lw=0.8)
        ax.set_title(env)
        ax.set_xlabel("true |Δ| (TPR), eval")
        ax.set_ylabel("profit (resource − R0)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
