"""SPGCL's numpy quantities against hand-checked values and closed forms."""
from __future__ import annotations

import numpy as np
import pytest

from assets.spgcl import data
from assets.spgcl import method as E

# path 0 - 1 - 2, both directions
PATH = data.canonical_edges(np.array([0, 1]), np.array([1, 2]), 3)


def test_degrees_accumulate_duplicates():
    # the reference's `deg[edge_index[0]] += 1` would give 1 for every node; we count all entries
    assert E.node_degrees(PATH, 3).tolist() == [2.0, 4.0, 2.0]


def test_dirichlet_energy_hand_checked_path():
    x = np.array([[1.0, 3.0], [0.0, 3.0], [2.0, 3.0]])
    # d = (2, 4, 2): scaled x0 = 1/√2, x1 = 0, x2 = 2/√2 → terms 0.5, 0.5, 2, 2 → mean 1.25
    # dim 1 is constant 3: scaled 3/√2, 3/2, 3/√2 → (3/√2 − 1.5)² each
    energy = E.dirichlet_energy_per_feature(x, PATH)
    assert energy[0] == pytest.approx(1.25)
    assert energy[1] == pytest.approx((3 / np.sqrt(2) - 1.5) ** 2)
    # without degree normalisation: (1, 1, 4, 4) → 2.5 and a constant dim has zero energy
    plain = E.dirichlet_energy_per_feature(x, PATH, degree_normalized=False)
    assert plain.tolist() == pytest.approx([2.5, 0.0])


def test_constant_signal_on_regular_graph_has_zero_energy():
    n = 6
    ring = data.canonical_edges(np.arange(n), (np.arange(n) + 1) % n, n)
    x = np.ones((n, 1)) * 5.0
    assert E.dirichlet_energy_per_feature(x, ring)[0] == pytest.approx(0.0)
    # alternating signal on an even ring: maximal energy, 4·x²/d per entry
    alt = np.array([[1.0], [-1.0]] * 3)
    assert E.dirichlet_energy_per_feature(alt, ring)[0] == pytest.approx(4.0 / 4.0)


def test_energy_is_per_dimension_and_scale_quadratic():
    rng = np.random.default_rng(0)
    g = data.make_csbm(data.graph_config("gauss_homo", 200), 1)
    x = g["x"].astype(np.float64)
    both = E.dirichlet_energy_per_feature(x, g["edge_index"])
    one = E.dirichlet_energy_per_feature(x[:, :5], g["edge_index"])
    assert np.allclose(both[:5], one)
    scale = rng.uniform(0.5, 2.0, size=x.shape[1])
    assert np.allclose(E.dirichlet_energy_per_feature(x * scale, g["edge_index"]), both * scale ** 2)
    # the Rayleigh variant is scale-free
    assert np.allclose(E.rayleigh_energy_per_feature(x * scale, g["edge_index"]),
                       E.rayleigh_energy_per_feature(x, g["edge_index"]))


def test_high_low_split_and_ranks():
    energy = np.array([0.1, 0.5, 0.3, 0.5, 0.0])
    assert E.energy_ranks(energy).tolist() == [3, 0, 2, 1, 4]      # ties: lower index first
    assert E.high_energy_mask(energy, 2).tolist() == [False, True, False, True, False]
    assert E.high_energy_mask(energy, 9).all()                     # k > F: every dim, |H| ≠ k


def test_keep_probability_hand_checked():
    x_low = np.array([[1.0, 0.0], [1.0, 1.0], [-1.0, 0.0], [0.0, 0.0]])
    edges = np.array([[0, 0, 0, 1], [1, 2, 3, 0]])
    p = E.edge_keep_probability(x_low, edges, alpha=0.8)
    assert p == pytest.approx([0.8 / np.sqrt(2), 0.0, 0.0, 0.8 / np.sqrt(2)])
    assert E.edge_keep_probability(x_low, edges, alpha=2.0)[0] == pytest.approx(1.0)   # min(α·S, 1)


def test_normalized_dirichlet_energy_matches_dense_laplacian():
    g = data.make_csbm(data.graph_config("bow_homo", 120), 3)
    n = len(g["y"])
    a = np.zeros((n, n))
    a[g["edge_index"][0], g["edge_index"][1]] = 1.0
    z = np.random.default_rng(1).normal(size=(n, 7))
    # the GCN's normalized graph: L̃ = I − D̃^{-1/2}(A + I)D̃^{-1/2}
    a_tilde = a + np.eye(n)
    inv = 1 / np.sqrt(a_tilde.sum(1))
    lap_tilde = np.eye(n) - inv[:, None] * a_tilde * inv[None, :]
    expected = np.trace(z.T @ lap_tilde @ z) / np.trace(z.T @ z)
    assert E.normalized_dirichlet_energy(z, g["edge_index"]) == pytest.approx(expected)
    assert 0.0 <= expected <= 2.0
    # variant without self-loops: L = I − D^{-1/2} A D^{-1/2}
    d = a.sum(1)
    inv = np.where(d > 0, 1 / np.sqrt(np.maximum(d, 1)), 0)
    lap = np.eye(n) - inv[:, None] * a * inv[None, :]
    expected = np.trace(z.T @ lap @ z) / np.trace(z.T @ z)
    assert E.normalized_dirichlet_energy(z, g["edge_index"], self_loops=False) == pytest.approx(expected)


def test_normalized_dirichlet_energy_known_answers():
    """On a triangle (d̃ = 3, Â = J/3): constants have energy 0; a signal orthogonal to 1
    lies in L̃'s eigenspace of eigenvalue 1 (Â z = 0), so its quotient is exactly 1."""
    triangle = data.canonical_edges(np.array([0, 1, 2]), np.array([1, 2, 0]), 3)
    assert E.normalized_dirichlet_energy(np.ones((3, 2)), triangle) == pytest.approx(0.0)
    z = np.array([[1.0], [-1.0], [0.0]])
    assert E.normalized_dirichlet_energy(z, triangle) == pytest.approx(1.0)
    # without self-loops the same signal has L-eigenvalue 1 + 1/2 (A z = −z, d = 2)
    assert E.normalized_dirichlet_energy(z, triangle, self_loops=False) == pytest.approx(1.5)


def test_mean_edge_cosine_hand_checked():
    z = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]])
    assert E.mean_edge_cosine(z, PATH) == pytest.approx(0.0)
    assert E.mean_edge_cosine(np.ones((3, 2)), PATH) == pytest.approx(1.0)


def test_smoothing_matches_dense_propagation_and_keeps_constants():
    g = data.make_csbm(data.graph_config("gauss_homo", 100), 2)
    n = len(g["y"])
    a = np.eye(n)
    a[g["edge_index"][1], g["edge_index"][0]] += 1.0
    inv = 1 / np.sqrt(a.sum(1))
    a_hat = inv[:, None] * a * inv[None, :]
    z = np.random.default_rng(0).normal(size=(n, 4))
    assert np.allclose(E.smooth_embeddings(z, g["edge_index"], 3), a_hat @ a_hat @ a_hat @ z)
    ring = data.canonical_edges(np.arange(8), (np.arange(8) + 1) % 8, 8)
    assert np.allclose(E.smooth_embeddings(np.ones((8, 2)), ring, 3), 1.0)   # regular: Â1 = 1
