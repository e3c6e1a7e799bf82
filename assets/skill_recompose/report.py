"""skill_recompose report content and small tables: pure pandas/matplotlib, no Dagster."""
from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from assets.common.plotting import new_grid
from assets.common.report import Report, markdown_table
from assets.skill_recompose import benchmark, runs
from assets.skill_recompose import method as M

NOTES = Path(__file__).with_name("NOTES.md")


def static_library(ann: pd.DataFrame) -> pd.DataFrame:
    """Per seed and token: document frequency over the labelled demos, N, IDF at β = 1."""
    rows = []
    for seed, g in ann.groupby("seed"):
        sets = [M.tokens(json.loads(v)) for v in g["verbs"]]
        df = Counter(t for s in sets for t in s)
        w = M.idf_weights(sets, 1.0)
        rows += [{"seed": int(seed), "token": t, "df": int(c), "n_demos": len(sets), "idf_beta1": float(w[t])}
                 for t, c in sorted(df.items())]
    return pd.DataFrame(rows)


def latency(demos: pd.DataFrame, ann: pd.DataFrame, feats: pd.DataFrame, emb_frame: pd.DataFrame, p) -> pd.DataFrame:
    """Wall-clock query latency of D&R retrieval vs X-ICM-like ranking at library sizes p.bench.sizes
    (the seed-0 library tiled to size): volatile, reported through the timings channel."""
    emb = runs.lookup(emb_frame)
    s0 = int(p.seeds[0])
    verbs = [json.loads(v) for v in ann[ann["seed"] == s0]["verbs"]]
    vis = np.stack([np.asarray(v) for v in feats[feats["seed"] == s0]["vector"]])
    instr = np.stack([emb(t) for t in demos[demos["seed"] == s0]["instruction"]])
    hp = M.HParams(0.5, 0.5, 1.0, 0.1, 4, 4)
    rows = []
    for size in p.bench.sizes:
        reps = -(-size // len(verbs))
        V, X, I = (verbs * reps)[:size], np.tile(vis, (reps, 1))[:size], np.tile(instr, (reps, 1))[:size]
        toks = [M.tokens(v) for v in V]
        w = M.idf_weights(toks, 1.0)
        for name in ("dnr", "xicm"):
            t0 = time.perf_counter()
            for q in range(p.bench.queries):
                M.retrieve(name, V[q % len(V)], X @ X[q % len(V)], I @ I[q % len(V)], V, hp,
                           np.random.default_rng(q), w, toks)
            rows.append({"size": size, "method": name, "ms_per_query": 1000 * (time.perf_counter() - t0) /
                         p.bench.queries})
    return pd.DataFrame(rows)


def success_table(rollouts: pd.DataFrame) -> pd.DataFrame:
    ps = rollouts.groupby(["method", "seed", "level"])["success"].mean().unstack("level")
    ps["overall"] = rollouts.groupby(["method", "seed"])["success"].mean()
    t = ps.groupby("method").agg(["mean", "std"])
    t.columns = [f"{'L' + str(a) if isinstance(a, (int, np.integer)) else a}_{b}" for a, b in t.columns]
    t["zero_tasks"] = rollouts.groupby(["method", "task"])["success"].mean().eq(0).groupby("method").sum()
    return t.reset_index().sort_values("overall_mean", ascending=False)


def figure(rollouts: pd.DataFrame):
    fig, axes = new_grid(1, 11.0, 4.2)
    t = rollouts.groupby(["task", "method"])["success"].mean().unstack("method")
    order = t.sort_values("dnr").index
    ax = axes[0]
    ypos = np.arange(len(order))
    for j, m in enumerate(("dnr", "xicm", "dyn_only", "no_labels")):
        if m in t.columns:
            ax.barh(ypos + 0.2 * j, t.loc[order, m], height=0.2, label=m)
    ax.set_yticks(ypos + 0.3, order, fontsize=6)
    ax.set_xlabel("success")
    ax.legend(fontsize=7)
    return fig


def build_report(rollouts: pd.DataFrame, contexts: pd.DataFrame, ann: pd.DataFrame, plans: pd.DataFrame,
                 hparams: dict, kf: pd.DataFrame, icl_model: dict, p, latency: pd.DataFrame | None = None) -> Report:
    acc = runs.label_accuracy(ann)
    losses = pd.DataFrame(icl_model["models"])
    claims = benchmark.evaluate_claims(rollouts, contexts, acc, plans, losses, p.seeds, p.bootstrap)
    table = success_table(rollouts)
    per_task = rollouts.groupby(["level", "task", "method"])["success"].mean().unstack("method").reset_index()
    cov = contexts.groupby(["method", "level"])[["coverage", "coverage_raw"]].mean().reset_index()
    hp = {k: hparams[k] for k in ("alpha", "lam", "beta", "gamma", "k_sim", "k_cov", "xicm_alpha",
                                  "loso_success", "xicm_loso_success")}
    reasons = rollouts[(rollouts["method"] == "dnr") & (rollouts["success"] == 0)]["reason"].str.slice(0, 60)
    body = [
        "## What this tests", "",
        "No LLM, VLM or DINOv3 exists offline: claims 1–3 test the **representation and retrieval** (skill-labelled, "
        "coverage-complete contexts make recomposition possible), with a deterministic executor (Variant A) standing "
        "in for the LLM's reasoning; they do not test an LLM's ability to exploit such contexts. Variant B (a small "
        "meta-trained transformer) is the closest CPU test of 'labels help an in-context learner'.", "",
        f"Setup: {len(p.seeds)} seeds × 23 unseen tasks × {p.episodes} episodes; {p.demos_per_task} demos per seen "
        f"task; keyframe threshold {kf['threshold'].iloc[0]:.2f} (exact recovery {kf['exact'].mean():.3f}); "
        f"demo budget k_sim + k_cov = {hparams['k_sim'] + hparams['k_cov']} for every method.", "",
        "## Success (mean and std over seeds)", "", markdown_table(table), "",
        "## Per task (mean over seeds and episodes)", "", markdown_table(per_task), "",
        "## Context coverage (coverable tokens, and raw)", "", markdown_table(cov), "",
        "## Labeller", "", markdown_table(pd.DataFrame([acc])), "",
        "## Hyper-parameters (leave-one-seen-task-out, seen demos only)", "", markdown_table(pd.DataFrame([hp])), "",
        "## Variant B training", "", markdown_table(losses.drop(columns=["checkpoint", "md5"])), "",
        "## D&R failure reasons (top)", "", markdown_table(reasons.value_counts().head(8).rename_axis("reason")
                                                        .reset_index()), "",
    ]
    metrics = []
    for r in rollouts.groupby(["method", "seed"])["success"].mean().reset_index().itertuples():
        metrics.append({"asset": "rollouts", "partition": "", "seed": int(r.seed), "dataset": "unseen",
                        "method": r.method, "metric": "success", "value": float(r.success)})
    timings, timing_body = None, ""
    if latency is not None and not latency.empty:
        wide = latency.pivot(index="size", columns="method", values="ms_per_query")
        wide["ratio_dnr_over_xicm"] = wide["dnr"] / wide["xicm"]
        timing_body = "## Query latency (ms per query, one run)\n\n" + markdown_table(wide.reset_index(), digits=3)
        timings = pd.DataFrame([{"asset": "benchmark_report", "partition": "", "seed": -1, "dataset": str(int(r.size)),
                                 "method": r.method, "metric": "ms_per_query", "value": float(r.ms_per_query)}
                                for r in latency.itertuples()])
    dvc = {f"success_{r.method}": float(r.overall_mean) for r in table.itertuples()}
    return Report(claims=claims, body="\n".join(body), figures={"per_task": figure(rollouts)},
                  metrics=pd.DataFrame(metrics), dvc_metrics=dvc, timings=timings, timing_body=timing_body)
