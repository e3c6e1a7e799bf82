"""logit_distill wiring: the smoke outputs (checkpoints, report, timings kept out of the stored
values), bad input stopped by a blocking check before anything downstream consumes it
(re-running only the gated asset and one downstream on the stored smoke outputs), and the
predicates name what is wrong. The group's completeness, determinism and typed parameters
are tests/platform/test_smoke_contract.py's."""
from __future__ import annotations

import dagster as dg
import numpy as np
import pandas as pd
import pytest
import torch

from assets.common.params import parse
from assets.logit_distill import checks, runs
from assets.logit_distill import data as ld_data
from assets.logit_distill.params import LogitDistillParams
from resources.artifacts import load_state_dict, save_state_dict
from resources.profiles import PROFILES, load_params
from tests.conftest import (
    copy_smoke,
    corrupt_saved_checkpoints,
    materialize_group,
    outcomes,
    rerun,
    smoke_resources_dict,
    smoke_run,
    typed_params,
)

SLUG = "logit_distill"
TIMING_COLUMNS = {"train_seconds", "samples_per_second", "save_seconds", "step_seconds",
                  "loop_samples_per_second", "bare_samples_per_second"}


run = smoke_run(SLUG)


def typed(profile: str) -> LogitDistillParams:
    return typed_params(LogitDistillParams, SLUG, profile)


# ------------------------------------------------------------------------------ smoke outputs
def test_smoke_checkpoints_report_and_timings(run):
    root = run.data_dir
    checkpoints = sorted((root / SLUG / "checkpoints").glob("*.pt"))
    assert len(checkpoints) == 3 + 3 * 4 * 2                 # teachers + datasets × objectives × seeds
    state, sidecar = load_state_dict(checkpoints[0])
    assert {"config", "seed", "device", "torch_version", "labels", "params_hash"} <= set(sidecar)
    assert not {"git_sha", "train_seconds"} & set(sidecar)   # reproducible file: no sha, no wall clock
    assert all(isinstance(t, torch.Tensor) for t in state.values())
    _, shapes_teacher = load_state_dict(root / SLUG / "checkpoints" / "teacher_shapes_t400.pt")
    assert shapes_teacher["config"]["encoder"] == "cnn" and shapes_teacher["config"]["n_concepts"] == 3
    metrics = run.value("representation_metrics")
    assert set(metrics["objective"]) == {"kl", "l1", "l2", "ce"}
    assert set(metrics["dataset"]) == {"spirals", "digits", "shapes"}
    assert set(metrics.loc[metrics["metric"] == "probe_accuracy", "dataset"]) == {"digits", "shapes"}
    report = root / "reports" / SLUG
    assert (report / "plots" / "mcca_by_objective.png").stat().st_size > 1000
    assert (report / "plots" / "probe_accuracy_by_objective.png").exists()
    text = (report / "REPORT.md").read_text()
    assert "**shapes** (reported, not a claim)" in text and "loop_vs_bare" not in text
    assert "loop_vs_bare" in (root / "runs" / SLUG / "TIMINGS.md").read_text()
    # wall-clock numbers live in the run record, never in the stored tables
    assert not TIMING_COLUMNS & set(run.value("student_checkpoints").columns)
    assert not TIMING_COLUMNS & set(run.value("teacher_checkpoints").columns)
    timings = pd.read_parquet(root / "runs" / SLUG / "metrics_timings.parquet")
    bare = timings[timings["metric"] == "bare_samples_per_second"]
    assert len(bare) == 3 * 4 and (bare["value"] > 0).all()   # once per dataset × objective
    assert set(timings["metric"]) == TIMING_COLUMNS
    assert not set(pd.read_parquet(root / "results" / SLUG / "metrics.parquet")["metric"]) & TIMING_COLUMNS


def test_report_without_recorded_timings_is_the_same_report(run, tmp_path):
    """Re-running only the report (no training in this instance): same REPORT.md bytes, and
    TIMINGS.md says that no timings were recorded."""
    seen = rerun(run, ["benchmark_report"], tmp_path / "data", drop=(f"runs/{SLUG}/timings",))
    assert f"{SLUG}/benchmark_report" in seen["assets"]
    again = tmp_path / "data" / "reports" / SLUG / "REPORT.md"
    assert again.read_bytes() == (run.data_dir / "reports" / SLUG / "REPORT.md").read_bytes()
    assert "No training timings" in (tmp_path / "data" / "runs" / SLUG / "TIMINGS.md").read_text()


# ------------------------------------------------------------------------------ gating
def test_concept_that_depends_on_the_class_stops_the_teachers(run, tmp_path, monkeypatch):
    monkeypatch.setattr(ld_data, "within_class_terciles", lambda values, labels: np.asarray(labels) % 3)
    seen = rerun(run, ["digits_concept_dataset", "teacher_checkpoints"], tmp_path / "data")
    assert seen["checks"]["concept_independent_of_class"] is False
    assert f"{SLUG}/digits_concept_dataset" in seen["assets"] and f"{SLUG}/teacher_checkpoints" not in seen["assets"]


