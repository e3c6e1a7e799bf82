"""The CSBM generator and the graph validator."""
from __future__ import annotations

import numpy as np
import pytest

from assets.spgcl import data


def test_block_probabilities_give_target_degree_and_homophily():
    config = data.graph_config("gauss_homo", 2000)
    p_in, p_out = config.block_probabilities()
    intra_pairs = 5 * 400 * 399 / 2
    inter_pairs = 2000 * 1999 / 2 - intra_pairs
    expected_edges = p_in * intra_pairs + p_out * inter_pairs
    assert 2 * expected_edges / 2000 == pytest.approx(10.0, rel=0.01)
    assert p_in * intra_pairs / expected_edges == pytest.approx(0.8, abs=0.01)
    # h = 1/C makes p_in = p_out: the "heterophilous" config at C = 5 has a label-independent graph
    p_in, p_out = data.graph_config("bow_hetero", 2000).block_probabilities()
    assert p_in == pytest.approx(p_out)


@pytest.mark.parametrize("name", list(data.GRAPH_CONFIGS))
def test_generated_graphs_meet_their_targets(name):
    config = data.graph_config(name, 1000)
    g = data.make_csbm(config, seed=7)
    stats = data.graph_stats(g)
    assert abs(stats["measured_homophily"] - config.homophily) < 0.03
    assert stats["mean_degree"] == pytest.approx(10.0, rel=0.1)
    assert data.graph_problems(g, config.feature_model, config.homophily) == []
    assert np.bincount(g["y"]).tolist() == [200] * 5
    split = np.bincount(g["split"], minlength=3) / len(g["y"])
    assert split.tolist() == pytest.approx([0.1, 0.1, 0.8])


def test_generator_is_deterministic_and_seed_dependent():
    config = data.graph_config("bow_homo", 300)
    a, b, c = data.make_csbm(config, 1), data.make_csbm(config, 1), data.make_csbm(config, 2)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["edge_index"], c["edge_index"])


def test_gaussian_informative_dims_carry_the_class_and_noise_dims_do_not():
    config = data.graph_config("gauss_homo", 2000)
    g = data.make_csbm(config, 0)
    class_means = np.stack([g["x"][g["y"] == c].mean(0) for c in range(5)])
    spread = class_means.std(0)
    assert spread[:32].mean() > 3 * spread[32:].mean()


def test_canonical_edges_symmetric_without_loops_or_duplicates():
    e = data.canonical_edges(np.array([0, 1, 1, 2, 2]), np.array([1, 0, 1, 3, 3]), 4)
    assert e.T.tolist() == [[0, 1], [1, 0], [2, 3], [3, 2]]


def _valid():
    return data.make_csbm(data.graph_config("bow_homo", 200), 0)


@pytest.mark.parametrize("corrupt, message", [
    (lambda g: g.update(edge_index=np.concatenate([g["edge_index"], [[0, 250], [250, 0]]], 1)), "outside [0, 200)"),
    (lambda g: g.update(edge_index=np.concatenate([g["edge_index"], [[3], [3]]], 1)), "self-loops"),
    (lambda g: g.update(edge_index=np.concatenate([g["edge_index"], g["edge_index"][:, :2]], 1)), "duplicate edges"),
    (lambda g: g.update(edge_index=g["edge_index"][:, 1:]), "not symmetric"),
    (lambda g: g.update(edge_index=np.zeros((2, 0), dtype=np.int64)), "isolated-node fraction 1.000"),
    (lambda g: g.update(x=g["x"][:-1]), "199 rows for 200 nodes"),
    (lambda g: g["x"].__setitem__((0, 0), np.nan), "non-finite"),
    (lambda g: g.update(x=g["x"] * 2), "do not sum to 1"),
    (lambda g: g.update(y=np.where((g["y"] == 4) & (np.arange(200) > 30), 0, g["y"])), "smallest class"),
])
def test_graph_problems_name_each_defect(corrupt, message):
    g = _valid()
    corrupt(g)
    problems = data.graph_problems(g, "bow", 0.8)
    assert any(message in p for p in problems), problems


def test_homophily_off_target_is_reported():
    problems = data.graph_problems(_valid(), "bow", 0.2)
    assert any("differs from target 0.20" in p for p in problems)


def test_karate_sanity_graph():
    g = data.make_karate(0)
    assert g["x"].shape == (34, 34) and g["edge_index"].shape[1] == 2 * 78
    assert data.graph_problems(g, "identity", float("nan")) == []
