"""VIAR report figures (matplotlib, Agg) — pure; no Dagster import."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.plotting import new_figure, new_grid


def pareto(summary: pd.DataFrame, dataset: str, viar_name: str):
    """Mean FCD (± std over seeds) vs FLOPs per image: the VAR depth ladder against every
    VIAR schedule of one training run (constant schedules joined by a line)."""
    fig, ax = new_figure(6.4, 4.2)
    s = summary[summary["dataset"] == dataset]
    var = s[s["kind"] == "var"].sort_values("flops_per_image")
    ax.errorbar(var["flops_per_image"], var["fcd_mean"], yerr=var["fcd_std"].fillna(0), fmt="s-",
                color="tab:red", label="VAR depth ladder", capsize=3)
    for r in var.itertuples():
        ax.annotate(r.model, (r.flops_per_image, r.fcd_mean), fontsize=7, xytext=(3, 3), textcoords="offset points")
    viar = s[s["model"] == viar_name]
    con = viar[viar["schedule"].str.startswith("con")].sort_values("flops_per_image")
    ax.errorbar(con["flops_per_image"], con["fcd_mean"], yerr=con["fcd_std"].fillna(0), fmt="o-",
                color="tab:blue", label=f"{viar_name} Con.(c,c)", capsize=3)
    for r in viar.itertuples():
        ax.annotate(r.schedule, (r.flops_per_image, r.fcd_mean), fontsize=7, xytext=(3, -9),
                    textcoords="offset points", color="tab:blue")
    other = viar[~viar["schedule"].str.startswith("con")]
    ax.scatter(other["flops_per_image"], other["fcd_mean"], marker="D", color="tab:green",
               label=f"{viar_name} other schedules", zorder=3)
    ax.set_xscale("log")
    ax.set_xlabel("sampling FLOPs per image (CFG, analytic)")
    ax.set_ylabel("FCD vs test split (lower is better)")
    ax.set_title(f"{dataset}: quality vs compute")
    ax.legend(fontsize=8)
    return fig


def convergence(profile: pd.DataFrame, dataset: str):
    """Relative residual ‖z^{t+1} − z^t‖/‖z^t‖ and cosine of successive iterates per scale."""
    fig, axes = new_grid(2, 10.0, 3.6)
    p = profile[(profile["dataset"] == dataset) & (profile["source"] == "sampling")]
    mean = p.groupby(["scale", "t"])[["rel_residual", "cosine"]].mean().reset_index()
    for scale, g in mean.groupby("scale"):
        axes[0].plot(g["t"], g["rel_residual"].clip(lower=1e-8), marker=".", label=f"scale {scale}")
        axes[1].plot(g["t"], g["cosine"], marker=".", label=f"scale {scale}")
    axes[0].set_yscale("log")
    axes[0].axhline(0.05, color="grey", ls=":", lw=1)
    axes[0].set_xlabel("iteration t")
    axes[0].set_ylabel("relative residual")
    axes[1].axhline(0.98, color="grey", ls=":", lw=1)
    axes[1].set_xlabel("iteration t")
    axes[1].set_ylabel("cosine(z^{t+1}, z^t)")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{dataset}: fixed-point convergence at sampling time (mean over seeds)")
    return fig


def memory(profile: pd.DataFrame, dataset: str):
    """Saved-activation MB: VAR vs depth, VIAR vs no-grad iterations n and grad iterations m."""
    fig, axes = new_grid(3, 11.0, 3.4)
    p = profile[profile["dataset"] == dataset]
    for ax, sweep, xlabel in zip(axes, ("var_depth", "viar_nograd_iters", "viar_grad_iters"),
                                 ("VAR depth (blocks)", "VIAR no-grad iterations n (m = 1)",
                                  "VIAR grad iterations m (n = 0)")):
        g = p[p["sweep"] == sweep].sort_values("value")
        ax.plot(g["value"], g["saved_bytes"] / 1e6, marker="o")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("saved activations (MB)")
        ax.set_ylim(bottom=0)
    fig.suptitle(f"{dataset}: training activation memory (saved-tensor hooks, one step)")
    return fig


def throughput(frame: pd.DataFrame, dataset: str):
    fig, ax = new_figure(7.0, 3.6)
    t = frame[frame["dataset"] == dataset].sort_values("images_per_second")
    labels = [f"{m} {s}" if s != "explicit" else m for m, s in zip(t["model"], t["schedule"])]
    ax.barh(labels, t["images_per_second"], color=["tab:red" if k == "var" else "tab:blue" for k in t["kind"]])
    ax.set_xlabel("images / s (median of repetitions, CFG)")
    ax.set_title(f"{dataset}: sampling throughput")
    return fig


def sample_grid(images: dict[str, np.ndarray], labels: np.ndarray, per_class: int = 3):
    """Rows = model/schedule, columns = per_class samples of each class. images (n, C, H, W) in [-1, 1]."""
    classes = np.unique(labels)
    names = list(images)
    fig, axes = new_grid(len(classes) * per_class, 1.0 * len(classes) * per_class * 0.45 + 1.5,
                         0.5 * len(names) + 0.4, nrows=len(names))
    for row, name in enumerate(names):
        imgs = images[name]
        for ci, c in enumerate(classes):
            idx = np.flatnonzero(labels == c)[:per_class]
            for j in range(per_class):
                ax = axes[row * len(classes) * per_class + ci * per_class + j]
                ax.axis("off")
                if j < len(idx):
                    img = (np.clip(imgs[idx[j]], -1, 1) + 1) / 2
                    if img.shape[0] == 1:
                        ax.imshow(img[0], cmap="gray", vmin=0, vmax=1)
                    else:
                        ax.imshow(np.transpose(img, (1, 2, 0)))
        axes[row * len(classes) * per_class].set_title(name, fontsize=7, loc="left")
    return fig


def training_curves(models: pd.DataFrame, dataset: str):
    fig, ax = new_figure(6.4, 3.6)
    for name, g in models[models["dataset"] == dataset].groupby("model"):
        curves = np.stack([np.asarray(c, float) for c in g["loss_curve"]])
        mean = curves.mean(0)
        window = max(1, len(mean) // 25)
        smooth = np.convolve(mean, np.ones(window) / window, mode="valid")
        ax.plot(np.arange(len(smooth)) + window, smooth, label=f"{name} ({len(g)} seeds)")
    ax.set_xlabel("training step")
    ax.set_ylabel("token cross-entropy (nats)")
    ax.legend(fontsize=8)
    ax.set_title(f"{dataset}: teacher-forced training loss")
    return fig
