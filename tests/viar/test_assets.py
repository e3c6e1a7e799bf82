"""VIAR wiring at the smoke profile: every asset and check runs, and bad input (images out of
range, labels outside the conditioning set, token ids outside the codebook, an iteration schedule
of the wrong length) is stopped by a blocking check before anything downstream consumes it."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from assets.viar import data as viar_data
from assets.viar import definitions as viar
from assets.viar import model as viar_model
from assets.viar import tokenizer as viar_tokenizer
from resources.compute import ComputeResource
from tests.conftest import assert_group_complete, materialize_paper, outcomes


class DigitsOnlyCompute(ComputeResource):
    """The smoke profile restricted to digits: the gating tests below need one dataset, not two."""

    def params(self, slug: str) -> dict:
        return {**super().params(slug), "datasets": ["digits"]}


@pytest.fixture
def digits_resources(smoke_resources):
    return {**smoke_resources, "compute": DigitsOnlyCompute(profile="smoke")}


def test_smoke_materializes_every_asset_and_check(smoke_resources, data_dir):
    result = materialize_paper(viar, smoke_resources)
    seen = assert_group_complete(viar, result)
    report = data_dir / "reports" / "viar"
    assert (report / "REPORT.md").exists()
    pngs = list(report.rglob("digits_pareto.png"))
    assert pngs and pngs[0].stat().st_size > 1000
    metrics = json.loads((report / "metrics.json").read_text())
    assert metrics["claims_total"] == len(viar.CLAIM_IDS)
    claims = pd.read_parquet(data_dir / "results" / "viar" / "claims.parquet")
    assert set(claims["claim_id"]) == set(viar.CLAIM_IDS)
    # checkpoints are referenced relative to the data directory, never by absolute path
    models = pd.read_parquet(data_dir / "viar" / "viar_models.parquet")
    assert not models["checkpoint"].str.startswith("/").any()
    assert (data_dir / models["checkpoint"].iat[0]).exists()
    samples = pd.read_parquet(data_dir / "viar" / "samples.parquet")
    assert {"explicit", "calibrated", "con8", "dec8-2"} <= set(samples["schedule"])


def _nothing_after_images(seen):
    return not ({"viar/eval_classifier", "viar/msvq_tokenizer", "viar/token_pyramids", "viar/var_models",
                 "viar/benchmark_report"} & seen["assets"])


def test_images_out_of_range_or_labels_outside_the_conditioning_set_are_stopped(smoke_resources, monkeypatch):
    real = viar_data.build_dataset

    def corrupted(name, cfg, seed):
        frame = real(name, cfg, seed)
        frame.at[0, "pixels"] = frame.at[0, "pixels"] * 4.0          # pixels far outside [-1, 1]
        if name == "digits":
            frame.loc[frame.index[:3], "label"] = 10                    # digits has classes 0..9
        return frame

    monkeypatch.setattr(viar_data, "build_dataset", corrupted)
    result = materialize_paper(viar, smoke_resources)
    seen = outcomes(result)
    assert seen["checks"]["shape_range_labels"] is False
    message = next(e.description for e in result.get_asset_check_evaluations()
                   if e.check_name == "shape_range_labels")
    assert "outside [-1, 1]" in message and "outside the conditioning set 0..9" in message
    assert _nothing_after_images(seen)


def _failure_messages(result) -> str:
    """Every step failure's error text, causes included."""
    texts = []
    for event in result.all_events:
        if event.event_type_value == "STEP_FAILURE":
            error = event.event_specific_data.error
            while error is not None:
                texts.append(error.message)
                error = error.cause
    return " | ".join(texts)


def test_token_id_outside_the_codebook_in_the_pyramids_is_stopped(digits_resources, monkeypatch):
    real = viar_tokenizer.token_pyramid

    def corrupted(model, images):
        tokens, tf = real(model, images)
        tokens = tokens.clone()
        tokens[0, -1] = model.cfg.vocab                                 # one id past the codebook
        return tokens, tf

    monkeypatch.setattr(viar_tokenizer, "token_pyramid", corrupted)
    result = materialize_paper(viar, digits_resources)
    seen = outcomes(result)
    assert seen["checks"]["ids_in_range_and_round_trip"] is False
    message = next(e.description for e in result.get_asset_check_evaluations()
                   if e.check_name == "ids_in_range_and_round_trip")
    assert "1 token ids outside the codebook [0, 32)" in message
    assert not ({"viar/var_models", "viar/viar_models", "viar/samples", "viar/benchmark_report"} & seen["assets"])


