"""logit_distill wiring at the smoke profile: every asset and check runs, checkpoints reload,
and bad input is stopped by a blocking check (or a clear error) before downstream runs."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from assets.logit_distill import data as ld_data
from assets.logit_distill import definitions as ld
from resources.artifacts import load_state_dict, save_state_dict
from tests.conftest import assert_group_complete, materialize_paper, outcomes

DOWNSTREAM = {"logit_distill/student_checkpoints", "logit_distill/representation_metrics",
              "logit_distill/logit_distance_report"}


def test_smoke_materializes_every_asset_and_check(smoke_resources, data_dir):
    result = materialize_paper(ld, smoke_resources)
    seen = assert_group_complete(ld, result)
    report = data_dir / "reports" / "logit_distill"
    assert (report / "REPORT.md").exists() and (report / "plots" / "mcca_by_objective.png").stat().st_size > 1000
    assert (report / "plots" / "probe_accuracy_by_objective.png").exists()
    assert json.loads((report / "metrics.json").read_text())["claims_total"] == len(ld.CLAIM_IDS)
    claims = pd.read_parquet(data_dir / "results" / "logit_distill" / "claims.parquet")
    assert set(claims["claim_id"]) == set(ld.CLAIM_IDS)
    # every checkpoint: a state_dict that loads with weights_only and a sidecar with provenance
    checkpoints = sorted((data_dir / "logit_distill" / "checkpoints").glob("*.pt"))
    assert len(checkpoints) == 3 + 3 * 4 * 2                 # teachers + datasets × objectives × seeds
    state, sidecar = load_state_dict(checkpoints[0])
    assert {"model_config", "seed", "device", "torch_version", "labels"} <= set(sidecar)
    assert all(isinstance(t, torch.Tensor) for t in state.values())
    _, shapes_teacher = load_state_dict(data_dir / "logit_distill" / "checkpoints" / "teacher_shapes_t400.pt")
    assert shapes_teacher["model_config"]["encoder"] == "cnn" and shapes_teacher["model_config"]["n_concepts"] == 3
    metrics = pd.read_parquet(data_dir / "logit_distill" / "representation_metrics.parquet")
    assert set(metrics["objective"]) == {"kl", "l1", "l2", "ce"}
    assert set(metrics["dataset"]) == {"spirals", "digits", "shapes"}
    assert set(metrics.loc[metrics["metric"] == "probe_accuracy", "dataset"]) == {"digits", "shapes"}
    text = (report / "REPORT.md").read_text()
    assert "loop_vs_bare" in text and "**shapes** (reported, not a claim)" in text
    students = pd.read_parquet(data_dir / "logit_distill" / "student_checkpoints.parquet")
    measured = students.dropna(subset=["bare_samples_per_second"])
    assert len(measured) == 3 * 4 and (measured["bare_samples_per_second"] > 0).all()   # once per dataset × objective


def _downstream_skipped(seen):
    return not (DOWNSTREAM & seen["assets"])


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


def test_concept_that_depends_on_the_class_is_stopped(smoke_resources, monkeypatch):
    def class_concept(values, labels):
        return np.asarray(labels) % 3                        # a function of the class

    monkeypatch.setattr(ld_data, "within_class_terciles", class_concept)
    seen = outcomes(materialize_paper(ld, smoke_resources))
    assert seen["checks"]["concept_independent_of_class"] is False
    assert "logit_distill/teacher_checkpoints" not in seen["assets"] and _downstream_skipped(seen)


def test_shapes_concept_that_depends_on_the_class_is_stopped(smoke_resources, monkeypatch):
    def class_concept(labels, n_concepts, rng):
        return np.asarray(labels) % n_concepts                # size band chosen by the shape

    monkeypatch.setattr(ld_data, "balanced_concepts", class_concept)
    seen = outcomes(materialize_paper(ld, smoke_resources))
    assert seen["checks"]["shapes_concept_independent_of_class"] is False
    assert seen["checks"]["concept_independent_of_class"] is True          # digits untouched
    assert "logit_distill/teacher_checkpoints" not in seen["assets"] and _downstream_skipped(seen)


def test_shapes_checks_name_bad_pixels_and_pass_when_not_selected():
    from resources.compute import ComputeResource

    frame = ld_data.make_shapes_concept(per_class=6, image_size=8, seed=0)
    smoke, cpu = ComputeResource(profile="smoke"), ComputeResource(profile="cpu")
    assert ld._shapes_schema(frame, smoke).passed
    bad = frame.copy()
    bad.loc[3, "x5"] = 1.7
    result = ld._shapes_schema(bad, smoke)
    assert not result.passed and "outside [0, 1]" in result.description
    empty = ld._empty_dataset()
    assert "shapes" not in cpu.params("logit_distill")["datasets"]
    for check in (ld._shapes_schema, ld._shapes_balanced_disjoint, ld._shapes_concept_independent):
        result = check(empty, cpu)
        assert result.passed and "not selected" in result.description
    assert not ld._shapes_schema(frame, cpu).passed                          # rows but not selected


def test_gpu_profile_code_path_runs_on_cpu_at_tiny_size():
    """The gpu block's architectures (incl. the 32×32 CNN) built from params.yaml, trained for
    one epoch on a handful of generated inputs on device "cpu", checkpointed and reloaded."""
    from assets.logit_distill import model as net
    from resources.profiles import load_params

    torch.set_num_threads(1)
    params = load_params("logit_distill", "gpu")
    assert "shapes" in params["datasets"] and params["shapes"]["encoder"] == "cnn"
    assert len(params["teacher_seeds"]) * len(params["student_seeds"]) > 5     # more seeds than cpu
    p = params["shapes"]
    frame = ld_data.make_shapes_concept(per_class=2, image_size=int(p["image_size"]), n_classes=int(p["n_classes"]))
    x = torch.from_numpy(frame[ld_data.input_columns(frame)].to_numpy(np.float32, copy=True))
    y = torch.from_numpy(frame["label"].to_numpy(copy=True))
    c = torch.from_numpy(frame["concept"].to_numpy(copy=True))
    teacher = net.EmbeddingNet(ld._model_config("shapes", p, x.shape[1], int(p["n_classes"]), True))
    assert teacher.config.image_size == 32 and teacher.concept_head is not None
    train = ld._train_config({**p["teacher"], "epochs": 1, "batch_size": 8})
    result = net.train(teacher, x, lambda m, i: net.teacher_loss(*m(x[i])[1:], y[i], c[i]), train, seed=0)
    assert np.isfinite(result.final_loss)
    student = net.EmbeddingNet(ld._model_config("shapes", p, x.shape[1], int(p["n_classes"]), False))
    assert student.concept_head is None and student.config.encoder == "cnn"
    for dataset, n_inputs in (("spirals", 2), ("digits", 64)):             # the MLP blocks build too
        q = params[dataset]
        model = net.EmbeddingNet(ld._model_config(dataset, q, n_inputs, int(q.get("n_labels", 10)), True))
        assert model(torch.zeros(3, n_inputs))[1].shape == (3, int(q.get("n_labels", 10)))


def test_non_finite_teacher_logit_is_stopped(smoke_resources, monkeypatch):
    real = ld._long

    def corrupted(dataset, teacher_seed, split, ids, kind, values):
        frame = real(dataset, teacher_seed, split, ids, kind, values)
        if kind == "logit" and split == "train":
            frame.loc[frame.index[3], "value"] = np.inf
        return frame

    monkeypatch.setattr(ld, "_long", corrupted)
    seen = outcomes(materialize_paper(ld, smoke_resources))
    assert seen["checks"]["teacher_outputs_finite"] is False
    assert "logit_distill/teacher_outputs" in seen["assets"] and _downstream_skipped(seen)


def test_representation_dimension_too_large_is_a_clear_error(smoke_resources, monkeypatch):
    import resources.compute as compute_module

    real = compute_module.load_params

    def too_wide(slug, profile, *args, **kwargs):
        params = real(slug, profile, *args, **kwargs)
        if slug == "logit_distill":
            params["spirals"] = {**params["spirals"], "rep_dim": 6}     # 7 labels: d must be < 6
        return params

    monkeypatch.setattr(compute_module, "load_params", too_wide)
    result = materialize_paper(ld, smoke_resources)
    seen = outcomes(result)
    assert "logit_distill/teacher_checkpoints" not in seen["assets"] and _downstream_skipped(seen)
    assert "representation dimension d=6 must be < number of classes − 1 = 6" in _failure_messages(result)


def test_checkpoint_that_fails_to_reload_is_stopped(smoke_resources, monkeypatch):
    def corrupting_save(path, state, sidecar):
        written = save_state_dict(path, state, sidecar)
        with open(path, "ab") as fh:
            fh.write(b"garbage")                             # the md5 in the sidecar no longer matches
        return written

    monkeypatch.setattr(ld, "save_state_dict", corrupting_save)
    seen = outcomes(materialize_paper(ld, smoke_resources))
    assert seen["checks"]["teachers_load_back"] is False
    assert "logit_distill/teacher_outputs" not in seen["assets"] and _downstream_skipped(seen)


def test_student_with_another_label_set_is_named(tmp_path):
    def write(name, labels, n_classes):
        path = tmp_path / f"{name}.pt"
        save_state_dict(path, {"w": np.zeros(1)}, {"labels": labels, "model_config": {"n_classes": n_classes}})
        return str(path)

    teachers = pd.DataFrame([{"dataset": "digits", "teacher_seed": 0, "checkpoint": write("t", list(range(10)), 10)}])
    students = pd.DataFrame([{"dataset": "digits", "teacher_seed": 0, "checkpoint": write("s", list(range(9)), 9)}])
    result = ld._student_labels_match(students, teachers)
    assert not result.passed and "label set" in result.description and "teacher's" in result.description
    same = pd.DataFrame([{"dataset": "digits", "teacher_seed": 0, "checkpoint": write("s2", list(range(10)), 10)}])
    assert ld._student_labels_match(same, teachers).passed


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_every_profile_has_complete_parameters(profile):
    from resources.profiles import load_params

    params = load_params("logit_distill", profile)
    assert set(params["objectives"]) <= {"kl", "l1", "l2", "ce"}
    for dataset in params["datasets"]:
        p = params[dataset]
        n_classes = int(p.get("n_labels", p.get("n_classes", 10)))
        assert int(p["rep_dim"]) < n_classes - 1                # identifiability's diversity condition
        for role in ("teacher", "student"):
            assert {"epochs", "batch_size", "lr", "gamma", "warmup_epochs"} <= set(p[role])
