"""Encoders and losses against brute-force formulas (torch, tiny graphs)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from assets.spgcl import data
from assets.spgcl import model as M
from assets.spgcl import training as T

torch.set_num_threads(1)


def _graph(n=40, seed=0):
    g = data.make_csbm(data.graph_config("gauss_homo", n), seed)
    return g, torch.as_tensor(g["x"]), torch.as_tensor(g["edge_index"])


def test_normalized_adjacency_equals_dense_formula():
    g, x, ei = _graph()
    n = len(g["y"])
    a = np.eye(n)
    a[g["edge_index"][1], g["edge_index"][0]] = 1.0
    inv = 1 / np.sqrt(a.sum(1))
    dense = inv[:, None] * a * inv[None, :]
    assert np.allclose(M.normalized_adjacency(ei, n).to_dense().numpy(), dense, atol=1e-6)


def test_linear_path_shares_the_gcn_weights():
    torch.manual_seed(0)
    _, x, ei = _graph()
    stack = M.GraphStack(x.shape[1], [8], "prelu", "layer", 0.0).eval()
    with torch.no_grad():
        stack.biases[0].copy_(torch.linspace(-1, 1, 8))
        w, b = stack.linears[0].weight, stack.biases[0]
        norm, act = stack.norms[0], stack.acts[0]
        assert torch.allclose(stack(x, None), norm(act(x @ w.T + b)), atol=1e-5)
        adj = M.normalized_adjacency(ei, x.shape[0])
        assert torch.allclose(stack(x, adj), norm(act(torch.sparse.mm(adj, x @ w.T) + b)), atol=1e-5)
        # with Â = I (no edges) the GCN and its linear path coincide
        empty = M.normalized_adjacency(torch.zeros((2, 0), dtype=torch.long), x.shape[0])
        assert torch.allclose(stack(x, empty), stack(x, None), atol=1e-6)


def test_eap_low_energy_dims_are_not_propagated():
    """z_i depends on neighbours' H dims (propagated) but never on their L dims."""
    torch.manual_seed(0)
    _, x, ei = _graph()
    model = M.SPGCLModel(x.shape[1], hidden=8, proj=8, layers=2, dropout=0.0).eval()
    adj = M.normalized_adjacency(ei, x.shape[0])
    high = torch.zeros(x.shape[1])
    high[:10] = 1.0
    node = 0
    neighbours = ei[1][ei[0] == node]
    with torch.no_grad():
        base = model.embed(x, adj, high)[node]
        x_low = x.clone()
        x_low[neighbours, 10:] += 5.0          # change only the neighbours' low-energy dims
        assert torch.allclose(model.embed(x_low, adj, high)[node], base, atol=1e-5)
        x_high = x.clone()
        x_high[neighbours, :10] += 5.0         # change the neighbours' high-energy dims
        assert not torch.allclose(model.embed(x_high, adj, high)[node], base, atol=1e-3)
        # and it is exactly GCN(X⊙1_H) + Lin(X⊙1_L) with one set of weights
        expected = model.encoder(x * high, adj) + model.encoder(x * (1 - high), None)
        assert torch.allclose(model.embed(x, adj, high), expected)


def _dense_neighbour_infonce(h, pos_edges, tau):
    n = h.shape[0]
    pos = torch.eye(n, dtype=torch.bool)
    pos[pos_edges[0], pos_edges[1]] = True
    sim = torch.exp(h @ h.T / tau)
    numerator = (sim * pos).sum(1)
    negatives = (sim * (~pos)).sum(1)
    return -(torch.log(numerator / (numerator + negatives))).mean()


@pytest.mark.parametrize("chunk", [4096, 7])
def test_neighbour_infonce_matches_brute_force(chunk):
    torch.manual_seed(0)
    _, _, ei = _graph(30)
    h = torch.nn.functional.normalize(torch.randn(30, 5, dtype=torch.float64), dim=1).requires_grad_()
    kept = ei[:, ::2]                              # an asymmetric sampled positive set
    loss = M.neighbour_infonce(h, kept, tau=0.5, chunk=chunk)
    ref = _dense_neighbour_infonce(h, kept, 0.5)
    assert loss.item() == pytest.approx(ref.item(), rel=1e-9)
    g1, = torch.autograd.grad(loss, h)
    g2, = torch.autograd.grad(ref, h)
    assert torch.allclose(g1, g2, atol=1e-10)


