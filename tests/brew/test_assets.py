"""BREW wiring at the smoke profile: every asset and check runs, and bad input is stopped
by a blocking check (with a message naming the problem) before anything downstream runs."""
from __future__ import annotations

import json

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from assets.brew import bch as brew_bch
from assets.brew import data as brew_data
from assets.brew import definitions as brew
from assets.brew import method as brew_method
from tests.conftest import assert_group_complete, materialize_paper, outcomes

DOWNSTREAM_OF_TEXTS = {"brew/attacked_texts", "brew/detections", "brew/calibrated_thresholds",
                       "brew/benchmark_report"}


def _check_descriptions(result) -> dict[str, str]:
    return {e.check_name: e.description or "" for e in result.get_asset_check_evaluations()}


def test_smoke_materializes_every_asset_and_check(smoke_resources, data_dir):
    result = materialize_paper(brew, smoke_resources)
    seen = assert_group_complete(brew, result)
    report = data_dir / "reports" / "brew"
    assert (report / "REPORT.md").exists() and (report / "plots" / "roc_syn10.png").stat().st_size > 1000
    metrics = json.loads((report / "metrics.json").read_text())
    assert metrics["claims_total"] == len(brew.CLAIM_IDS)
    claims = pd.read_parquet(data_dir / "results" / "brew" / "claims.parquet")
    assert set(claims["claim_id"]) == set(brew.CLAIM_IDS)
    detections = pd.read_parquet(data_dir / "brew" / "detections.parquet")
    assert set(detections["role"]) == {"positive", "human", "unwatermarked", "wrong_key"}
    assert set(detections["attack"]) == set(brew_data.ATTACKS)


def test_synonym_table_without_minilm_fails_coverage_and_stops_attacks(smoke_resources, monkeypatch):
    monkeypatch.setattr(brew_data, "load_minilm", lambda threads=2: None)   # SimLex-999 only
    result = materialize_paper(brew, smoke_resources)
    seen = outcomes(result)
    assert seen["checks"]["coverage"] is False
    assert "synonym coverage" in _check_descriptions(result)["coverage"]
    assert not (DOWNSTREAM_OF_TEXTS & seen["assets"]) and "brew/attack_realism" not in seen["assets"]


def _upstream_selection():
    """Assets up to the watermarked texts plus one consumer, with their checks (fast)."""
    keep = {"corpus", "lm", "codebook", "watermarked_texts"}
    assets = [a for a in brew.assets if a.key.path[-1] in keep]
    checks = [c for c in brew.asset_checks
              if next(iter(c.check_specs)).asset_key.path[-1] in keep]
    return assets, checks


def test_weak_watermark_is_stopped_at_the_hit_rate_gate(smoke_resources, monkeypatch):
    real = brew_method.generate_batch

    def no_bias(next_token, contexts, length, green, schedule, delta, rng, **kwargs):
        return real(next_token, contexts, length, green, schedule, 0.05, rng, **kwargs)

    monkeypatch.setattr(brew_method, "generate_batch", no_bias)
    assets, checks = _upstream_selection()
    result = dg.materialize([*assets, *checks], resources=smoke_resources, raise_on_error=False)
    seen = outcomes(result)
    assert seen["checks"]["length_vocab_hit_rate"] is False
    assert "hit rate" in _check_descriptions(result)["length_vocab_hit_rate"]


def test_broken_bch_decoder_stops_generation(smoke_resources, monkeypatch):
    real = brew_bch.BCHCode.decode

    def off_by_one(self, words):
        out = real(self, words)
        out["message"] = out["message"].copy()
        out["message"][::7, 0] ^= 1
        return out

    monkeypatch.setattr(brew_bch.BCHCode, "decode", off_by_one)
    assets, checks = _upstream_selection()
    result = dg.materialize([*assets, *checks], resources=smoke_resources, raise_on_error=False)
    seen = outcomes(result)
    assert seen["checks"]["bch_round_trip"] is False
    assert "recovered" in _check_descriptions(result)["bch_round_trip"]
    assert "brew/watermarked_texts" not in seen["assets"]


def test_fpr_gate_names_the_excess():
    codebook = {"alpha": 0.02}
    rows = [{"role": "human", "method": m, "accepted": i < 60} for m in ("brew_soft_S0", "brew_soft_S2",
            "brew_soft_S4", "brew_soft_S8", "brew_hard_S4") for i in range(500)]
    result = brew._brew_fpr_bound(pd.DataFrame(rows), codebook)
    assert not result.passed and "above α" in result.description


def test_unknown_key_and_vocabulary_mismatch_are_clear_errors():
    codebook = {"keys": {"0": {"key": 1, "wrong_key": 2, "null_keys": [1]}}, "vocab_md5": "abc", "vocab_size": 5}
    with pytest.raises(KeyError, match="unknown key"):
        brew.key_for(codebook, 3)
    with pytest.raises(KeyError, match="unknown key"):
        brew.key_for(codebook, 0, "null_keys", 4)

    class FakeLM:
        vocab = ["<unk>", "</s>", "<s>", "a"]
        vocab_size = 4

    with pytest.raises(ValueError, match="vocabulary mismatch"):
        brew.require_same_vocab(FakeLM(), codebook)


def test_realized_rate_gate_flags_an_unreachable_attack():
    frame = pd.DataFrame({"attack": ["syn20"] * 4, "seed": 0, "scheme": "brew", "target_rate": 0.2,
                          "realized_rate": [0.15, 0.16, 0.14, 0.15]})
    result = brew._attack_rates(frame)
    assert not result.passed and "syn20" in result.description


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_every_profile_has_complete_parameters(profile):
    from resources.profiles import load_params

    params = load_params("brew", profile)
    assert set(params["attacks"]) <= set(brew_data.ATTACKS)
    assert params["code"] in brew_bch.CODES and params["vote_mode"] in ("split_half", "per_copy")
    assert brew.text_length(params) == brew_bch.make_code(params["code"]).n * params["block_length"]
    np.testing.assert_array_less(0, params["delta_grid"])
