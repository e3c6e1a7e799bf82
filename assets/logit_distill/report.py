"""logit_distill benchmark report content: pure pandas/matplotlib, no Dagster.

`build_report` turns the representation metrics, the teachers and the theory examples into a
Report (claims, tables, figures, tidy rows); the training timings (wall clock, recorded by the
training assets) become its run-record part (TIMINGS.md, timing rows). definitions.py
publishes it.
"""
from __future__ import annotations

import pandas as pd

from assets.common.report import METRIC_COLUMNS, Report, markdown_table
from assets.logit_distill import benchmark, plots

SLUG = "logit_distill"
SHOWN = ["accuracy", "agreement", "kl_to_teacher", "d2_logit", "d_rep", "mcca", "probe_accuracy",
         "probe_macro_f1", "probe_nll"]
TEACHER_COLUMNS = ["dataset", "teacher_seed", "test_accuracy", "min_prob", "embedding_rank",
                   "concept_head_accuracy", "concept_probe_accuracy", "device"]
STUDENT_TIMINGS = ["train_seconds", "samples_per_second", "save_seconds", "step_seconds",
                   "loop_samples_per_second", "bare_samples_per_second"]
TEACHER_TIMINGS = ["train_seconds", "samples_per_second"]

THROUGHPUT = (
    "samples_per_s: the asset's training loop over a whole student run (mean over seeds). "
    "loop_samples_per_s / bare_samples_per_s: our loop (model.train) and a bare torch loop "
    "(randperm → slice → loss → backward → Adam step) on the same model, inputs, loss and "
    "batch, a few epochs each, best of two interleaved repeats; loop_vs_bare ≈ 1 means the "
    "schedule and bookkeeping cost nothing. checkpoint_s: writing one checkpoint; "
    "overhead_share: the part of the asset's per-student step that is not training "
    "(slicing inputs, building the model, checkpointing).")


def scientific(frame: pd.DataFrame) -> pd.DataFrame:
    """Float columns as 3-significant-digit strings (values spanning many decades)."""
    return frame.assign(**{c: frame[c].map(lambda v: f"{v:.3g}") for c in frame.columns
                           if frame[c].dtype.kind == "f"})


def _paired_rows(metrics: pd.DataFrame) -> list[dict]:
    rows = []
    for dataset in sorted(metrics["dataset"].unique()):
        for metric in ("mcca", "d_rep", "probe_accuracy"):
            if not ((metrics["dataset"] == dataset) & (metrics["metric"] == metric)).any():
                continue
            for other in ("l1", "l2", "ce"):
                pr = benchmark.paired(metrics, dataset, metric, other, "kl")
                if len(pr):
                    rows.append({"dataset": dataset, "metric": metric, "comparison": f"{other} − kl",
                                 "mean diff": float(pr["diff"].mean()), "seeds a > kl": int((pr["diff"] > 0).sum()),
                                 "seeds": len(pr)})
    return rows


def _numeric(frame: pd.DataFrame | None, columns: list[str]) -> pd.DataFrame | None:
    """Timing rows with float columns (a measurement not taken, None in the metadata, is NaN)."""
    if frame is None or not len(frame):
        return None
    return frame.assign(**{c: pd.to_numeric(frame[c], errors="coerce").astype(float) for c in columns
                           if c in frame.columns})


