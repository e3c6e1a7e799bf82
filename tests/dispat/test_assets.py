"""The dispat group at the smoke profile: complete, gated, and stopped by bad input."""
from __future__ import annotations

import json

import numpy as np
import pytest

from assets.common.params import ParamsError
from assets.dispat import checks, data, method, runs
from assets.dispat.params import DispatParams
from tests.conftest import assert_group_complete, rerun, smoke_run, typed_params

SLUG = "dispat"


run = smoke_run(SLUG)


def typed(profile: str = "smoke", **overrides) -> DispatParams:
    return typed_params(DispatParams, SLUG, profile, **overrides)


def test_smoke_group_is_complete(run):
    seen = assert_group_complete(run)
    assert seen["checks"]["claim_beats_matched"] in (True, False)
    th = run.value("thresholds")
    assert {"dispat", "dispat_kl", "anollm_sft", "anollm_matched", "iforest", "lof", "ocsvm", "ecod", "copod", "knn",
            "autoencoder", "deepsvdd"} == set(th["method"])
    rounds = run.value("policy_dispat")
    assert set(rounds["f"]) == {"js", "kl"} and set(rounds["round"]) == {0, 1}
    scores = run.value("scores")
    attr = scores[(scores["method"] == "dispat")]["attribution"].iloc[0]
    assert set(json.loads(attr)) == {"amount", "hour", "category", "country", "merchant", "description"}
    al = run.value("alignment")
    assert al["c2st_theta0"].between(0, 1).all() and al["c2st_thetaT"].between(0, 1).all()


def test_params_at_every_profile_and_bad_alpha():
    for profile in ("smoke", "cpu", "gpu"):
        p = typed(profile)
        assert p.model.n_layers >= 2 and p.alpha == 0.05
    assert typed("cpu").continuation_steps == 300 and typed("cpu").train.sft_steps == 400      # issue 48's counts
    assert typed("cpu").self_play.renormalise and not typed(self_play={"renormalise": False}).self_play.renormalise
    assert typed("gpu").continuation_steps == 900 and typed("gpu").train.sft_steps == 1500
    with pytest.raises(ParamsError, match="alpha"):
        typed(alpha=1.5)
    with pytest.raises(ParamsError, match="unknown f"):
        typed(self_play={"f": "tv"})


# ------------------------------------------------------------------------------ gating (rerun)
def _corrupt_splits(monkeypatch, how: str) -> None:
    real = data.make_splits

    def corrupted(name, table, sizes, rng):
        frame = real(name, table, sizes, rng)
        if how == "contaminated":
            frame.loc[frame.index[frame.split == "train"][3], "label"] = 1
        elif how == "text_in_numeric":
            frame["amount"] = frame["amount"].astype(object)
            frame.loc[frame.index[frame.split == "test"][2], "amount"] = "n/a"
        elif how == "missing":
            frame.loc[frame.index[frame.split == "val"][1], "country"] = None
        elif how == "empty_val":
            frame = frame[frame.split != "val"].reset_index(drop=True)
        elif how == "ratio":
            frame = frame[(frame.label == 0) | (frame.index % 5 == 0)].reset_index(drop=True)
        elif how == "novel_level":
            frame.loc[frame.index[frame.split == "test"][0], "country"] = "zz"
        return frame

    monkeypatch.setattr(data, "make_splits", corrupted)


@pytest.mark.parametrize("how, fragment", [
    ("contaminated", "anomalies in train/val"), ("text_in_numeric", "column 'amount' mixes numbers and text ('n/a'"),
    ("missing", "undeclared missing value in column 'country'"), ("empty_val", "the val split is empty"),
    ("ratio", "test anomaly ratio"), ("novel_level", "column 'country' row 0: level 'zz'")])
def test_bad_splits_stop_the_corpus(run, tmp_path, monkeypatch, how, fragment):
    _corrupt_splits(monkeypatch, how)
    seen = rerun(run, ["splits", "serialized_corpus"], tmp_path / "data")
    assert seen["checks"]["normal_train_one_schema"] is False
    assert fragment in seen["details"][f"{SLUG}/splits:normal_train_one_schema"][1]
    assert f"{SLUG}/serialized_corpus" not in seen["assets"]


def test_rows_past_the_context_stop_training(run, tmp_path):
    seen = rerun(run, ["tokenizer", "policy_sft"], tmp_path / "data",
                 params_overrides={SLUG: {"model": {"context": 24}}})
    assert seen["checks"]["token_round_trip_context"] is False
    assert "past the context of 24" in seen["details"][f"{SLUG}/tokenizer:token_round_trip_context"][1]
    assert f"{SLUG}/policy_sft" not in seen["assets"]


def test_collapsed_samples_stop_self_play(run, tmp_path, monkeypatch):
    real = runs.pseudo_anomalies

    def collapsed(*args, **kwargs):
        frame, timings = real(*args, **kwargs)
        frame["duplicate"] = frame["parsed"]
        return frame, timings

    monkeypatch.setattr(runs, "pseudo_anomalies", collapsed)
    seen = rerun(run, ["pseudo_anomalies", "policy_dispat"], tmp_path / "data")
    assert seen["checks"]["parse_no_collapse"] is False
    assert "copy a train row" in seen["details"][f"{SLUG}/pseudo_anomalies:parse_no_collapse"][1]
    assert f"{SLUG}/policy_dispat" not in seen["assets"]


def test_non_finite_scores_stop_calibration(run, tmp_path, monkeypatch):
    real = runs.scores

    def broken(*args, **kwargs):
        frame, timings = real(*args, **kwargs)
        frame.loc[frame.index[5], "score"] = np.nan
        return frame, timings

    monkeypatch.setattr(runs, "scores", broken)
    seen = rerun(run, ["scores", "thresholds"], tmp_path / "data")
    assert seen["checks"]["finite_scores"] is False
    assert f"{SLUG}/thresholds" not in seen["assets"]


def test_miscalibrated_threshold_stops_the_report(run, tmp_path, monkeypatch):
    monkeypatch.setattr(method, "calibrated_threshold", lambda s, a: float(np.median(s)))
    seen = rerun(run, ["thresholds", "benchmark_report"], tmp_path / "data")
    assert seen["checks"]["validation_fpr"] is False
    assert "not within ±0.01 of α = 0.05" in seen["details"][f"{SLUG}/thresholds:validation_fpr"][1]
    assert f"{SLUG}/benchmark_report" not in seen["assets"]


# ------------------------------------------------------------------------------ predicates
def test_round_trip_predicate_catches_a_broken_row(run):
    corpus = run.value("serialized_corpus")
    assert checks.corpus_round_trip(corpus).passed
    broken = corpus.copy()
    broken.loc[broken.index[4], "text"] = broken["text"].iloc[4].replace(" is ", " = ", 1)
    found = checks.corpus_round_trip(broken)
    assert not found.passed and "does not round-trip" in found.problems[0]


def test_round_predicates(run):
    p = typed()
    rounds = run.value("policy_dispat")
    assert checks.rounds_valid(rounds, p).passed
    bad = rounds.copy()
    bad.loc[bad["round"] == 1, "parse_rate"] = 0.5
    assert "parse rate 0.500 < 0.9" in checks.rounds_valid(bad, p).problems[0]
    pseudo = run.value("pseudo_anomalies")
    low = pseudo.copy()
    low["parsed"] = np.arange(len(low)) % 2 == 0
    assert "parse rate 0.500" in checks.generated_valid(low, p).problems[0]
