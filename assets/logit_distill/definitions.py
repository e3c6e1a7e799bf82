"""Logit distance vs KL distillation as Dagster assets — wiring only (runs.py, checks.py,
report.py and the method modules metrics / theory / data / model / benchmark / plots do the work).

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    theory_examples ──(gate)──┐
    spiral_dataset ───────────┤
    digits_concept_dataset ───┼─> teacher_checkpoints ─> teacher_outputs ─> student_checkpoints
    shapes_dataset ───────────┘                                     │                │
                                                                    └──> representation_metrics
                                                                                 v
                                                                       benchmark_report ─> claims

Dimensions instead of partitions: dataset × teacher_seed (teachers) and dataset × objective ×
teacher_seed × seed (students) are columns of the tables and parts of the checkpoint names,
so one run holds the whole group and every blocking check gates everything downstream. The
profile's `datasets:` list selects which datasets are trained; a dataset asset that is not
selected materializes an empty table and its checks pass as "not selected".

The training assets' wall-clock numbers (seconds, samples/s, loop vs bare torch) are not part
of their stored values: they go to data/runs/logit_distill/timings/ (artifacts.record_timings),
and the report reads them into its run record (TIMINGS.md, timing rows).
"""

import dagster as dg
import pandas as pd

from assets.common.paper import Paper
from assets.common.report import markdown_table
from assets.logit_distill import checks, data, report, runs, theory
from assets.logit_distill.params import LogitDistillParams
from resources.artifacts import ArtifactsResource
from resources.compute import ComputeResource

paper = Paper("logit_distill", params=LogitDistillParams)


def _seed_for(compute: ComputeResource):
    return lambda *keys: compute.seed_for(paper.slug, *keys)


def _split_counts(context: dg.AssetExecutionContext, frame: pd.DataFrame, name: str) -> dict:
    counts = frame["split"].value_counts().to_dict()
    context.log.info(f"{name}: {len(frame)} rows, per split {counts}")
    return {f"rows_{k}": int(v) for k, v in counts.items()}


# ------------------------------------------------------------------------------ theory
@paper.asset(kinds={"numpy"}, description="(a1) exact reparametrisation, (a2) the 8-label swapped-unembedding "
             "construction, (a3) the derived d_rep bound on random pairs. Gates training.")
def theory_examples(context: dg.AssetExecutionContext, compute: ComputeResource) -> dict:
    result = theory.theory_examples(compute.rng(paper.slug, "theory"))
    for name, values in result.items():
        context.log.info(f"{name}: " + ", ".join(f"{k}={v:.4g}" for k, v in values.items()))
    context.add_output_metadata({k: dg.MetadataValue.json(v) for k, v in result.items()})
    return result


# ------------------------------------------------------------------------------ datasets
@paper.asset(kinds={"pandas"}, description="Generated 2-D spirals: 7 labels × 4 arms (arms randomly assigned), "
             "radius 1–10, angular jitter; split 50/25/25 stratified.")
def spiral_dataset(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute).spirals
    frame = data.make_spirals(n_labels=p.n_labels, n_arms_per_label=p.arms_per_label,
                              points_per_arm=p.points_per_arm, seed=compute.seed_for(paper.slug, "spirals"))
    context.add_output_metadata({**_split_counts(context, frame, "spirals"), **compute.provenance(paper.slug)})
    return frame


@paper.asset(kinds={"pandas"}, description="sklearn's bundled digits + ±1-pixel shifts; concept = within-class "
             "tercile of ink mass (independent of the class by construction); splits grouped by source image.")
def digits_concept_dataset(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute).digits
    frame = data.make_digits_concept(seed=compute.seed_for(paper.slug, "digits"), shifts=data.SHIFTS[:p.shifts],
                                     max_images=p.max_images)
    context.add_output_metadata({**_split_counts(context, frame, "digits"),
                                 "concept_chi2_p": data.concept_independence_pvalue(*data.per_source(frame)),
                                 **compute.provenance(paper.slug)})
    return frame


@paper.asset(kinds={"pandas"}, description="Procedural grey images of shapes (class = shape) with an independent "
             "size concept (small/medium/large, balanced within every class by construction) and independent "
             "nuisances (position, rotation, intensity, pixel noise); split 50/25/25 stratified. Empty when "
             "the profile does not select `shapes`.")