@pytest.mark.parametrize("chunk", [4096, 6])
def test_grace_losses_match_brute_force(chunk):
    torch.manual_seed(1)
    u = torch.nn.functional.normalize(torch.randn(20, 4, dtype=torch.float64), dim=1)
    v = torch.nn.functional.normalize(torch.randn(20, 4, dtype=torch.float64), dim=1)
    tau = 0.4

    def semi(a, b, positives):
        refl, between = torch.exp(a @ a.T / tau), torch.exp(a @ b.T / tau)
        den = between.sum(1) + refl.sum(1) - refl.diag()
        return (-torch.log(between.diag() / den) if positives else torch.log(den)).mean()

    ref = 0.5 * (semi(u, v, True) + semi(v, u, True))
    assert M.grace_loss(u, v, tau, True, chunk).item() == pytest.approx(ref.item(), rel=1e-9)
    uniform = 0.5 * (semi(u, v, False) + semi(v, u, False))
    # the no-positive loss drops the constant 1/τ shift
    assert M.grace_loss(u, v, tau, False, chunk).item() == pytest.approx(uniform.item() - 1 / tau, rel=1e-9)


def test_eps_sampling_frequency_matches_keep_probability():
    edges = torch.stack([torch.zeros(4, dtype=torch.long), torch.arange(1, 5)])
    keep = torch.tensor([0.0, 0.25, 0.75, 1.0])
    gen = torch.Generator().manual_seed(0)
    counts = torch.zeros(5)
    trials = 4000
    for _ in range(trials):
        kept = M.sample_kept_edges(edges, keep, gen)
        counts[kept[1]] += 1
    freq = counts[1:] / trials
    assert freq[0] == 0 and freq[3] == 1
    assert abs(freq[1] - 0.25) < 0.03 and abs(freq[2] - 0.75) < 0.03


def test_view_masks_only_high_energy_dims():
    x = torch.ones(500, 6)
    high = torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    out = M.mask_high_entries(x, 0.3, high, torch.Generator().manual_seed(0))
    assert torch.equal(out[:, 3:], x[:, 3:])
    assert abs((out[:, :3] == 0).float().mean().item() - 0.3) < 0.03


def test_bgrl_momentum_schedule_endpoints():
    assert M.bgrl_momentum(0, 100, 0.99) == pytest.approx(0.99)
    assert M.bgrl_momentum(100, 100, 0.99) == pytest.approx(1.0)


def test_training_is_deterministic_and_lowers_the_loss():
    g = data.make_csbm(data.graph_config("bow_homo", 60), 0)
    high = np.zeros(g["x"].shape[1], dtype=bool)
    high[:16] = True
    keep = np.full(g["edge_index"].shape[1], 0.5)
    tensors = T.GraphTensors.from_numpy(g["x"], g["edge_index"], high, keep)
    hp = {"hidden": 8, "proj": 8, "layers": 2, "dropout": 0.0, "lr": 0.01, "tau": 0.5, "pf": 0.0,
          "epochs": 30, "edepoch": 100}
    m1, l1, _ = T.train("spgcl", tensors, hp, seed=3)
    m2, l2, _ = T.train("spgcl", tensors, hp, seed=3)
    assert l1 == l2
    assert torch.equal(T.embed(m1, "spgcl", tensors), T.embed(m2, "spgcl", tensors))
    assert l1[-1] < l1[0]


@pytest.mark.parametrize("chunk", [4096, 5])
@pytest.mark.parametrize("symmetric", [False, True])
def test_exp_similarity_sums_values_and_gradients_match_autograd(chunk, symmetric):
    """The hand-written backward (stored block or recomputed row blocks; symmetric shortcut)
    equals autograd through the dense formula, and passes torch.autograd.gradcheck."""
    torch.manual_seed(3)
    tau = 0.6
    a = torch.nn.functional.normalize(torch.randn(13, 4, dtype=torch.float64), dim=1).requires_grad_()
    b = a if symmetric else torch.nn.functional.normalize(
        torch.randn(11, 4, dtype=torch.float64), dim=1).requires_grad_()
    w_rows, w_cols = torch.randn(13, dtype=torch.float64), torch.randn(b.shape[0], dtype=torch.float64)
    rows, cols = M.shifted_exp_sums(a, b, tau, chunk)
    dense = torch.exp((a @ b.T - 1.0) / tau)
    assert torch.allclose(rows, dense.sum(1)) and torch.allclose(cols, dense.sum(0))
    inputs = (a,) if symmetric else (a, b)
    got = torch.autograd.grad((rows * w_rows).sum() + (cols * w_cols).sum(), inputs)
    want = torch.autograd.grad((dense.sum(1) * w_rows).sum() + (dense.sum(0) * w_cols).sum(), inputs)
    for g1, g2 in zip(got, want):
        assert torch.allclose(g1, g2, atol=1e-12)
    if not symmetric:
        assert torch.autograd.gradcheck(lambda x, y: M.shifted_exp_sums(x, y, tau, chunk), (a, b))


def test_inverted_dropout_keeps_the_expectation_and_drop_rate():
    torch.manual_seed(0)
    x = torch.ones(200, 500)
    y = M.inverted_dropout(x, 0.3)
    assert (y == 0).float().mean().item() == pytest.approx(0.3, abs=0.01)
    assert torch.allclose(torch.unique(y), torch.tensor([0.0, 1 / 0.7]))
    assert y.mean().item() == pytest.approx(1.0, abs=0.02)
