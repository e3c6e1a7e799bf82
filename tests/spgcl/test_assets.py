"""SPGCL wiring at the smoke profile: every asset and check runs, and bad input (out-of-range
edge endpoints, an isolated-node-only graph, a feature matrix with the wrong row count,
dim_keep k larger than F) is stopped by a blocking check before training."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from assets.spgcl import data as spgcl_data
from assets.spgcl import definitions as spgcl
from tests.conftest import assert_group_complete, materialize_paper, outcomes

TRAINING = {"spgcl/gcl_encoder", "spgcl/node_embeddings", "spgcl/linear_probe", "spgcl/gcl_benchmark_report"}


@pytest.fixture
def one_thread(smoke_resources):
    """Smoke tensors are tiny: intra-op threads only add synchronisation (and on a shared
    2-core box they oversubscribe badly), so the tests use one torch thread."""
    from resources.compute import ComputeResource

    return {**smoke_resources, "compute": ComputeResource(profile="smoke", threads=1)}


def test_smoke_materializes_every_asset_and_check(one_thread, data_dir):
    result = materialize_paper(spgcl, one_thread)
    seen = assert_group_complete(spgcl, result)
    report = data_dir / "reports" / "spgcl"
    pngs = {p.name: p for p in report.rglob("*.png")}   # the platform decides the sub-folder
    assert (report / "REPORT.md").exists() and pngs["accuracy.png"].stat().st_size > 1000
    assert {"energy_spectrum.png", "prealignment.png", "loss_curves.png"} <= set(pngs)
    metrics = json.loads((report / "metrics.json").read_text())
    assert metrics["claims_total"] == len(spgcl.CLAIM_IDS)
    claims = pd.read_parquet(data_dir / "results" / "spgcl" / "claims.parquet")
    assert set(claims["claim_id"]) == set(spgcl.CLAIM_IDS)
    # checkpoints are named by method × graph × seed and reload with weights_only
    encoders = pd.read_parquet(data_dir / "spgcl" / "gcl_encoder.parquet")
    assert (data_dir / "spgcl" / "checkpoints" / "spgcl__bow_hetero__seed0.pt").exists()
    assert encoders.groupby(["method", "graph"]).size().eq(2).all()
    probe = pd.read_parquet(data_dir / "spgcl" / "linear_probe.parquet")
    assert set(probe["numhop"]) == {0, 3}
    assert {"raw_features", "sgc_features"} <= set(probe["method"])


def _corrupting(monkeypatch, corrupt):
    real = spgcl_data.make_graph

    def make_graph(name, n_nodes, seed):
        g = real(name, n_nodes, seed)
        return corrupt(g) if name == "gauss_homo" else g

    monkeypatch.setattr(spgcl_data, "make_graph", make_graph)


def _check_message(result, name):
    return next(e.description for e in result.get_asset_check_evaluations() if e.check_name == name)


@pytest.mark.parametrize("corrupt, message", [
    (lambda g: {**g, "edge_index": np.concatenate([g["edge_index"], [[0, 999], [999, 0]]], axis=1)},
     "endpoints outside [0, 150)"),
    (lambda g: {**g, "edge_index": np.zeros((2, 0), dtype=np.int64)}, "isolated-node fraction 1.000 > 0.02"),
    (lambda g: {**g, "x": g["x"][:-3]}, "feature matrix has 147 rows for 150 nodes"),
])
def test_bad_graph_is_stopped_before_training(one_thread, monkeypatch, corrupt, message):
    _corrupting(monkeypatch, corrupt)
    result = materialize_paper(spgcl, one_thread)
    seen = outcomes(result)
    assert seen["checks"]["graphs_valid"] is False
    assert message in _check_message(result, "graphs_valid")
    assert not ({"spgcl/feature_energy", "spgcl/prealignment_diagnostics"} | TRAINING) & seen["assets"]


def test_dim_keep_larger_than_feature_dimension_is_stopped(one_thread, monkeypatch):
    import resources.compute as compute_module

    real = compute_module.load_params

    def params(slug, profile, *args, **kwargs):
        out = real(slug, profile, *args, **kwargs)
        return {**out, "dim_keep": 400} if slug == "spgcl" else out

    monkeypatch.setattr(compute_module, "load_params", params)
    result = materialize_paper(spgcl, one_thread)
    seen = outcomes(result)
    assert seen["checks"]["energy_split_valid"] is False
    assert "dim_keep k = 400 is outside [1, F = 300]" in _check_message(result, "energy_split_valid")
    assert not ({"spgcl/positive_keep_probs"} | TRAINING) & seen["assets"]


def test_energy_check_names_inverted_split():
    frame = pd.DataFrame({"graph": "g", "seed": 0, "dim": [0, 1, 2], "energy": [0.1, 0.5, 0.3],
                          "in_high": [True, False, False], "k": 1, "n_features": 3})
    result = spgcl._energy_split_valid(frame)
    assert not result.passed and "mean E(H) < mean E(L)" in result.description


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_every_profile_has_complete_parameters(profile):
    from resources.profiles import load_params
    from assets.spgcl.training import METHODS, NON_LEARNED

    params = load_params("spgcl", profile)
    assert set(params["graphs"]) <= set(spgcl_data.ALL_GRAPHS)
    assert set(params["runs"]) <= set(params["graphs"])
    assert {m for ms in params["runs"].values() for m in ms} <= set(METHODS)
    assert set(params["non_learned"]) <= set(NON_LEARNED)
    assert {"spgcl", "grace", "dgi", "bgrl"} <= set(params["methods"])
    assert params["methods"]["spgcl"]["edepoch"] <= params["methods"]["spgcl"]["epochs"]
