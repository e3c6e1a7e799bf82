"""FlowTracer benchmark report content and figures: pure pandas/matplotlib, no Dagster."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.plotting import new_grid
from assets.common.report import Report, markdown_table
from assets.flowtracer import analysis as A
from assets.flowtracer import benchmark as B
from assets.flowtracer import tasks
from assets.flowtracer.params import FlowtracerParams


def curves(evals: pd.DataFrame) -> pd.DataFrame:
    """Held-out greedy accuracy per method × seed × step."""
    return evals.groupby(["method", "seed", "step"])["reward"].mean().rename("accuracy").reset_index()


def curve_figure(evals: pd.DataFrame):
    fig, axes = new_grid(1, 6.5, 4.0)
    ax = axes[0]
    for method, g in curves(evals).groupby("method"):
        stats = g.groupby("step")["accuracy"].agg(["mean", "min", "max"])
        ax.plot(stats.index, stats["mean"], marker="o", label=method, lw=2.2 if method == "flowtracer" else 1.2)
        ax.fill_between(stats.index, stats["min"], stats["max"], alpha=0.12)
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("held-out greedy accuracy (seed mean, min–max band)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def calibration_figure(calibration: dict, band: tuple[float, float]):
    """Greedy validation accuracy against SFT steps, one line per seed, up to its calibrated
    snapshot (the band shaded)."""
    fig, axes = new_grid(1, 6.5, 4.0)
    ax = axes[0]
    ax.axhspan(*band, color="#228833", alpha=0.12, label=f"band {list(band)}")
    for s in calibration["seeds"]:
        curve = pd.DataFrame(s["curve"])
        if not curve.empty:
            ax.plot(curve["step"], curve["val_accuracy"], lw=1.2, label=f"seed {s['seed']}: {s['steps']} steps")
    ax.set_xlabel("SFT step")
    ax.set_ylabel("greedy validation accuracy")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def masking_figure(masking: pd.DataFrame, band: str):
    fig, axes = new_grid(2, 10.0, 3.8)
    part = masking[masking["band"] == band]
    order = list(A.SCORE_RULES)
    for ax, metric, label in ((axes[0], "answer_changed", "answer change"), (axes[1], "flipped", "correctness flip")):
        per_seed = part.groupby(["rule", "seed"])[metric].mean().unstack("seed").reindex(order)
        ax.bar(range(len(order)), 100 * per_seed.mean(axis=1), color="#4477aa")
        for j, (_, row) in enumerate(per_seed.iterrows()):
            ax.scatter([j] * len(row), 100 * row.to_numpy(), color="black", s=10, zorder=3)
        ax.set_xticks(range(len(order)), order, rotation=30, fontsize=8)
        ax.set_ylabel(f"{label} (%), 20 % of trace tokens masked")
        ax.grid(alpha=0.3, axis="y")
    return fig


def credit_figure(tokens: pd.DataFrame, band: str, problems: int = 4):
    """A few test traces, each token coloured by its flow throughput τ (the middle band, seed 0)."""
    import matplotlib.cm as cm

    part = tokens[(tokens["band"] == band) & (tokens["seed"] == tokens["seed"].min())]
    fig, axes = new_grid(1, 10.0, 0.6 * problems + 0.6)
    ax = axes[0]
    ax.axis("off")
    for row, (_, g) in enumerate(list(part.groupby("problem"))[:problems]):
        tau = g["flow"].to_numpy()
        scale = tau / tau.max() if tau.max() > 0 else tau
        for j, (char, label, s) in enumerate(zip(g["char"], g["label"], scale, strict=True)):
            ax.text(0.02 + 0.03 * j, 1 - (row + 0.5) / problems, char, fontsize=11, family="monospace",
                    fontweight="bold" if label == "R" else "normal",
                    bbox={"facecolor": cm.Reds(0.1 + 0.8 * float(s)), "edgecolor": "none", "pad": 1.5})
    ax.set_title("trace tokens coloured by τ (bold: relevant to the answer)", fontsize=9)
    return fig


def build_report(tokens: pd.DataFrame, masking: pd.DataFrame, evals: pd.DataFrame, steps: pd.DataFrame,
                 checkpoints: pd.DataFrame, calibration: dict, params: FlowtracerParams, base_seed: int,
                 step_times: pd.DataFrame | None = None) -> Report:
    task = tasks.get(params.data.task)
    claims, numbers = B.evaluate_claims(tokens, masking, evals, checkpoints, step_times, params.bootstrap, base_seed,
                                        ablations=params.rl_ablations, fraction=params.flow.top_fraction,
                                        layers=params.flow.layers, task=task,
                                        band=tuple(params.sft.band))
    band = A.band_name(params.flow.layers)
    middle = masking[masking["band"] == band]
    mask_table = middle.groupby("rule")[["answer_changed", "flipped"]].mean().mul(100).reindex(A.SCORE_RULES)
    mask_table["paper_answer_change"] = [B.PAPER_MASKING.get(r, (np.nan, np.nan))[0] for r in mask_table.index]
    mask_table["paper_flip"] = [B.PAPER_MASKING.get(r, (np.nan, np.nan))[1] for r in mask_table.index]
    auroc_rows = [{"band": band, "seed": seed, **{r: A.relevance_auroc(g, r) for r in A.SCORE_RULES if r != "bottom"}}
                  for (band, seed), g in tokens.groupby(["band", "seed"])]
    auroc = pd.DataFrame(auroc_rows).groupby("band").mean(numeric_only=True).drop(columns="seed").reset_index()
    auc = B.accuracy_auc(evals).groupby(["method", "seed"])["auc"].mean().unstack("seed")
    auc["mean"] = auc.mean(axis=1)
    final = curves(evals)
    final = final[final["step"] == final["step"].max()].groupby("method")["accuracy"].mean()
    start = curves(evals)
    start = start[start["step"] == 0].groupby("method")["accuracy"].mean()
    rl_table = pd.DataFrame({"accuracy_step0": start, "accuracy_final": final}).join(auc.rename(
        columns=lambda c: f"auc_seed{c}" if c != "mean" else "auc_mean")).reset_index()
    step_stats = steps.groupby("method")[["reward", "mean_weight"]].mean().reset_index()
    g = params.grpo
    body = [
        "## Setup", "",
        f"{tasks.describe(params.data)}, a TinyLM "
        f"({params.model.n_layers} layers, d = {params.model.d_model}, {params.model.n_heads} heads, untied "
        f"embeddings, {params.model.positional} positions) trained by SFT, each seed for its calibrated steps "
        f"(the first {params.sft.snapshot_every}-step snapshot with greedy validation accuracy in "
        f"{list(params.sft.band)}: " + ", ".join(f"seed {r.seed} {r.steps}" for r in checkpoints.itertuples())
        + "), "
        f"then GRPO per credit rule × seed: {g.steps} steps × {g.prompts_per_step} prompts × G = {g.group_size}, "
        f"Adam {g.lr:g}, clip {g.clip}, no KL or entropy term, γ = {params.flow.gamma} on the top "
        f"{params.flow.top_fraction:.0%} of response tokens. Flow: W = head-mean attention of layers "
        f"{list(params.flow.layers)}, <bos> column {'dropped' if params.flow.drop_bos else 'kept'}; A = `#` and the "
        f"answer digit; Q = the prompt. Analysis on {params.analysis.prompts} test problems per SFT seed, "
        "teacher-forced gold traces.", "",
        f"## Masking {100 * params.analysis.mask_fraction:g} % of the trace tokens (layers {band}; % of test "
        "problems; paper: GSM8K)", "",
        markdown_table(mask_table.reset_index(), digits=1), "",
        "## Relevance AUROC of each score (relevant vs distractor trace steps), by layer band", "",
        markdown_table(auroc, digits=3), "",
        "## Ablation: does the checkpoint read its answer from the answer-source step?", "",
        "On a teacher-forced gold trace the answer is a copy of the last relevant write (the answer-source step). "
        "Teacher-forced answer accuracy at `#` (per seed): "
        + ", ".join(f"seed {s} {v:.3f}" for s, v in B.teacher_forced_accuracy(masking).items())
        + ". AUROC of each score for the answer-source step against every other step token, by layer band:", "",
        markdown_table(B.source_table(tokens, task.STEP_CHARS), digits=3), "",
        "## GRPO: held-out greedy accuracy (seed mean) and accuracy AUC per seed", "",
        markdown_table(rl_table, digits=3), "",
        "## GRPO step statistics (mean over steps and seeds)", "", markdown_table(step_stats, digits=3), "",
        "## SFT", "", markdown_table(checkpoints[["seed", "steps", "in_band", "val_accuracy", "test_accuracy"]],
                                     digits=3), "",
    ]
    body += [f"Calibration (plot `calibration`): greedy validation accuracy every {params.sft.snapshot_every} SFT "
             "steps, per seed, until its first snapshot in the band.", ""]
    metrics = [{"asset": "grpo_runs", "partition": "", "seed": int(seed), "dataset": "rl_eval", "method": method,
                "metric": "accuracy_auc", "value": float(v)}
               for method, row in auc.drop(columns="mean").iterrows() for seed, v in row.items()]
    metrics += [{"asset": "flow_validation", "partition": "", "seed": int(seed), "dataset": "test", "method": rule,
                 "metric": "answer_change", "value": float(v)}
                for (rule, seed), v in middle.groupby(["rule", "seed"])["answer_changed"].mean().items()]
    timings, timing_body = _timings(step_times)
    figures = {"grpo_curves": curve_figure(evals), "masking": masking_figure(masking, band),
               "credit": credit_figure(tokens, band),
               "calibration": calibration_figure(calibration, tuple(params.sft.band))}
    return Report(claims=claims, body="\n".join(body), figures=figures, metrics=pd.DataFrame(metrics),
                  dvc_metrics={k: v for k, v in numbers.items() if k not in ("overhead_share", "step_ratio")},
                  timings=timings, timing_body=timing_body, payload={"methods": sorted(evals["method"].unique())})


def _timings(step_times: pd.DataFrame | None) -> tuple[pd.DataFrame | None, str]:
    if step_times is None or step_times.empty:
        return None, ""
    cols = ["seconds_sample", "seconds_score", "seconds_credit", "seconds_update", "seconds_step"]
    per = step_times.groupby("method")[cols].median().reset_index()
    per["credit_share"] = per["seconds_credit"] / per["seconds_step"]
    per["rollouts_per_s"] = 0.0
    rollouts = None
    if "rollouts" in step_times:
        rollouts = step_times.groupby("method")["rollouts"].first()
        per["rollouts_per_s"] = [rollouts[m] / s for m, s in zip(per["method"], per["seconds_step"], strict=True)]
    lines = ["## GRPO step timing (median seconds; one thread per run; wall clock)", "",
             markdown_table(per, digits=4), ""]
    rows = [{"asset": "grpo_runs", "partition": "", "seed": -1, "dataset": "rl", "method": r.method, "metric": m,
             "value": float(getattr(r, m))} for r in per.itertuples() for m in ("seconds_step", "credit_share")]
    return pd.DataFrame(rows), "\n".join(lines)