def test_shapes_concept_that_depends_on_the_class_stops_the_teachers(run, tmp_path, monkeypatch):
    monkeypatch.setattr(ld_data, "balanced_concepts", lambda labels, n_concepts, rng: np.asarray(labels) % n_concepts)
    seen = rerun(run, ["shapes_dataset", "teacher_checkpoints"], tmp_path / "data")
    assert seen["checks"]["shapes_concept_independent_of_class"] is False
    assert f"{SLUG}/teacher_checkpoints" not in seen["assets"]


def test_non_finite_teacher_logit_stops_the_students(run, tmp_path, monkeypatch):
    real = runs.long_rows

    def corrupted(dataset, teacher_seed, split, ids, kind, values):
        frame = real(dataset, teacher_seed, split, ids, kind, values)
        if kind == "logit" and split == "train":
            frame.loc[frame.index[3], "value"] = np.inf
        return frame

    monkeypatch.setattr(runs, "long_rows", corrupted)
    seen = rerun(run, ["teacher_outputs", "student_checkpoints"], tmp_path / "data")
    assert seen["checks"]["teacher_outputs_finite"] is False
    assert f"{SLUG}/teacher_outputs" in seen["assets"] and f"{SLUG}/student_checkpoints" not in seen["assets"]


def test_checkpoint_that_fails_to_reload_stops_the_teacher_outputs(run, tmp_path, monkeypatch):
    corrupt_saved_checkpoints(monkeypatch, runs)       # the md5 in the sidecar no longer matches
    seen = rerun(run, ["teacher_checkpoints", "teacher_outputs"], tmp_path / "data")
    assert seen["checks"]["teachers_load_back"] is False
    assert f"{SLUG}/teacher_outputs" not in seen["assets"]


def _failure_messages(result) -> str:
    """Every step failure's message, including the chained causes (the user's exception)."""
    messages = []
    for event in result.all_events:
        if event.event_type_value == "STEP_FAILURE":
            error = event.event_specific_data.error
            while error is not None:
                messages.append(error.message)
                error = error.cause
    return " ".join(messages)


def test_representation_dimension_too_large_is_a_clear_error(run, tmp_path):
    root = copy_smoke(run, tmp_path / "data")
    resources = smoke_resources_dict(params_overrides={SLUG: {"spirals": {"rep_dim": 6}}})   # 7 labels: d < 6
    keys = [dg.AssetKey([SLUG, n]) for n in ("teacher_checkpoints", "teacher_outputs")]
    result = materialize_group(run.paper, resources, root, selection=dg.AssetSelection.assets(*keys))
    assert not {k.to_user_string() for k in keys} & outcomes(result)["assets"]
    assert "representation dimension d=6 must be < number of classes − 1 = 6" in _failure_messages(result)


# ------------------------------------------------------------------------------ predicates
def test_shapes_checks_name_bad_pixels_and_pass_when_not_selected():
    frame = ld_data.make_shapes_concept(per_class=6, image_size=8, seed=0)
    smoke, cpu = typed("smoke"), typed("cpu")
    assert checks.shapes_schema(frame, smoke).passed
    bad = frame.copy()
    bad.loc[3, "x5"] = 1.7
    found = checks.shapes_schema(bad, smoke)
    assert not found.passed and "outside [0, 1]" in found.message()
    empty = ld_data.empty_dataset()
    assert "shapes" not in cpu.datasets
    for check in (checks.shapes_schema, checks.shapes_balanced_disjoint, checks.shapes_concept_independent):
        found = check(empty, cpu)
        assert found.passed and "not selected" in found.message()
    found = checks.shapes_schema(frame, cpu)                                  # rows but not selected
    assert not found.passed and "not selected" in found.message()


def test_leaking_groups_and_missing_labels_are_named(run):
    frame = run.value("digits_concept_dataset")
    assert checks.balanced_disjoint(frame).passed
    leaky = frame.copy()
    group = leaky.loc[leaky["split"] == "train", "group"].iloc[0]
    leaky.loc[leaky.index[(leaky["group"] == group)][:1], "split"] = "test"   # one shifted copy moves
    assert "straddle splits" in checks.balanced_disjoint(leaky).message()
    missing = frame[~((frame["split"] == "test") & (frame["label"] == 7))]
    assert "labels missing from splits: [('test', 7)]" in checks.balanced_disjoint(missing).message()


def test_teacher_quality_and_outputs_name_the_problem(run):
    teachers, outputs, smoke = run.value("teacher_checkpoints"), run.value("teacher_outputs"), typed("smoke")
    assert checks.teacher_quality(teachers, smoke).passed
    weak = teachers.assign(test_accuracy=np.where(teachers["dataset"] == "spirals", 0.01, teachers["test_accuracy"]))
    assert "spirals/t400: test accuracy 0.010 < 0.2" in checks.teacher_quality(weak, smoke).message()
    flat = teachers.assign(embedding_rank=1)
    assert "digits/t400: embedding rank 1 ≠ d = 5" in checks.teacher_quality(flat, smoke).message()
    assert checks.outputs_finite(outputs, teachers).passed
    no_val = outputs[~((outputs["dataset"] == "spirals") & (outputs["split"] == "val"))]
    assert "spirals/t400: missing [('val', 'embedding'), ('val', 'logit')]" in \
        checks.outputs_finite(no_val, teachers).message()


