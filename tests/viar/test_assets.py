"""VIAR wiring: the smoke group is complete (tests/platform/test_smoke_contract.py), bad input
(images out of range, labels outside the conditioning set, token ids outside the codebook, an
iteration schedule of the wrong length) is stopped before anything downstream consumes it —
re-running only the gated asset and one downstream on the stored smoke outputs — and the
predicates name what is wrong."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from assets.viar import checks, runs
from assets.viar import data as viar_data
from assets.viar import model as viar_model
from assets.viar import tokenizer as viar_tokenizer
from assets.viar.params import VIARRunParams
from tests.conftest import rerun, rerun_result, smoke_run, typed_params

SLUG = "viar"


run = smoke_run(SLUG)


@pytest.fixture
def smoke_data(run, monkeypatch):
    """Checkpoint references resolve against the smoke run's data directory."""
    monkeypatch.setenv("PAPERLAB_DATA_DIR", str(run.data_dir))
    return run


def typed(profile: str = "smoke") -> VIARRunParams:
    return typed_params(VIARRunParams, SLUG, profile)


def failure_messages(result) -> str:
    """Every step failure's error text, causes included."""
    texts = []
    for event in result.all_events:
        if event.event_type_value == "STEP_FAILURE":
            error = event.event_specific_data.error
            while error is not None:
                texts.append(error.message)
                error = error.cause
    return " | ".join(texts)


def materialized(result) -> set[str]:
    return {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}


# ------------------------------------------------------------------------------ the smoke run
def test_smoke_report_names_every_claim_and_keeps_timings_out_of_dvc(run):
    report = run.data_dir / "reports" / SLUG
    assert (report / "plots" / "digits_pareto.png").stat().st_size > 1000
    claims = pd.concat([pd.read_parquet(run.data_dir / "results" / SLUG / "claims.parquet"),
                        pd.read_parquet(run.data_dir / "runs" / SLUG / "claims_timings.parquet")])
    assert sorted(claims["claim_id"]) == sorted([*run.paper.claim_ids, *run.paper.observation_ids])
    assert claims.set_index("claim_id")["volatile"].to_dict()["v5_compute_control"]
    assert "img/s" not in (report / "REPORT.md").read_text()
    assert not (run.data_dir / SLUG / "throughput.parquet").exists()               # a run record
    assert (run.value("throughput")["images_per_second"] > 0).all()
    assert "v5_compute_control" in (run.data_dir / "runs" / SLUG / "TIMINGS.md").read_text()
    # checkpoints are referenced relative to the data directory, never by absolute path
    models = run.value("viar_models")
    assert not models["checkpoint"].str.startswith("/").any()
    assert (run.data_dir / models["checkpoint"].iat[0]).exists()
    assert not {"train_seconds", "steps_per_second"} & set(models.columns)
    samples = run.value("samples")
    assert {"explicit", "calibrated", "con8", "dec8-2"} <= set(samples["schedule"]) and "seconds" not in samples


# ------------------------------------------------------------------------------ gates
def test_images_out_of_range_are_stopped_before_the_classifier(run, tmp_path, monkeypatch):
    real = viar_data.build_dataset

    def corrupted(name, cfg, seed):
        frame = real(name, cfg, seed)
        frame.at[0, "pixels"] = frame.at[0, "pixels"] * 4.0          # pixels far outside [-1, 1]
        return frame

    monkeypatch.setattr(viar_data, "build_dataset", corrupted)
    seen = rerun(run, ["images", "eval_classifier"], tmp_path / "data")
    assert seen["checks"]["shape_range_labels"] is False
    assert "viar/images" in seen["assets"] and "viar/eval_classifier" not in seen["assets"]


def test_image_check_names_the_range_and_the_labels(run):
    frame, params = run.value("images"), typed()
    assert checks.images_valid(frame, params).passed
    frame.at[0, "pixels"] = np.asarray(frame.at[0, "pixels"]) * 4.0
    digits = frame.index[frame["dataset"] == "digits"][:3]
    frame.loc[digits, "label"] = 10                                   # digits has classes 0..9
    message = checks.images_valid(frame, params).message()
    assert "outside [-1, 1]" in message and "outside the conditioning set 0..9" in message


def test_token_id_outside_the_codebook_stops_the_models(run, tmp_path, monkeypatch):
    real = viar_tokenizer.token_pyramid

    def corrupted(model, images):
        tokens, tf = real(model, images)
        tokens = tokens.clone()
        tokens[0, -1] = model.cfg.vocab                                 # one id past the codebook
        return tokens, tf

    monkeypatch.setattr(viar_tokenizer, "token_pyramid", corrupted)
    seen = rerun(run, ["token_pyramids", "var_models"], tmp_path / "data")
    assert seen["checks"]["ids_in_range_and_round_trip"] is False
    assert "viar/var_models" not in seen["assets"]


