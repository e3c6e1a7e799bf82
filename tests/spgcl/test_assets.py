"""SPGCL wiring: the smoke outputs (checkpoints, report, wall-clock numbers kept out of the
reproducible files), bad input (out-of-range edge endpoints, an isolated-node-only graph, a
feature matrix with the wrong row count, dim_keep k larger than F, a checkpoint that does not
reload) stopped by a blocking check before anything downstream consumes it (re-running only
the gated asset and one downstream on the stored smoke outputs), and the predicates name what
is wrong. The group's completeness, determinism and typed parameters are
tests/platform/test_smoke_contract.py's."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from assets.common.params import parse
from assets.spgcl import checks, runs
from assets.spgcl import data as spgcl_data
from assets.spgcl.params import SPGCLParams
from resources.profiles import PROFILES, load_params
from tests.conftest import corrupt_saved_checkpoints, rerun, smoke_run

SLUG = "spgcl"


run = smoke_run(SLUG)


def check_detail(root, asset: str, check: str) -> str:
    """The message a check recorded in its run-record row (data/runs/spgcl/checks_*.parquet)."""
    return pd.read_parquet(root / "runs" / SLUG / f"checks_{asset}_{check}.parquet")["detail"].iloc[0]


# ------------------------------------------------------------------------------ smoke outputs
def test_smoke_checkpoints_report_and_timings(run):
    root = run.data_dir
    encoders = run.value("gcl_encoder")
    assert (root / SLUG / "checkpoints" / "spgcl__bow_hetero__seed0.pt").exists()
    assert encoders.groupby(["method", "graph"]).size().eq(2).all()
    assert not {"train_seconds", "epochs_per_second"} & set(encoders.columns)
    sidecar = json.loads((root / SLUG / "checkpoints" / "spgcl__karate__seed0.pt.json").read_text())
    assert sidecar["config"]["edepoch"] == 3 and sidecar["method"] == "spgcl" and "git_sha" not in sidecar
    probe = run.value("linear_probe")
    assert set(probe["numhop"]) == {0, 3} and {"raw_features", "sgc_features"} <= set(probe["method"])
    # the scaling benchmark is a run record, never a DVC-tracked value or metric
    assert not (root / SLUG / "training_scaling.parquet").exists()
    assert len(run.value("training_scaling")) == 2
    report = root / "reports" / SLUG
    assert "scaling" not in json.loads((report / "metrics.json").read_text())
    text = (report / "REPORT.md").read_text()
    assert "epochs_per_second" not in text and "## Test accuracy" in text
    assert {p.name for p in (report / "plots").glob("*.png")} == {"accuracy.png", "energy_spectrum.png",
                                                                  "prealignment.png", "loss_curves.png"}
    timings = (root / "runs" / SLUG / "TIMINGS.md").read_text()
    assert "## Training cost (mean per run)" in timings and "## Performance: SPGCL training cost versus n" in timings
    rows = pd.read_parquet(root / "runs" / SLUG / "metrics_timings.parquet")
    assert set(rows["asset"]) == {"spgcl/gcl_encoder", "spgcl/training_scaling"}
    assert "spgcl/training_scaling" not in set(pd.read_parquet(root / "results" / SLUG / "metrics.parquet")["asset"])


def test_report_without_recorded_training_times_is_the_same_report(run, tmp_path):
    seen = rerun(run, ["benchmark_report"], tmp_path / "data", drop=(f"runs/{SLUG}/timings",))
    assert f"{SLUG}/benchmark_report" in seen["assets"]
    again = tmp_path / "data" / "reports" / SLUG / "REPORT.md"
    assert again.read_bytes() == (run.data_dir / "reports" / SLUG / "REPORT.md").read_bytes()
    timings = (tmp_path / "data" / "runs" / SLUG / "TIMINGS.md").read_text()
    assert "No training timings" in timings and "SPGCL training cost versus n" in timings


# ------------------------------------------------------------------------------ gating
@pytest.mark.parametrize("corrupt, message", [
    (lambda g: {**g, "edge_index": np.concatenate([g["edge_index"], [[0, 999], [999, 0]]], axis=1)},
     "endpoints outside [0, 150)"),
    (lambda g: {**g, "edge_index": np.zeros((2, 0), dtype=np.int64)}, "isolated-node fraction 1.000 > 0.02"),
    (lambda g: {**g, "x": g["x"][:-3]}, "feature matrix has 147 rows for 150 nodes"),
])
def test_bad_graph_is_stopped_before_the_energies(run, tmp_path, monkeypatch, corrupt, message):
    real = spgcl_data.make_graph

    def make_graph(name, n_nodes, seed):
        g = real(name, n_nodes, seed)
        return corrupt(g) if name == "gauss_homo" else g

    monkeypatch.setattr(spgcl_data, "make_graph", make_graph)
    seen = rerun(run, ["graph_dataset", "feature_energy"], tmp_path / "data")
    assert seen["checks"]["graphs_valid"] is False
    assert message in check_detail(tmp_path / "data", "graph_dataset", "graphs_valid")
    assert f"{SLUG}/feature_energy" not in seen["assets"]


def test_dim_keep_larger_than_feature_dimension_stops_the_keep_probabilities(run, tmp_path):
    seen = rerun(run, ["feature_energy", "positive_keep_probs"], tmp_path / "data",
                 params_overrides={SLUG: {"dim_keep": 400}})
    assert seen["checks"]["energy_split_valid"] is False
    assert "dim_keep k = 400 is outside [1, F = 300]" in check_detail(tmp_path / "data", "feature_energy",
                                                                      "energy_split_valid")
    assert f"{SLUG}/positive_keep_probs" not in seen["assets"]


def test_checkpoint_that_fails_to_reload_stops_the_embeddings(run, tmp_path, monkeypatch):
    corrupt_saved_checkpoints(monkeypatch, runs)       # the md5 in the sidecar no longer matches
    seen = rerun(run, ["gcl_encoder", "node_embeddings"], tmp_path / "data")
    assert seen["checks"]["checkpoints_load_back"] is False
    assert "does not load" in check_detail(tmp_path / "data", "gcl_encoder", "checkpoints_load_back")
    assert f"{SLUG}/node_embeddings" not in seen["assets"]


# ------------------------------------------------------------------------------ predicates
def test_energy_check_names_inverted_split():
    frame = pd.DataFrame({"graph": "g", "seed": 0, "dim": [0, 1, 2], "energy": [0.1, 0.5, 0.3],
                          "in_high": [True, False, False], "k": 1, "n_features": 3})
    found = checks.energy_split_valid(frame)
    assert not found.passed and "mean E(H) < mean E(L)" in found.message()
    assert checks.energy_split_valid(frame.assign(in_high=[False, True, False])).passed


def test_keep_probabilities_outside_the_unit_interval_and_tiny_kept_fractions_are_named(run):
    keep = run.value("positive_keep_probs")
    assert checks.keep_probs_in_range(keep).passed
    bad = keep.copy()
    bad.loc[bad.index[:2], "keep_prob"] = [1.5, np.nan]
    assert "2 keep probabilities outside [0, 1]" in checks.keep_probs_in_range(bad).message()
    assert checks.kept_fraction_not_tiny(keep.assign(keep_prob=0.5)).passed
    found = checks.kept_fraction_not_tiny(keep.assign(keep_prob=0.05))
    assert not found.passed and "EPS keeps < 10% of the edges" in found.message()


def test_embedding_checks_name_a_changed_reload_and_a_collapse(run):
    embeddings = run.value("node_embeddings")
    assert checks.embeddings_sane(embeddings).passed
    drifted = embeddings.copy()
    drifted.loc[0, "reload_max_abs_diff"] = 1e-2
    name = f"{drifted.loc[0, 'method']}/{drifted.loc[0, 'graph']}/seed {drifted.loc[0, 'seed']}"
    assert f"{name}: reloaded checkpoint gives embeddings differing by 1.00e-02" in \
        checks.embeddings_sane(drifted).message()
    aligned = embeddings.assign(mean_pairwise_cosine=np.where(embeddings.index == 0, 0.99, 0.1))
    assert "mean pairwise cosine ≥ 0.95 for 1 embeddings" in checks.embeddings_not_aligned(aligned).message()
    assert checks.embeddings_not_aligned(embeddings.assign(mean_pairwise_cosine=0.1)).passed


def test_probe_check_names_a_graph_where_nothing_beats_the_majority(run):
    probe = run.value("linear_probe")
    assert checks.probe_valid(probe).passed
    blind = probe.copy()
    blind.loc[blind["graph"] == "karate", "test_acc"] = 0.0
    found = checks.probe_valid(blind)
    assert not found.passed and "no method beats the majority class on ['karate" in found.message()
    assert found.metadata["failing_graphs"]


def test_scaling_check_needs_two_positive_sizes(run):
    scaling = run.value("training_scaling")
    assert checks.scaling_measured(scaling).passed
    assert "1 size(s) measured: no scaling exponent" in \
        checks.scaling_measured(scaling.head(1).assign(time_exponent=np.nan)).message()
    stalled = scaling.assign(epochs_per_second=[0.0, 1.0])
    assert "n=100: epochs/s 0.0" in checks.scaling_measured(stalled).message()


def test_diagnostics_check_names_missing_encoders(run):
    diag = run.value("prealignment_diagnostics")
    assert checks.diagnostics_finite(diag).passed
    found = checks.diagnostics_finite(diag[diag["encoder"] != "mlp"])
    assert not found.passed and "missing for encoders ['mlp']" in found.message()


# ------------------------------------------------------------------------------ parameters
@pytest.mark.parametrize("profile", PROFILES)
def test_every_profile_names_known_graphs_and_methods(profile):
    from assets.spgcl.training import METHODS

    params = parse(SPGCLParams, load_params(SLUG, profile), f"{SLUG}.{profile}")
    assert set(params.graphs) <= set(spgcl_data.ALL_GRAPHS)
    assert set(params.runs) <= set(params.graphs)
    assert {m for ms in params.runs.values() for m in ms} <= set(METHODS)
    assert params.methods.spgcl.edepoch <= params.methods.spgcl.epochs
    runs_planned = params.planned_runs()
    assert len(runs_planned) == sum(len(ms) for ms in params.runs.values()) * len(params.seeds)
    assert [g for _, g, _ in runs_planned] == sorted((g for _, g, _ in runs_planned), key=params.graphs.index)