def timing_rows(teacher_timings: pd.DataFrame | None, student_timings: pd.DataFrame | None) -> pd.DataFrame:
    """Wall-clock measurements as tidy metric rows (METRIC_COLUMNS), one per run × metric."""
    teacher_timings, student_timings = _numeric(teacher_timings, TEACHER_TIMINGS), _numeric(student_timings,
                                                                                            STUDENT_TIMINGS)
    parts = []
    if teacher_timings is not None and len(teacher_timings):
        t = teacher_timings.assign(
            asset=f"{SLUG}/teacher_checkpoints", method="teacher", seed=teacher_timings["teacher_seed"],
            partition=teacher_timings["dataset"] + "|t" + teacher_timings["teacher_seed"].astype(str))
        parts.append(t.melt(id_vars=["asset", "partition", "seed", "dataset", "method"], value_vars=TEACHER_TIMINGS,
                            var_name="metric", value_name="value"))
    if student_timings is not None and len(student_timings):
        s = student_timings.assign(asset=f"{SLUG}/student_checkpoints", method=student_timings["objective"],
                                   partition=student_timings["dataset"] + "|" + student_timings["objective"] + "|t"
                                   + student_timings["teacher_seed"].astype(str) + "|s"
                                   + student_timings["seed"].astype(str))
        parts.append(s.melt(id_vars=["asset", "partition", "seed", "dataset", "method"], value_vars=STUDENT_TIMINGS,
                            var_name="metric", value_name="value").dropna(subset=["value"]))
    if not parts:
        return pd.DataFrame(columns=METRIC_COLUMNS)
    return pd.concat(parts, ignore_index=True)[METRIC_COLUMNS]


def timing_body(teacher_timings: pd.DataFrame | None, student_timings: pd.DataFrame | None) -> str:
    """TIMINGS.md content: student-training throughput and teacher training time."""
    teacher_timings, student_timings = _numeric(teacher_timings, TEACHER_TIMINGS), _numeric(student_timings,
                                                                                            STUDENT_TIMINGS)
    lines = []
    if student_timings is not None and len(student_timings):
        lines += ["## Student training throughput", "", THROUGHPUT, "",
                  markdown_table(scientific(benchmark.throughput_summary(student_timings)), digits=3), ""]
    if teacher_timings is not None and len(teacher_timings):
        lines += ["## Teacher training", "",
                  markdown_table(scientific(teacher_timings[["dataset", "teacher_seed", "device", *TEACHER_TIMINGS]])),
                  ""]
    if not lines:
        lines = ["No training timings were recorded for this run (the training assets ran in another "
                 "Dagster instance, or not at all)."]
    return "\n".join(lines)