def test_non_finite_metric_and_violated_bound_are_named(run):
    metrics = run.value("representation_metrics")
    assert checks.metrics_finite(metrics).passed and checks.bound_slack(metrics).passed
    broken = metrics.copy()
    broken.loc[broken.index[broken["metric"] == "d_rep"][0], "value"] = np.nan
    assert "1 non-finite metrics" in checks.metrics_finite(broken).message()
    violated = metrics.copy()
    slack = violated.index[violated["metric"] == "bound_slack"]
    violated.loc[slack[0], "value"] = -1.0
    assert f"1 of {len(slack)} pairs violate" in checks.bound_slack(violated).message()


def test_reload_check_names_a_checkpoint_whose_logits_changed(in_smoke_data, tmp_path):
    teachers = in_smoke_data.value("teacher_checkpoints")
    frames = {name: in_smoke_data.value(asset) for name, asset in
              (("spirals", "spiral_dataset"), ("digits", "digits_concept_dataset"), ("shapes", "shapes_dataset"))}
    assert checks.reload_problems(teachers, frames) == []
    shifted = {**frames, "spirals": frames["spirals"].assign(x0=frames["spirals"]["x0"] + 5.0)}
    problems = checks.reload_problems(teachers, shifted)
    assert len(problems) == 1 and "teacher_spirals_t400.pt: reloaded logits differ" in problems[0]


def test_student_with_another_label_set_is_named(tmp_path):
    def write(name, labels, n_classes):
        path = tmp_path / f"{name}.pt"
        save_state_dict(path, {"w": np.zeros(1)}, {"labels": labels, "config": {"n_classes": n_classes}})
        return str(path)

    teachers = pd.DataFrame([{"dataset": "digits", "teacher_seed": 0, "checkpoint": write("t", list(range(10)), 10)}])
    students = pd.DataFrame([{"dataset": "digits", "teacher_seed": 0, "checkpoint": write("s", list(range(9)), 9)}])
    found = checks.student_labels_match(students, teachers)
    assert not found.passed and "label set" in found.message() and "teacher's" in found.message()
    same = pd.DataFrame([{"dataset": "digits", "teacher_seed": 0, "checkpoint": write("s2", list(range(10)), 10)}])
    assert checks.student_labels_match(same, teachers).passed


# ------------------------------------------------------------------------------ parameters
@pytest.mark.parametrize("profile", PROFILES)
def test_every_profile_meets_the_diversity_condition(profile):
    params = typed(profile)
    for dataset in params.datasets:
        p = params.dataset(dataset)
        assert p.rep_dim < p.n_classes - 1                     # identifiability's diversity condition


def test_a_selected_dataset_without_parameters_is_refused():
    from assets.common.params import ParamsError

    raw = load_params(SLUG, "cpu")
    with pytest.raises(ParamsError, match=r"datasets \['shapes'\] are selected but have no parameter block"):
        parse(LogitDistillParams, {**raw, "datasets": ["spirals", "shapes"]}, f"{SLUG}.cpu")


def test_gpu_profile_code_path_runs_on_cpu_at_tiny_size():
    """The gpu block's architectures (incl. the 32×32 CNN) built from params.yaml, trained for
    one epoch on a handful of generated inputs on device "cpu"."""
    from dataclasses import replace

    from assets.logit_distill import model as net

    torch.set_num_threads(1)
    params = typed("gpu")
    assert "shapes" in params.datasets and params.shapes.encoder == "cnn"
    assert len(params.teacher_seeds) * len(params.student_seeds) > 5     # more seeds than cpu
    p = params.shapes
    frame = ld_data.make_shapes_concept(per_class=2, image_size=p.image_size, n_classes=p.n_classes)
    x = torch.from_numpy(frame[ld_data.input_columns(frame)].to_numpy(np.float32, copy=True))
    y = torch.from_numpy(frame["label"].to_numpy(copy=True))
    c = torch.from_numpy(frame["concept"].to_numpy(copy=True))
    teacher = net.EmbeddingNet(runs.model_config(p, x.shape[1], p.n_classes, True))
    assert teacher.config.image_size == 32 and teacher.concept_head is not None
    config = runs.train_config(replace(p.teacher, epochs=1, batch_size=8))
    result = net.train(teacher, x, lambda m, i: net.teacher_loss(*m(x[i])[1:], y[i], c[i]), config, seed=0)
    assert np.isfinite(result.final_loss)
    student = net.EmbeddingNet(runs.model_config(p, x.shape[1], p.n_classes, False))
    assert student.concept_head is None and student.config.encoder == "cnn"
    for q, n_inputs in ((params.spirals, 2), (params.digits, 64)):          # the MLP blocks build too
        model = net.EmbeddingNet(runs.model_config(q, n_inputs, q.n_classes, True))
        assert model(torch.zeros(3, n_inputs))[1].shape == (3, q.n_classes)