def test_tokenizer_emitting_ids_outside_the_codebook_fails_with_a_clear_error(digits_resources, monkeypatch):
    real = viar_tokenizer.MultiScaleVQVAE.encode_tokens

    def corrupted(self, x):
        tokens = real(self, x).clone()
        tokens[0, -1] = self.cfg.vocab
        return tokens

    monkeypatch.setattr(viar_tokenizer.MultiScaleVQVAE, "encode_tokens", corrupted)
    result = materialize_paper(viar, digits_resources)
    seen = outcomes(result)
    assert "token id outside the codebook: range [0, 32] not within [0, 32)" in _failure_messages(result)
    assert not ({"viar/token_pyramids", "viar/var_models", "viar/samples"} & seen["assets"])


def test_iteration_schedule_of_the_wrong_length_is_stopped_before_sampling(digits_resources, monkeypatch):
    real = viar_model.calibrate_schedule

    def short(*args, **kwargs):
        out = real(*args, **kwargs)
        return {**out, "schedule": out["schedule"][:-1]}                # one scale missing

    monkeypatch.setattr(viar_model, "calibrate_schedule", short)
    result = materialize_paper(viar, digits_resources)
    seen = outcomes(result)
    assert "has length 3, the model has 4 scales" in _failure_messages(result)
    assert not ({"viar/samples", "viar/throughput", "viar/sample_quality", "viar/benchmark_report"} & seen["assets"])


def test_schedule_check_names_a_wrong_length_and_a_missed_target():
    tokenizer = {"digits": {"config": {"scales": [1, 2, 3, 4]}}}
    frame = pd.DataFrame([
        {"dataset": "digits", "seed": 0, "schedule": [2, 2, 1], "converged_iterations": 16, "tolerance": 0.02,
         "nll_total_ratio": 1.0},
        {"dataset": "digits", "seed": 1, "schedule": [2, 2, 1, 1], "converged_iterations": 16, "tolerance": 0.02,
         "nll_total_ratio": 1.05}])
    result = viar._schedule_valid(frame, tokenizer)
    assert not result.passed
    assert "seed 0: iteration schedule [2, 2, 1] has length 3, the model has 4 scales" in result.description
    assert "seed 1: calibrated NLL / converged = 1.0500 > 1 + 0.02" in result.description


def test_classifier_below_the_accuracy_floor_is_refused(data_dir):
    """The gate on the evaluation network (it gates every FCD asset) names the accuracy."""
    import torch

    from assets.viar import metrics
    from resources.artifacts import data_ref, save_state_dict
    from resources.compute import ComputeResource

    frame = viar_data.load_digits_frame((200, 60, 60), seed=0, max_images=320)
    torch.manual_seed(0)
    untrained = metrics.EvalCNN(1, 10)                                  # chance-level accuracy
    xte, yte = viar_data.to_arrays(frame, "test")
    accuracy = float(np.mean(metrics.extract(untrained, xte)["pred"] == yte))
    path = data_dir / "viar" / "untrained_classifier.pt"
    save_state_dict(path, untrained.state_dict(), {"channels": 1, "num_classes": 10})
    value = {"digits": {"checkpoint": data_ref(path), "test_accuracy": accuracy}}
    result = viar._classifier_accurate(value, frame, ComputeResource(profile="cpu"))
    assert not result.passed
    assert f"test accuracy {accuracy:.4f} < 0.95" in result.description


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_every_profile_has_complete_parameters(profile):
    from resources.profiles import load_params

    params = load_params("viar", profile)
    for dataset in params["datasets"]:
        d = params[dataset]
        assert d["scales"][-1] == d["image_size"] // 2 ** d["downsample"]
    K = len(params[params["datasets"][0]]["scales"])
    for name in [*params["schedules"], *params["claim_schedules"].values()]:
        assert len(viar_model.parse_schedule(name, K)) == K
    assert set(params["claim_schedules"].values()) <= set(params["schedules"])
    assert params["claim_depth"] not in params["ladder_depths"]
