"""BREW wiring: the smoke group is complete (tests/platform/test_smoke_contract.py), bad input is
stopped by a blocking check before anything downstream consumes it (re-running only the gated
asset and one downstream on the stored smoke outputs), and the predicates name what is wrong."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from assets.brew import bch as brew_bch
from assets.brew import checks, runs
from assets.brew import data as brew_data
from assets.brew import method as brew_method
from assets.brew.params import BrewParams
from tests.conftest import rerun, smoke_run, typed_params

SLUG = "brew"


run = smoke_run(SLUG)


@pytest.fixture(scope="module")
def params() -> BrewParams:
    return typed_params(BrewParams, SLUG, "smoke")


def detail(root, asset: str, name: str) -> str:
    """The message of one check as the rerun recorded it (data/runs/<slug>/checks_*.parquet)."""
    return str(pd.read_parquet(root / "runs" / SLUG / f"checks_{asset}_{name}.parquet")["detail"].iloc[0])


# ------------------------------------------------------------------------------ the smoke run
def test_smoke_detects_every_role_and_attack(run, params):
    report = run.data_dir / "reports" / SLUG
    assert (report / "plots" / "roc_syn10.png").stat().st_size > 1000
    assert "How this reproduction differs from the paper" in (report / "REPORT.md").read_text()
    detections = run.value("detections")
    assert set(detections["role"]) == {"positive", "human", "human_calibration", "unwatermarked", "wrong_key"}
    assert set(detections["attack"]) == set(brew_data.ATTACKS)
    codebook = run.value("codebook")
    assert codebook["delta"] in params.delta_grid and codebook["text_length"] == runs.text_length(params)


# ------------------------------------------------------------------------------ gating
def test_synonym_table_without_minilm_fails_coverage_and_stops_attacks(run, tmp_path, monkeypatch):
    monkeypatch.setattr(brew_data, "load_minilm", lambda threads=2: None)   # SimLex-999 only
    seen = rerun(run, ["synonym_table", "attacked_texts"], tmp_path / "data")
    assert seen["checks"]["coverage"] is False
    assert "synonym coverage" in detail(tmp_path / "data", "synonym_table", "coverage")
    assert "brew/synonym_table" in seen["assets"] and "brew/attacked_texts" not in seen["assets"]


def test_weak_watermark_is_stopped_at_the_hit_rate_gate(run, tmp_path, monkeypatch):
    real = brew_method.generate_batch

    def no_bias(next_token, contexts, length, green, schedule, delta, rng, **kwargs):
        return real(next_token, contexts, length, green, schedule, 0.05, rng, **kwargs)

    monkeypatch.setattr(brew_method, "generate_batch", no_bias)
    seen = rerun(run, ["watermarked_texts", "attacked_texts"], tmp_path / "data")
    assert seen["checks"]["length_vocab_hit_rate"] is False
    assert "(δ too weak)" in detail(tmp_path / "data", "watermarked_texts", "length_vocab_hit_rate")
    assert "brew/attacked_texts" not in seen["assets"]


def test_broken_bch_decoder_stops_generation(run, tmp_path, monkeypatch):
    real = brew_bch.BCHCode.decode

    def off_by_one(self, words):
        out = real(self, words)
        out["message"] = out["message"].copy()
        out["message"][::7, 0] ^= 1
        return out

    monkeypatch.setattr(brew_bch.BCHCode, "decode", off_by_one)
    seen = rerun(run, ["codebook", "watermarked_texts"], tmp_path / "data")
    assert seen["checks"]["bch_round_trip"] is False
    assert "table decoder recovered" in detail(tmp_path / "data", "codebook", "bch_round_trip")
    assert "brew/watermarked_texts" not in seen["assets"]


# ------------------------------------------------------------------------------ predicates
def test_fpr_gate_names_the_excess():
    from assets.brew import benchmark as brew_benchmark

    rows = [{"role": "human", "method": m, "accepted": i < 60} for m in brew_benchmark.BREW_METHODS
            for i in range(500)]
    found = checks.brew_fpr_bound(pd.DataFrame(rows), {"alpha": 0.02})
    assert not found.passed and "above α" in found.message() and "brew_soft_S4: FPR 60/500" in found.message()
    clean = pd.DataFrame([dict(r, accepted=r["accepted"] and i % 10 == 0) for i, r in enumerate(rows)])
    assert checks.brew_fpr_bound(clean, {"alpha": 0.02}).passed


def test_realized_rate_gate_flags_an_unreachable_attack():
    frame = pd.DataFrame({"attack": ["syn20"] * 4, "seed": 0, "scheme": "brew", "target_rate": 0.2,
                          "realized_rate": [0.15, 0.16, 0.14, 0.15]})
    found = checks.attack_rates(frame)
    assert not found.passed and "syn20/seed 0/brew: realized 0.150 vs target 0.2" in found.message()
    assert checks.attack_rates(frame.assign(realized_rate=0.2)).passed


def test_short_or_unknown_texts_are_named(run, params):
    texts, codebook = run.value("watermarked_texts"), run.value("codebook")
    assert checks.texts_valid(texts, codebook, params).passed
    broken = texts.copy()
    broken.loc[0, "n_tokens"] = 3
    broken.loc[1, "tokens"] = broken.loc[1, "tokens"] + " <unk>"
    found = checks.texts_valid(broken, codebook, params)
    assert not found.passed
    assert f"1 texts do not have {codebook['text_length'] + 1} tokens" in found.message()
    assert "1 texts contain <unk> or </s>" in found.message()


def test_thresholds_above_the_target_fpr_are_named(run, params):
    thresholds = run.value("calibrated_thresholds")
    assert checks.thresholds_valid(thresholds, params).passed
    broken = thresholds.copy()
    broken.loc[0, "human_fpr_at_threshold"] = 0.5
    found = checks.thresholds_valid(broken.iloc[:-1], params)
    assert not found.passed and f"realized FPR above target for ['{thresholds.loc[0, 'method']}']" in found.message()
    assert f"no threshold for ['{thresholds['method'].iloc[-1]}']" in found.message()


def test_calibration_leakage_is_named(run):
    thresholds, detections = run.value("calibrated_thresholds"), run.value("detections")
    windows = run.value("human_texts")
    assert checks.calibration_disjoint(thresholds, detections, windows).passed
    # a calibration window scored as well
    fit_id = detections.loc[detections["role"] == "human_calibration", "text_id"].iloc[0]
    leaked = pd.concat([detections, detections[detections["text_id"] == fit_id].assign(role="human")])
    found = checks.calibration_disjoint(thresholds, leaked, windows)
    assert not found.passed and "both calibration and scored windows" in found.message()
    # a scored window cut from a calibration document
    held_id = detections.loc[detections["role"] == "human", "text_id"].iloc[0]
    shared = windows.copy()
    fit_doc = shared.loc[shared["text_id"] == fit_id, "documents"].iloc[0].split(" ")[0]
    shared.loc[shared["text_id"] == held_id, "documents"] += " " + fit_doc
    found = checks.calibration_disjoint(thresholds, detections, shared)
    assert not found.passed and "source documents feed both" in found.message()
    # thresholds fitted on other windows than the calibration half
    stale = thresholds.assign(calibration_ids_md5="0" * 32)
    assert "were not fitted on exactly the calibration windows" in checks.calibration_disjoint(
        stale, detections, windows).message()


def test_too_few_human_windows_are_named(run, params):
    windows = run.value("human_texts")
    assert checks.human_texts_valid(windows, params).passed
    found = checks.human_texts_valid(windows.head(3), params)
    assert not found.passed and f"only 3 human windows (need >= {params.min_human_windows})" in found.message()


def test_unknown_key_and_vocabulary_mismatch_are_clear_errors():
    codebook = {"keys": {"0": {"key": 1, "wrong_key": 2, "null_keys": [1]}}, "vocab_md5": "abc", "vocab_size": 5}
    with pytest.raises(KeyError, match="unknown key"):
        runs.key_for(codebook, 3)
    with pytest.raises(KeyError, match="unknown key"):
        runs.key_for(codebook, 0, "null_keys", 4)
    assert runs.key_for(codebook, 0, "wrong_key") == 2

    class FakeLM:
        vocab = ["<unk>", "</s>", "<s>", "a"]
        vocab_size = 4

    with pytest.raises(ValueError, match="vocabulary mismatch"):
        runs.require_same_vocab(FakeLM(), codebook)


def test_delta_search_takes_the_smallest_delta_reaching_the_target():
    vocab = 50
    rng = np.random.default_rng(0)
    uniform = np.full(vocab, 1.0 / vocab)
    green = brew_method.green_matrix(7, vocab, 0.5)
    code = brew_bch.make_code("bch15_7")
    codewords = code.encode(rng.integers(0, 2, (4, code.k)))
    contexts = np.full((4, 2), 5)
    delta, rates = brew_method.calibrate_delta(lambda u, v: uniform, contexts, green, codewords, 4,
                                               (0.0, 1.0, 3.0, 6.0), 64, 0.8, np.random.default_rng(1))
    # hit rate of a uniform LM with bias δ on half the vocabulary: e^δ / (1 + e^δ)
    assert delta == 3.0 and list(rates) == ["0", "1", "3"]
    assert rates["1"] == pytest.approx(np.e / (1 + np.e), abs=0.08) and rates["3"] >= 0.8
    never, tried = brew_method.calibrate_delta(lambda u, v: uniform, contexts, green, codewords, 4, (0.5, 1.0), 64,
                                               0.99, np.random.default_rng(1))
    assert never == 1.0 and list(tried) == ["0.5", "1"]