def shapes_dataset(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    params = paper.params(compute)
    if "shapes" not in params.datasets:
        context.log.info(f"shapes: not selected at profile {compute.profile}")
        context.add_output_metadata({"selected": False})
        return data.empty_dataset()
    p = params.shapes
    frame = data.make_shapes_concept(per_class=p.per_class, image_size=p.image_size, n_classes=p.n_classes,
                                     seed=compute.seed_for(paper.slug, "shapes"))
    context.add_output_metadata({"selected": True, **_split_counts(context, frame, f"shapes ({p.image_size}² px)"),
                                 "concept_chi2_p": data.concept_independence_pvalue(*data.per_source(frame)),
                                 **compute.provenance(paper.slug)})
    return frame


# ------------------------------------------------------------------------------ teachers
@paper.asset(gpu=True, deps=[theory_examples], description="Teachers per dataset × teacher_seed: CE MLP (spirals), "
             "concept-bottleneck MLP (digits) / CNN (shapes) with class + concept heads. state_dict + JSON "
             "sidecar each.")
def teacher_checkpoints(context: dg.AssetExecutionContext, spiral_dataset: pd.DataFrame,
                        digits_concept_dataset: pd.DataFrame, shapes_dataset: pd.DataFrame,
                        compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    params = paper.params(compute)
    frame, timings = runs.train_teachers(
        runs.dataset_frames(params, spiral_dataset, digits_concept_dataset, shapes_dataset), params,
        seed_for=_seed_for(compute), torch_for=compute.torch, device=compute.resolved_device(),
        checkpoint_path=lambda name: artifacts.checkpoint_path(paper.slug, name),
        provenance=compute.provenance(paper.slug), log=context.log.info)
    context.add_output_metadata({"teachers": dg.MetadataValue.md(markdown_table(
        frame.drop(columns=["checkpoint", "md5"]), digits=4))})
    artifacts.record_timings(paper.slug, "teacher_checkpoints", pd.DataFrame(timings))
    return frame


@paper.asset(kinds={"pandas"}, description="Teacher logits and embeddings on every split and its unembeddings, "
             "read back from the reloaded checkpoints. Long table: dataset, teacher_seed, split, sample, kind "
             "(logit|embedding|unembedding), component, value.")
def teacher_outputs(context: dg.AssetExecutionContext, teacher_checkpoints: pd.DataFrame,
                    spiral_dataset: pd.DataFrame, digits_concept_dataset: pd.DataFrame,
                    shapes_dataset: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    frames = runs.dataset_frames(paper.params(compute), spiral_dataset, digits_concept_dataset, shapes_dataset)
    frame = runs.teacher_outputs(teacher_checkpoints, frames, compute.torch)
    context.log.info(f"teacher outputs: {len(frame)} values")
    return frame


# ------------------------------------------------------------------------------ students
@paper.asset(gpu=True, description="Students per dataset × objective {kl, l1, l2, ce} × teacher_seed × seed, "
             "trained on the teacher's precomputed train logits (or the labels, for ce). Training time and "
             "throughput go to the metadata (wall clock), not the table.")
def student_checkpoints(context: dg.AssetExecutionContext, teacher_outputs: pd.DataFrame,
                        teacher_checkpoints: pd.DataFrame, spiral_dataset: pd.DataFrame,
                        digits_concept_dataset: pd.DataFrame, shapes_dataset: pd.DataFrame,
                        compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    params = paper.params(compute)
    frame, timings = runs.train_students(
        teacher_outputs, teacher_checkpoints,
        runs.dataset_frames(params, spiral_dataset, digits_concept_dataset, shapes_dataset), params,
        seed_for=_seed_for(compute), torch_for=compute.torch, device=compute.resolved_device(),
        checkpoint_path=lambda name: artifacts.checkpoint_path(paper.slug, name),
        provenance=compute.provenance(paper.slug), log=context.log.info)
    speed = pd.DataFrame(timings).groupby("dataset")["samples_per_second"].mean().round(0).to_dict()
    context.add_output_metadata({"students": len(frame), "mean_samples_per_second": dg.MetadataValue.json(speed)})
    artifacts.record_timings(paper.slug, "student_checkpoints", pd.DataFrame(timings))
    return frame


# ------------------------------------------------------------------------------ metrics
@paper.asset(kinds={"pandas"}, description="Per student (test split): accuracy, agreement, KL to teacher, τ, "
             "d²_logit, d_rep (condition-guarded, skips counted), mCCA, bound slack, concept probe accuracy / "
             "macro-F1 / NLL. Tidy rows.")
def representation_metrics(context: dg.AssetExecutionContext, student_checkpoints: pd.DataFrame,
                           teacher_outputs: pd.DataFrame, spiral_dataset: pd.DataFrame,
                           digits_concept_dataset: pd.DataFrame, shapes_dataset: pd.DataFrame,
                           compute: ComputeResource) -> pd.DataFrame:
    params = paper.params(compute)
    frame = runs.representation_metrics(
        student_checkpoints, teacher_outputs,
        runs.dataset_frames(params, spiral_dataset, digits_concept_dataset, shapes_dataset), params,
        seed_for=_seed_for(compute), rng=lambda *k: compute.rng(paper.slug, *k), torch_for=compute.torch)
    context.log.info(f"metrics for {len(student_checkpoints)} students")
    return frame


# ------------------------------------------------------------------------------ report
@paper.asset(kinds={"duckdb", "markdown"}, description="KL vs L1/L2 logit vs label-CE students over seeds: "
             "per-objective means and 95% CIs, paired seed differences, theory examples → warehouse rows, "
             "REPORT.md with plots, metrics.json, claims; training throughput → data/runs (TIMINGS.md).")
def benchmark_report(context: dg.AssetExecutionContext, representation_metrics: pd.DataFrame,
                     teacher_checkpoints: pd.DataFrame, student_checkpoints: pd.DataFrame,
                     theory_examples: dict, compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    students = artifacts.recorded_timings(paper.slug, "student_checkpoints")
    built = report.build_report(representation_metrics, teacher_checkpoints, theory_examples,
                                teacher_timings=artifacts.recorded_timings(paper.slug, "teacher_checkpoints"),
                                student_timings=students)
    context.log.info(f"{len(student_checkpoints)} students; timings recorded for "
                     f"{0 if students is None else len(students)}")
    return paper.publish(context, compute, artifacts, built)


_DATASETS = {"spiral_dataset": spiral_dataset, "digits_concept_dataset": digits_concept_dataset,
             "shapes_dataset": shapes_dataset}

PAPER = paper.define(
    assets=[theory_examples, spiral_dataset, digits_concept_dataset, shapes_dataset, teacher_checkpoints,
            teacher_outputs, student_checkpoints, representation_metrics, benchmark_report],
    checks=[
        paper.gate(theory_examples, "theory_holds", "(a1) exact reparametrisation gives d_logit = 0, d_rep < 1e-8, "
                   "mCCA = 1; (a2) KL < 1e-2 with unembedding CCA score < 0.5; (a3) the derived bound holds on "
                   "random pairs.", checks.theory_holds),
        paper.gate(spiral_dataset, "spirals_schema", "GX: non-null inputs/labels, labels in range, three splits, "
                   "unique sample ids; inputs finite.", checks.spirals_schema, uses_params=True),
        paper.gate(spiral_dataset, "spirals_balanced_disjoint", "Splits disjoint; every label in every split; "
                   "class count ratio ≤ 1.5.", checks.balanced_disjoint),
        paper.gate(digits_concept_dataset, "digits_schema", "GX: non-null inputs/labels, labels 0–9, concept values "
                   "{0,1,2}, three splits, unique ids; inputs finite.", checks.digits_schema),
        paper.gate(digits_concept_dataset, "digits_balanced_disjoint", "Shifted copies never straddle splits; "
                   "every label in every split; class count ratio ≤ 1.5.", checks.balanced_disjoint),
        paper.gate(digits_concept_dataset, "concept_independent_of_class",
                   "χ² test of concept ⟂ class over source images: p > 0.05.", checks.concept_independent),
        paper.gate(shapes_dataset, "shapes_schema", "GX: non-null inputs/labels, labels in range, concept values "
                   "{0,1,2}, three splits, unique ids; pixels finite and in [0, 1] (passes as 'not selected' when "
                   "the profile has no shapes).", checks.shapes_schema, uses_params=True),
        paper.gate(shapes_dataset, "shapes_balanced_disjoint", "Splits disjoint; every shape in every split; "
                   "class count ratio ≤ 1.5.", checks.shapes_balanced_disjoint, uses_params=True),
        paper.gate(shapes_dataset, "shapes_concept_independent_of_class",
                   "χ² test of size concept ⟂ shape class: p > 0.05.", checks.shapes_concept_independent,
                   uses_params=True),
        paper.gate(teacher_checkpoints, "teachers_load_back", "Every teacher checkpoint reloads with "
                   "weights_only=True, has finite weights and reproduces its stored logits.",
                   checks.teachers_load_back, additional=_DATASETS),
        paper.gate(teacher_checkpoints, "teacher_quality", "Test accuracy ≥ the profile's threshold, concept "
                   "probe ≥ threshold (concept datasets), rank(f) = d < classes − 1; τ logged.",
                   checks.teacher_quality, uses_params=True),
        paper.gate(teacher_outputs, "teacher_outputs_finite", "Every logit/embedding finite; every split and the "
                   "unembeddings present; one logit per label.", checks.outputs_finite,
                   additional={"teacher_checkpoints": teacher_checkpoints}),
        paper.gate(student_checkpoints, "students_load_back", "Every student checkpoint reloads with "
                   "weights_only=True, has finite weights and reproduces its stored logits.",
                   checks.students_load_back, additional=_DATASETS),
        paper.gate(student_checkpoints, "student_labels_match_teacher", "Each student's label set and head size "
                   "equal its teacher's.", checks.student_labels_match,
                   additional={"teacher_checkpoints": teacher_checkpoints}),
        paper.gate(representation_metrics, "metrics_finite", "All core metrics finite; every run has "
                   "well-conditioned label subsets (skips reported).", checks.metrics_finite),
        paper.gate(representation_metrics, "bound_slack_nonnegative", "d_rep ≤ 2(d+1)·d²_logit/σ²_min on every "
                   "pair (non-blocking: reported as a claim).", checks.bound_slack, blocking=False),
    ],
    claims=["kl_matches_predictions", "spirals_l2_more_similar", "digits_concept_preserved"],
    observations=["bound_holds", "swapped_unembedding_small_kl_low_cca"],
)
