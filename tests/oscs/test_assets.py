"""OSCS wiring: the smoke group is complete (tests/platform/test_smoke_contract.py), bad input
is stopped by a blocking check before anything downstream consumes it (re-running only the
gated asset and one downstream on the stored smoke outputs), and the predicates name what
is wrong."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.oscs import checks
from assets.oscs import data as oscs_data
from assets.oscs import streams as oscs_streams
from tests.conftest import rerun, smoke_run

run = smoke_run("oscs")


def test_smoke_report_names_every_claim(run):
    report = run.data_dir / "reports" / "oscs"
    assert (report / "plots" / "far_over_time.png").stat().st_size > 1000
    claims = pd.read_parquet(run.data_dir / "results" / "oscs" / "claims.parquet")
    assert set(claims["claim_id"]) == set(run.paper.claim_ids)
    assert "How this reproduction differs from the paper" in (report / "REPORT.md").read_text()


def test_non_finite_stream_scores_stop_the_decisions(run, tmp_path, monkeypatch):
    real = oscs_streams.build_stream

    def corrupted(*args, **kwargs):
        frame = real(*args, **kwargs)
        frame.loc[3, "score"] = np.nan
        return frame

    monkeypatch.setattr(oscs_streams, "build_stream", corrupted)
    seen = rerun(run, ["streams", "decisions"], tmp_path / "data")
    assert seen["checks"]["finite_on_target_no_leakage"] is False
    assert "oscs/streams" in seen["assets"] and "oscs/decisions" not in seen["assets"]


def test_document_in_two_splits_stops_the_detector(run, tmp_path, monkeypatch):
    real = oscs_data.split_by_document

    def leaky(frame, *args, **kwargs):
        out = real(frame, *args, **kwargs)
        stream_docs = out.loc[out["split"] == "stream", "doc_id"].unique()[:5]
        rows = out.index[out["doc_id"].isin(stream_docs)][::2]
        out.loc[rows, "split"] = "calib"   # half of those documents' sentences move to calib
        return out

    monkeypatch.setattr(oscs_data, "split_by_document", leaky)
    seen = rerun(run, ["benign_corpus", "detector_lm"], tmp_path / "data")
    assert seen["checks"]["no_document_leakage"] is False
    assert "oscs/detector_lm" not in seen["assets"]


def test_empty_calibration_split_is_refused_by_the_schema():
    corpus = pd.DataFrame({"text": ["a sentence ."] * 1200, "split": ["lm", "stream"] * 600,
                           "source": "lee", "doc_id": [f"d{i}" for i in range(1200)]})
    found = checks.corpus_schema(corpus)
    assert not found.passed
    assert "expect_column_distinct_values_to_equal_set(split): missing ['calib']" in found.message()


def test_stream_check_names_calibration_overlap():
    stream = pd.DataFrame({"detector": "perplexity", "scenario": "mix_p20", "seed": 0,
                           "t": np.arange(1, 11), "score": np.linspace(0, 1, 10),
                           "label": [0] * 8 + [1] * 2, "item_id": np.arange(10),
                           "doc_id": [f"d{i}" for i in range(10)]})
    density = {"detectors": {"perplexity": {"doc_ids": ["d3"], "item_ids": [3], "scores": [0.1, 0.2]}}}
    found = checks.streams_valid(stream, density)
    assert not found.passed and "calibration overlaps the stream" in found.message()
    density["detectors"]["perplexity"].update(doc_ids=["x"], item_ids=[99])
    assert checks.streams_valid(stream, density).passed


def test_calibration_sets_smaller_than_the_minimum_are_named():
    found = checks.calibration_usable({"detectors": {"onion": {"scores": [0.1] * 10}, "perplexity": {"scores": []}}})
    assert not found.passed
    assert "onion: 10 calibration scores < 200" in found.message() and "perplexity: empty" in found.message()


def test_undirected_scores_are_refused():
    frame = pd.DataFrame({"detector": "d", "label": [0, 1] * 300, "role": "calib",
                          "score": [1.0, 0.0] * 300, "item_id": range(600)})
    found = checks.scores_finite_and_directed(frame)
    assert not found.passed and "benign median < malicious median" in found.message()


def test_ablation_check_names_missing_variants(run):
    from assets.oscs.definitions import paper
    from resources.compute import ComputeResource

    params = paper.params(ComputeResource(profile="smoke"))
    frame = run.value("oracle_ablation")
    assert checks.ablation_complete(frame, params).passed
    broken = checks.ablation_complete(frame[frame["variant"] != "true_f0"], params)
    assert not broken.passed and "lack variants" in broken.message()


def test_embedding_reference_that_is_not_positive_definite_is_refused(data_dir):
    from resources.artifacts import save_checkpoint

    path = data_dir / "oscs" / "checkpoints" / "emb.pt"
    good = save_checkpoint(path, {"mean": np.zeros(3), "precision": np.eye(3)}, provenance={})
    assert checks.embedding_reference_valid({**good, "sentences": 3}).passed
    bad = save_checkpoint(path, {"mean": np.zeros(3), "precision": np.diag([1.0, -1.0, 1.0])}, provenance={})
    found = checks.embedding_reference_valid({**bad, "sentences": 3})
    assert not found.passed and "not positive definite" in found.message()