def build_report(metrics: pd.DataFrame, teacher_checkpoints: pd.DataFrame, theory_examples: dict,
                 teacher_timings: pd.DataFrame | None = None, student_timings: pd.DataFrame | None = None) -> Report:
    """metrics: the representation_metrics rows; teacher_checkpoints: the teacher table;
    *_timings: the training assets' wall-clock rows (None when not recorded)."""
    claims = benchmark.evaluate_claims(metrics, theory_examples)
    table = benchmark.summary(metrics, SHOWN)
    table["value"] = [f"{m:.4g} ± {c:.2g}" for m, c in zip(table["mean"], table["ci95"])]
    pivot = table.pivot_table(index=["dataset", "objective"], columns="metric", values="value",
                              aggfunc="first").reset_index()
    pivot = pivot[["dataset", "objective", *[m for m in SHOWN if m in pivot.columns]]]
    paired_rows = _paired_rows(metrics)
    w = metrics.pivot_table(index=["dataset", "objective", "teacher_seed", "seed"], columns="metric",
                            values="value").reset_index()
    vacuous = w.groupby(["dataset", "objective"])[["d2_logit", "kl_bound_on_d2_logit", "student_min_prob",
                                                   "teacher_min_prob", "subsets_skipped",
                                                   "subsets_evaluated"]].median().reset_index()
    concept_datasets = [d for d in sorted(metrics["dataset"].unique())
                        if (metrics[(metrics["dataset"] == d)]["metric"] == "probe_accuracy").any()]
    concept_lines = []
    for dataset in concept_datasets:
        if dataset == "digits":
            continue                                      # a claim above
        holds, measured, detail = benchmark.concept_preservation(metrics, dataset)
        concept_lines.append(f"- **{dataset}** (reported, not a claim): {measured} → "
                             f"{'criterion met' if holds else 'criterion not met'}; {detail}.")
    teacher_cols = [c for c in TEACHER_COLUMNS if c in teacher_checkpoints.columns]
    theory_rows = pd.DataFrame([{"example": name, "quantity": k, "value": float(v)}
                                for name, values in theory_examples.items() for k, v in values.items()])
    body = ["## Students: mean ± 95% CI over seeds (test split)", "",
            "agreement = same argmax as the teacher; KL = KL(teacher‖student) [nats]; d2_logit = E‖clr "
            "difference‖² [nats²]; d_rep = mean ‖f_student − A f_teacher‖²; mcca = mean canonical "
            "correlation of embeddings; probe_* = logistic-regression concept probe on student embeddings "
            "(concept datasets, chance 0.333).", "", markdown_table(pivot), "",
            *(["## Concept preservation beyond the digits claim", "",
               "The digits-concept criterion (L1 or L2 beats KL on ≥ 4 of 5 seeds with a mean gap ≥ 0.10, and "
               "L2 ≥ the CE control + 0.10, both margins judged by the paired 90% CI over seeds) applied to "
               "the other concept datasets; not a claim of the issue.", "", *concept_lines, ""]
              if concept_lines else []),
            "## Paired differences against the KL students (same teacher, same seed)", "",
            markdown_table(pd.DataFrame(paired_rows)) if paired_rows else "(none)", "",
            "## KL does not control logit distance (medians)", "",
            "kl_bound_on_d2_logit = 2·KL/τ² with τ the smallest probability of either model: the "
            "KL ⇒ logit-distance bound is vacuous for confident models.", "",
            markdown_table(scientific(vacuous)), "",
            "## Teachers", "", markdown_table(scientific(teacher_checkpoints[teacher_cols])), "",
            "## Theory examples", "", markdown_table(scientific(theory_rows)), "",
            "Training time and throughput (teachers, students, our loop vs a bare torch loop) are "
            f"wall-clock measurements, recorded per run in `data/runs/{SLUG}/TIMINGS.md`.", ""]
    teacher_probe = {(d, "probe_accuracy"): float(teacher_checkpoints.loc[
        teacher_checkpoints["dataset"] == d, "concept_probe_accuracy"].mean()) for d in concept_datasets} \
        if "concept_probe_accuracy" in teacher_checkpoints.columns else {}
    datasets = sorted(metrics["dataset"].unique())
    figures = {
        "mcca_by_objective": plots.per_objective(
            metrics, [(d, "mcca", "mean canonical correlation") for d in datasets],
            "mCCA between student and teacher embeddings (dots = seeds)"),
        "d_rep_by_objective": plots.per_objective(
            metrics, [(d, "d_rep", "d_rep") for d in datasets], "d_rep (lower = more similar)"),
        "kl_vs_logit_distance": plots.kl_vs_logit_distance(metrics),
    }
    if concept_datasets:
        figures["probe_accuracy_by_objective"] = plots.per_objective(
            metrics, [panel for d in concept_datasets for panel in
                      ((d, "probe_accuracy", "concept probe accuracy"), (d, "agreement", "agreement with teacher"))],
            "Linear recoverability of the concept (digits: ink-mass tercile; shapes: size tercile; "
            "dots = seeds)", teacher_probe)
    metric_rows = metrics.assign(
        asset=f"{SLUG}/representation_metrics", method=metrics["objective"],
        partition=metrics["dataset"] + "|" + metrics["objective"] + "|t" + metrics["teacher_seed"].astype(str)
        + "|s" + metrics["seed"].astype(str))[METRIC_COLUMNS]
    means = metrics[metrics["metric"].isin(SHOWN)].groupby(["dataset", "objective", "metric"])["value"].mean()
    dvc_metrics = {"means": {f"{d}/{o}": {m: float(v) for (_, _, m), v in g.items()}
                             for (d, o), g in means.groupby(level=[0, 1])}}
    return Report(claims=claims, body="\n".join(body), figures=figures, metrics=metric_rows,
                  dvc_metrics=dvc_metrics, timings=timing_rows(teacher_timings, student_timings),
                  timing_body=timing_body(teacher_timings, student_timings))
