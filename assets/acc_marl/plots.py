"""acc_marl figures (matplotlib, Agg) — no Dagster import."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from assets.acc_marl import layouts as lay_mod
from assets.common.plotting import new_grid


def training_curves(policies: pd.DataFrame):
    """Training success (episodes ended in each rollout) vs env steps, mean over seeds."""
    names = sorted(policies["layout"].unique())
    fig, axes = new_grid(len(names), 5.0 * len(names), 3.6)
    for ax, name in zip(axes, names):
        for variant, grp in policies[policies["layout"] == name].groupby("variant"):
            logs = pd.concat([pd.DataFrame(json.loads(s)) for s in grp["log"]])
            mean = logs.groupby("steps")["success"].mean()
            ax.plot(mean.index, mean.values, marker="o", ms=3, label=variant)
        ax.set_title(name)
        ax.set_xlabel("env steps")
        ax.set_ylabel("training success")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def success_bars(cells: pd.DataFrame):
    """Test success per sampler × split (random assignment), mean ± sd over seeds."""
    names = sorted(cells["layout"].unique())
    fig, axes = new_grid(len(names), 5.5 * len(names), 3.6)
    sub = cells[cells["assignment"] == "random"]
    for ax, name in zip(axes, names):
        s = sub[sub["layout"] == name]
        groups = s.groupby(["sampler", "split", "variant"])["success"].agg(["mean", "std"]).reset_index()
        labels = sorted({(r.sampler, r.split) for r in groups.itertuples()})
        variants = sorted(groups["variant"].unique())
        width = 0.8 / len(variants)
        for k, v in enumerate(variants):
            g = groups[groups["variant"] == v].set_index(["sampler", "split"])
            vals = [g["mean"].get(lab, np.nan) for lab in labels]
            errs = [g["std"].get(lab, np.nan) for lab in labels]
            ax.bar(np.arange(len(labels)) + k * width, vals, width, yerr=errs, label=v)
        ax.set_xticks(np.arange(len(labels)) + 0.4 - width / 2)
        ax.set_xticklabels([f"{a}/{b}" for a, b in labels], fontsize=7)
        ax.set_ylabel("team success")
        ax.set_title(name)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def budget_figure(table: pd.DataFrame):
    """Budget curve: ACC-MARL − random success vs env steps per layout, paired 90 % CI over seeds
    (benchmark.budget_table), with the premise's bound at 0."""
    names = list(dict.fromkeys(table["layout"]))
    fig, axes = new_grid(max(1, len(names)), 5.0 * max(1, len(names)), 3.6)
    for ax, name in zip(axes, names):
        g = table[table["layout"] == name]
        ax.fill_between(g["steps"], g["ci_low"], g["ci_high"], alpha=0.25, label="paired 90 % CI")
        ax.plot(g["steps"], g["delta"], marker="o", ms=4, label="ACC-MARL − random")
        ax.axhline(0.0, color="grey", lw=1, ls="--")
        ax.set_title(name)
        ax.set_xlabel("PPO env steps")
        ax.set_ylabel("success: trained − random")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def trace_figure(layout: lay_mod.Layout, trace: dict, title: str):
    """The layout with both agents' paths of one episode (agent 0 blue, agent 1 orange)."""
    fig, axes = new_grid(1, 4.2, 4.2)
    ax = axes[0]
    h, w = layout.shape
    img = np.ones((h, w, 3))
    img[layout.wall] = 0.2
    img[layout.door >= 0] = (0.8, 0.5, 0.5)
    img[layout.button >= 0] = (0.5, 0.8, 0.5)
    ax.imshow(img)
    for r in range(h):
        for c in range(w):
            if layout.token[r, c] >= 0:
                ax.text(c, r, str(layout.token[r, c]), ha="center", va="center", fontsize=8)
    pos = np.asarray(trace["pos"])
    for i, color in enumerate(("tab:blue", "tab:orange")):
        if pos.shape[1] > i:
            ax.plot(pos[:, i, 1] + 0.1 * i, pos[:, i, 0] + 0.1 * i, color=color, lw=1.5, marker=".", ms=3,
                    label=f"agent {i}")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_xticks([])
    ax.set_yticks([])
    fig.tight_layout()
    return fig
