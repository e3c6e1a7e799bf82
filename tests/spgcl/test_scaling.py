"""Batched training across processes, the performance measurement, and the gpu profile's
code path at tiny sizes (run on device "cpu": no GPU is lent to these tests)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from assets.spgcl import data, method, scaling
from assets.spgcl import training as T
from resources.profiles import load_params

torch.set_num_threads(1)


def _specs(tmp_path, hp_for, methods, n=80):
    g = data.make_csbm(data.graph_config("bow_hetero", n), 5)
    path = tmp_path / "g.npz"
    np.savez(path, **g)
    energy = method.dirichlet_energy_per_feature(g["x"], g["edge_index"])
    high = method.high_energy_mask(energy, 16)
    keep = method.edge_keep_probability(g["x"][:, ~high], g["edge_index"], 0.8)
    return [T.RunSpec(m, str(path), high, keep, hp_for(m), run_seed=11 + i) for i, m in enumerate(methods)]


def test_two_worker_processes_reproduce_in_process_training(tmp_path):
    """Each run is seeded by its own spec: spawned workers give bit-identical weights, losses and
    embeddings to sequential in-process training, returned in spec order."""
    params = load_params("spgcl", "smoke")

    def hp_for(m):
        family = T.METHODS[m][0]
        return {**params["encoder"], **params["methods"][family], "epochs": 3, "edepoch": 1}

    specs = _specs(tmp_path, hp_for, ["spgcl", "grace", "dgi"])
    done = []
    sequential = T.run_many(specs, workers=1)
    parallel = T.run_many(specs, workers=2, on_done=lambda i, r: done.append(i))
    assert sorted(done) == [0, 1, 2]
    for a, b in zip(sequential, parallel):
        assert a["losses"] == b["losses"] and a["z_fingerprint"] == b["z_fingerprint"]
        assert all(torch.equal(a["state"][k], b["state"][k]) for k in a["state"])
    assert sequential[0]["losses"] != sequential[1]["losses"]


def test_loglog_slope_known_answers():
    n = np.array([100, 1000, 10000])
    assert scaling.loglog_slope(n, 3.0 * n ** 2) == pytest.approx(2.0)
    assert scaling.loglog_slope(n, 5.0 * n ** 0.5) == pytest.approx(0.5)
    assert np.isnan(scaling.loglog_slope(n[:1], n[:1]))


def test_cpu_peak_memory_counts_live_tensors():
    """A known allocation pattern of 4 MB tensors: x; tmp = x + 1 (8 MB live); y = 2·tmp
    (12 MB); del tmp (8 MB); z = y + x (12 MB) — the profiler-based peak is 12 MB."""
    def work():
        x = torch.ones(1_000_000)
        tmp = x + 1.0
        y = tmp * 2.0
        del tmp
        z = y + x
        return z

    peak = scaling._cpu_peak_bytes(work)
    assert 12_000_000 <= peak <= 12_100_000


def test_measure_reports_positive_rates_and_chunking():
    hp = {"hidden": 8, "proj": 8, "layers": 2, "dropout": 0.3, "lr": 1e-3, "tau": 0.5, "pf": 0.3, "chunk": 64}
    small = scaling.measure(50, hp, epochs=1, dim_keep=16)
    large = scaling.measure(150, hp, epochs=1, dim_keep=16)
    assert not small["similarity_chunked"] and large["similarity_chunked"]
    for row in (small, large):
        assert row["epochs_per_second"] > 0 and np.isfinite(row["final_loss"])
        # the graph's features alone are n × 300 float32
        assert row["peak_memory_bytes"] > row["n"] * 300 * 4
    assert large["peak_memory_bytes"] > small["peak_memory_bytes"]


def test_gpu_profile_block_builds_and_its_code_path_runs_on_cpu(tmp_path):
    """The gpu block validates (every method, graph and size is known) and every method trains
    with the gpu block's hyper-parameters at tiny n and 2 epochs, on device cpu; the scaling
    measurement runs with its sizes replaced by tiny ones."""
    params = load_params("spgcl", "gpu")
    assert params["train_workers"] == 1 and max(params["scaling"]["sizes"]) == 50000
    assert set(params["graphs"]) <= set(data.GRAPH_CONFIGS)
    methods = sorted({m for ms in params["runs"].values() for m in ms})
    assert set(methods) == set(T.METHODS)

    def hp_for(m):
        family = T.METHODS[m][0]
        return {**params["encoder"], **params["methods"][family], "epochs": 2, "edepoch": 1, "chunk": 32}

    results = T.run_many(_specs(tmp_path, hp_for, methods, n=60), workers=1)
    for m, r in zip(methods, results):
        assert len(r["losses"]) == 2 and np.isfinite(r["losses"]).all(), m
    hp = {**params["encoder"], **params["methods"]["spgcl"], "hidden": 8, "proj": 8}
    row = scaling.measure(60, hp, epochs=1, device="cpu", dim_keep=int(params["dim_keep"]))
    assert row["chunk"] == params["encoder"]["chunk"] and row["epochs_per_second"] > 0