def test_pyramid_check_names_the_out_of_range_id(smoke_data):
    run = smoke_data
    frame, tokenizer, images = run.value("token_pyramids"), run.value("msvq_tokenizer"), run.value("images")
    assert checks.pyramids_valid(frame, tokenizer, images).passed
    row = frame.index[frame["dataset"] == "digits"][0]
    tokens = np.array(frame.at[row, "tokens"])
    tokens[-1] = tokenizer["digits"]["config"]["vocab"]
    frame.at[row, "tokens"] = tokens
    found = checks.pyramids_valid(frame, tokenizer, images)
    assert not found.passed and "digits: 1 token ids outside the codebook [0, 32)" in found.message()


def test_tokenizer_emitting_ids_outside_the_codebook_fails_with_a_clear_error(run, tmp_path, monkeypatch):
    real = viar_tokenizer.MultiScaleVQVAE.encode_tokens

    def corrupted(self, x):
        tokens = real(self, x).clone()
        tokens[0, -1] = self.cfg.vocab
        return tokens

    monkeypatch.setattr(viar_tokenizer.MultiScaleVQVAE, "encode_tokens", corrupted)
    result = rerun_result(run, ["token_pyramids", "var_models"], tmp_path / "data")
    assert "token id outside the codebook: range [0, 32] not within [0, 32)" in failure_messages(result)
    assert not {"viar/token_pyramids", "viar/var_models"} & materialized(result)


def test_iteration_schedule_of_the_wrong_length_is_stopped_before_sampling(run, tmp_path, monkeypatch):
    real = viar_model.calibrate_schedule

    def short(*args, **kwargs):
        out = real(*args, **kwargs)
        return {**out, "schedule": out["schedule"][:-1]}                # one scale missing

    monkeypatch.setattr(viar_model, "calibrate_schedule", short)
    result = rerun_result(run, ["iteration_schedule", "samples"], tmp_path / "data")
    assert "has length 3, the model has 4 scales" in failure_messages(result)
    assert not {"viar/iteration_schedule", "viar/samples"} & materialized(result)


def test_schedule_check_names_a_wrong_length_and_a_missed_target():
    tokenizer = {"digits": {"config": {"scales": [1, 2, 3, 4]}}}
    frame = pd.DataFrame([
        {"dataset": "digits", "seed": 0, "schedule": [2, 2, 1], "converged_iterations": 16, "tolerance": 0.02,
         "nll_total_ratio": 1.0},
        {"dataset": "digits", "seed": 1, "schedule": [2, 2, 1, 1], "converged_iterations": 16, "tolerance": 0.02,
         "nll_total_ratio": 1.05}])
    found = checks.schedule_valid(frame, tokenizer)
    assert not found.passed
    assert "seed 0: iteration schedule [2, 2, 1] has length 3, the model has 4 scales" in found.message()
    assert "seed 1: calibrated NLL / converged = 1.0500 > 1 + 0.02" in found.message()
    assert checks.schedule_valid(frame.iloc[1:].assign(nll_total_ratio=1.01), tokenizer).passed


def test_classifier_below_the_accuracy_floor_is_refused(data_dir):
    """The gate on the evaluation network (it gates every FCD asset) names the accuracy."""
    import torch

    from assets.viar import metrics
    from resources.artifacts import data_ref, save_state_dict

    frame = viar_data.load_digits_frame((200, 60, 60), seed=0, max_images=320)
    torch.manual_seed(0)
    untrained = metrics.EvalCNN(1, 10)                                  # chance-level accuracy
    xte, yte = viar_data.to_arrays(frame, "test")
    accuracy = float(np.mean(metrics.extract(untrained, xte)["pred"] == yte))
    path = data_dir / "viar" / "untrained_classifier.pt"
    save_state_dict(path, untrained.state_dict(), {"channels": 1, "num_classes": 10})
    value = {"digits": {"checkpoint": data_ref(path), "test_accuracy": accuracy}}
    found = checks.classifier_accurate(value, frame, params=typed("cpu"))
    assert not found.passed and f"test accuracy {accuracy:.4f} < 0.95" in found.message()
    assert checks.classifier_accurate(value, frame, params=typed("smoke")).passed      # smoke floor 0.0


def test_models_check_names_a_run_above_the_unigram_entropy(smoke_data):
    frame, params = smoke_data.value("var_models"), typed()
    assert checks.models_trained(frame, params).passed
    frame.loc[0, "final_ce"] = 10 * frame.loc[0, "unigram_entropy"]
    found = checks.models_trained(frame, params)
    assert not found.passed and f"{frame.loc[0, 'model']}/seed 0: train CE" in found.message()
    assert not checks.models_trained(frame.iloc[:0], params).passed


