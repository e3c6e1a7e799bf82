"""BREW report figures (matplotlib only; no Dagster)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.brew import benchmark as B
from assets.common.plotting import new_figure, new_grid

ROC_METHODS = ("brew_soft_S4", "brew_hard_S4", "brew_global_S4", "ecc_thr_errors", "ecc_thr_margin", "mpac")


def roc_curves(scored: pd.DataFrame, attack: str = "syn10"):
    """Exact-message TPR under `attack` vs human-text FPR over every threshold (log FPR)."""
    fig, ax = new_figure(6.0, 4.4)
    for method in ROC_METHODS:
        roc = B.roc_points(scored, method, attack)
        if len(roc):
            ax.step(np.maximum(roc["fpr"], 1e-4), roc["tpr"], where="post", label=B.METHOD_LABELS[method])
    ax.axvline(0.02, ls="--", color="k", lw=1)
    ax.set_xscale("log")
    ax.set_xlim(1e-3, 1.0)
    ax.set_xlabel("FPR on human text (threshold swept)")
    ax.set_ylabel(f"TPR, exact message ({attack})")
    ax.legend(fontsize=7)
    return fig


def tpr_by_attack(summary: pd.DataFrame):
    """Pooled exact-message TPR per attack: BREW (analytic rule) vs the baselines at their
    human-calibrated FPR-0.02 thresholds."""
    pos = summary[summary["role"] == "positive"]
    attacks = [a for a in ("none", "syn10", "syn10_cos75", "syn20", "ins5", "ins5_burst", "del5", "copy_paste")
               if a in set(pos["attack"])]
    methods = [m for m in ("brew_soft_S4", "brew_hard_S4", "brew_global_S4", "ecc_decode", "ecc_thr_errors",
                           "ecc_thr_margin",
                           "kgw", "mpac") if m in set(pos["method"])]
    fig, ax = new_figure(8.0, 4.2)
    width = 0.8 / max(len(methods), 1)
    for i, method in enumerate(methods):
        col = "tpr_exact" if method.startswith("brew") or method == "ecc_decode" else "tpr_exact_cal"
        vals = [pos[(pos["method"] == method) & (pos["attack"] == a)][col].mean() for a in attacks]
        ax.bar(np.arange(len(attacks)) + i * width, vals, width, label=f"{B.METHOD_LABELS[method]}"
               + ("" if col == "tpr_exact" else " (cal.)"))
    ax.set_xticks(np.arange(len(attacks)) + 0.4 - width / 2, attacks)
    ax.set_ylabel("TPR (accepted, exact message)")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=6, ncol=2)
    return fig


def shift_ablation(summary: pd.DataFrame):
    """BREW TPR vs shift range S for every attack (mean over seeds): per-block
    re-synchronisation (solid) and one global shift (dashed)."""
    fig, ax = new_figure(6.0, 4.2)
    for prefix, style in (("brew_soft_S", "-"), ("brew_global_S", "--")):
        pos = summary[(summary["role"] == "positive") & summary["method"].str.startswith(prefix)]
        for i, (attack, g) in enumerate(pos.groupby("attack")):
            s = g.assign(S=g["method"].str.rsplit("S", n=1).str[1].astype(int)).groupby("S")["tpr_exact"].mean()
            ax.plot(s.index, s.values, style, marker="o", color=f"C{i}",
                    label=f"{attack} ({'per-block' if prefix == 'brew_soft_S' else 'global'})")
    ax.set_xlabel("shift range S (tokens)")
    ax.set_ylabel("TPR (accepted, exact message)")
    ax.legend(fontsize=6, ncol=2)
    return fig


def fpr_by_negative(summary: pd.DataFrame):
    """Analytic-rule FPR of each multi-bit method on the three negative sets."""
    neg = summary[summary["role"] != "positive"]
    roles = [r for r in ("human", "unwatermarked", "wrong_key") if r in set(neg["role"])]
    methods = [m for m in ("brew_soft_S4", "brew_hard_S4", "ecc_decode", "ecc_nearest", "ecc_thr_errors")
               if m in set(neg["method"])]
    fig, axes = new_grid(1, 7.0, 3.8)
    ax = axes[0]
    width = 0.8 / max(len(methods), 1)
    for i, method in enumerate(methods):
        vals = [neg[(neg["method"] == method) & (neg["role"] == r)]["fpr"].mean() for r in roles]
        ax.bar(np.arange(len(roles)) + i * width, vals, width, label=B.METHOD_LABELS[method])
    ax.axhline(0.02, ls="--", color="k", lw=1)
    ax.set_xticks(np.arange(len(roles)) + 0.4 - width / 2, roles)
    ax.set_yscale("symlog", linthresh=0.01)
    ax.set_ylabel("FPR (analytic rule)")
    ax.legend(fontsize=7)
    return fig
