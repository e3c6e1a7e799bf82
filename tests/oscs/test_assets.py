"""OSCS wiring at the smoke profile: every asset and check runs, and bad input is stopped
by a blocking check before anything downstream consumes it."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from assets.oscs import data as oscs_data
from assets.oscs import definitions as oscs
from assets.oscs import streams as oscs_streams
from tests.conftest import assert_group_complete, materialize_paper, outcomes


def test_smoke_materializes_every_asset_and_check(smoke_resources, data_dir):
    result = materialize_paper(oscs, smoke_resources)
    seen = assert_group_complete(oscs, result)
    report = data_dir / "reports" / "oscs"
    assert (report / "REPORT.md").exists() and (report / "plots" / "far_over_time.png").stat().st_size > 1000
    metrics = json.loads((report / "metrics.json").read_text())
    assert metrics["claims_total"] == len(oscs.CLAIM_IDS)
    claims = pd.read_parquet(data_dir / "results" / "oscs" / "claims.parquet")
    assert set(claims["claim_id"]) == set(oscs.CLAIM_IDS)


def _downstream_skipped(seen):
    return not ({"oscs/decisions", "oscs/benchmark_report"} & seen["assets"])


def test_non_finite_stream_scores_stop_downstream(smoke_resources, monkeypatch):
    real = oscs_streams.build_stream

    def corrupted(*args, **kwargs):
        frame = real(*args, **kwargs)
        frame.loc[3, "score"] = np.nan
        return frame

    monkeypatch.setattr(oscs_streams, "build_stream", corrupted)
    seen = outcomes(materialize_paper(oscs, smoke_resources))
    assert seen["checks"]["finite_on_target_no_leakage"] is False
    assert _downstream_skipped(seen)


def test_calibration_overlapping_the_stream_is_stopped(smoke_resources, monkeypatch):
    real = oscs_data.split_by_document

    def leaky(frame, *args, **kwargs):
        out = real(frame, *args, **kwargs)
        stream_docs = out.loc[out["split"] == "stream", "doc_id"].unique()[:5]
        rows = out.index[out["doc_id"].isin(stream_docs)][::2]
        out.loc[rows, "split"] = "calib"   # half of those documents' sentences move to calib
        return out

    monkeypatch.setattr(oscs_data, "split_by_document", leaky)
    seen = outcomes(materialize_paper(oscs, smoke_resources))
    assert seen["checks"]["no_document_leakage"] is False
    assert "oscs/detector_lm" not in seen["assets"] and _downstream_skipped(seen)


def test_empty_calibration_set_is_stopped(smoke_resources, monkeypatch):
    real = oscs_data.split_by_document

    def no_calibration(frame, *args, **kwargs):
        out = real(frame, *args, **kwargs)
        out.loc[out["split"] == "calib", "split"] = "lm"
        return out

    monkeypatch.setattr(oscs_data, "split_by_document", no_calibration)
    seen = outcomes(materialize_paper(oscs, smoke_resources))
    assert seen["checks"]["schema"] is False
    assert "oscs/detector_lm" not in seen["assets"] and _downstream_skipped(seen)


def test_stream_check_names_calibration_overlap():
    stream = pd.DataFrame({"detector": "perplexity", "scenario": "mix_p20", "seed": 0,
                           "t": np.arange(1, 11), "score": np.linspace(0, 1, 10),
                           "label": [0] * 8 + [1] * 2, "item_id": np.arange(10),
                           "doc_id": [f"d{i}" for i in range(10)]})
    density = {"detectors": {"perplexity": {"doc_ids": ["d3"], "item_ids": [3], "scores": [0.1, 0.2]}}}
    result = oscs._streams_valid(stream, density)
    assert not result.passed and "calibration overlaps the stream" in result.description


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_every_profile_has_complete_parameters(profile):
    from resources.profiles import load_params

    params = load_params("oscs", profile)
    assert set(params["scenarios"]) <= set(oscs_streams.SCENARIOS)
    assert params["short_horizon"] < params["stream_length"]