def test_samples_check_names_an_unbalanced_set(smoke_data):
    frame, params = smoke_data.value("samples"), typed()
    assert checks.samples_valid(frame.head(2), params).passed
    found = checks.samples_valid(frame.head(2), replace(params, sampling=replace(params.sampling, per_class=5)))
    assert not found.passed and "is not 5 per class" in found.message()


# ------------------------------------------------------------------------------ parameters
@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_profile_scales_schedules_and_ladder_fit(profile):
    p = typed(profile)
    for dataset in p.datasets:
        d = p.dataset(dataset)
        assert d.scales[-1] == d.image_size // 2 ** d.downsample
        assert runs.tokenizer_config(p, dataset).tokens_per_image == sum(s * s for s in d.scales)
    K = len(p.dataset(p.datasets[0]).scales)
    claim_schedules = [p.claim_schedules.one, p.claim_schedules.mid, p.claim_schedules.full, p.claim_schedules.dec]
    for name in [*p.schedules, *claim_schedules]:
        assert len(viar_model.parse_schedule(name, K)) == K
    assert set(claim_schedules) <= set(p.schedules)
    assert p.claim_depth not in p.ladder_depths


# ------------------------------------------------------------------------------ training in worker processes
def test_training_in_worker_processes_writes_the_same_checkpoints(smoke_data, tmp_path, monkeypatch):
    """train_models on 2 spawned workers (longest run first) writes byte-identical checkpoints
    and rows, in run order, to the in-process path the smoke group took."""
    from resources.artifacts import ArtifactsResource
    from resources.compute import ComputeResource

    p = typed()
    chosen = runs.var_runs(p)[:2] + runs.viar_runs(p)[:1]
    assert ComputeResource(profile="smoke").workers(len(chosen), 2) == 2     # really two processes
    pyramids, tokenizer = smoke_data.value("token_pyramids"), smoke_data.value("msvq_tokenizer")
    monkeypatch.setenv("PAPERLAB_DATA_DIR", str(tmp_path / "workers"))
    frame, timing = runs.train_models(chosen, pyramids, tokenizer, replace(p, workers=2),
                                      ComputeResource(profile="smoke"), ArtifactsResource())
    stored = pd.concat([smoke_data.value("var_models"), smoke_data.value("viar_models")])
    expected = [stored[(stored["dataset"] == d) & (stored["kind"] == k) & (stored["depth"] == depth)
                       & (stored["seed"] == s)]["md5"].item() for d, k, depth, s in chosen]
    assert frame["md5"].tolist() == expected
    assert list(zip(frame["dataset"], frame["kind"], frame["depth"], frame["seed"])) == chosen
    assert len(timing) == 3 and (timing["train_seconds"] > 0).all()


def test_sampling_and_calibration_in_worker_processes_match_the_in_process_run(smoke_data, tmp_path, monkeypatch):
    """draw_samples and calibrate_schedules on 2 spawned workers give the smoke group's
    (in-process) sample files byte for byte and the same calibrated schedules."""
    import shutil

    from resources.artifacts import ArtifactsResource, read_json
    from resources.compute import ComputeResource

    p, compute = replace(typed(), workers=2), ComputeResource(profile="smoke")
    assert compute.workers(4, p.workers) == 2                                 # really two processes
    var, viar, schedule = (smoke_data.value(n) for n in ("var_models", "viar_models", "iteration_schedule"))
    tokenizer = smoke_data.value("msvq_tokenizer")
    chosen = [r for r in runs.sampling_runs(p, var, viar, schedule) if r["dataset"] == "digits"][:4]
    root = tmp_path / "workers"
    # the checkpoints the workers load, without the smoke run's sample files (written afresh here)
    shutil.copytree(smoke_data.data_dir / "viar", root / "viar", ignore=shutil.ignore_patterns("*_samples_*"))
    monkeypatch.setenv("PAPERLAB_DATA_DIR", str(root))
    frame, _ = runs.draw_samples(chosen, tokenizer, p, compute, ArtifactsResource())
    assert len(frame) == len(chosen) == 4
    for ref in frame["samples_ref"]:
        assert read_json(root / f"{ref}.json")["md5"] == read_json(smoke_data.data_dir / f"{ref}.json")["md5"]
    cal = runs.calibrate_schedules(viar, smoke_data.value("token_pyramids"), tokenizer,
                                   smoke_data.value("eval_classifier"), smoke_data.value("reference_stats"), p, compute)
    pd.testing.assert_frame_equal(cal.reset_index(drop=True), schedule.reset_index(drop=True), check_dtype=False)
