"""assets.flowtracer.flow: the potential, the conserving reweighting, the forward flow and its backbone,
the baselines, and every input check — against hand computations and invariants on random causal maps."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from assets.flowtracer.flow import (
    absorbed_mass,
    backbone,
    conservation_error,
    edge_weights,
    forward_flow,
    log_potential,
    max_received,
    middle_layers,
    one_hop,
    potential,
    recency,
    reweight,
    rollout,
    trace_flow,
    trace_flow_batch,
)

F64 = torch.float64


def attention_from_edges(W: torch.Tensor) -> torch.Tensor:
    """One layer, one head (1, 1, T, T) whose transpose-without-diagonal is W: query k puts W[i, k] on each
    earlier key i and the rest of its unit mass on itself (the diagonal, which edge_weights drops)."""
    A = W.T.clone().to(F64)
    A += torch.diag(1 - A.sum(dim=1))
    return A[None, None]


# The hand DAG: 0, 1 question; 2, 3 reasoning; 4 a distractor (dead end: no edge to A); 5 the answer.
#   0→2 .5   1→2 .25   0→3 .2   2→3 .6   1→4 .5   2→4 .3   1→5 .1   2→5 .2   3→5 .5
HAND_EDGES = {(0, 2): 0.5, (1, 2): 0.25, (0, 3): 0.2, (2, 3): 0.6, (1, 4): 0.5, (2, 4): 0.3,
              (1, 5): 0.1, (2, 5): 0.2, (3, 5): 0.5}
# h(5) = 1;  h(4) = 0 (no outgoing edge);  h(3) = .5·1 = .5;  h(2) = .6·.5 + .3·0 + .2·1 = .5
# h(1) = .25·.5 + .5·0 + .1·1 = .225;  h(0) = .5·.5 + .2·.5 = .35
HAND_H = [0.35, 0.225, 0.5, 0.5, 0.0, 1.0]
# W′: row 0: .25/.35 = 5/7 (→2), .1/.35 = 2/7 (→3); row 1: .125/.225 = 5/9 (→2), .1/.225 = 4/9 (→5), 0 (→4)
#     row 2: .3/.5 = 3/5 (→3), .2/.5 = 2/5 (→5), 0 (→4); row 3: .5/.5 = 1 (→5)
HAND_WP = {(0, 2): 5 / 7, (0, 3): 2 / 7, (1, 2): 5 / 9, (1, 5): 4 / 9, (2, 3): 3 / 5, (2, 5): 2 / 5, (3, 5): 1.0}
# injection 1/2 into 0 and 1;  f(2) = ½·5/7 + ½·5/9 = 40/63;  f(3) = ½·2/7 + 40/63·3/5 = 11/21;  f(4) = 0
# f(5) = ½·4/9 + 40/63·2/5 + 11/21·1 = 14/63 + 16/63 + 33/63 = 1;  τ = 2f off A, τ(5) = f(5)
HAND_F = [0.5, 0.5, 40 / 63, 11 / 21, 0.0, 1.0]
HAND_TAU = [1.0, 1.0, 80 / 63, 22 / 21, 0.0, 1.0]


def hand_W() -> torch.Tensor:
    W = torch.zeros(6, 6, dtype=F64)
    for (i, k), w in HAND_EDGES.items():
        W[i, k] = w
    return W


def random_attention(rng: np.random.Generator, L: int, H: int, T: int, p_drop: float = 0.0) -> torch.Tensor:
    """Causal softmax maps (L, H, T, T); with p_drop, keys are randomly disallowed (exact zeros) per query,
    the diagonal always kept, which creates dead ends."""
    scores = rng.normal(scale=1.5, size=(L, H, T, T))
    allowed = np.tril(np.ones((T, T), dtype=bool)) & (rng.random((L, H, T, T)) >= p_drop)
    allowed |= np.eye(T, dtype=bool)
    scores = np.where(allowed, scores, -np.inf)
    probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return torch.tensor(probs / probs.sum(axis=-1, keepdims=True))


def random_regions(rng: np.random.Generator, T: int) -> tuple[list[int], list[int]]:
    """A question prefix, then (after some reasoning tokens) an answer block, maybe with tokens after it."""
    q_end = int(rng.integers(2, T // 2))
    a_start = int(rng.integers(q_end, T - 1))
    a_end = int(rng.integers(a_start + 1, T + 1))
    return list(range(q_end)), list(range(a_start, a_end))


# ---------------------------------------------------------------- hand DAG


def test_hand_dag_potential_reweighting_flow_and_throughput():
    W = hand_W()
    h = potential(W, [5])
    assert torch.allclose(h, torch.tensor(HAND_H, dtype=F64), atol=1e-15)
    Wp = reweight(W, h, [5])
    expected = torch.zeros(6, 6, dtype=F64)
    for (i, k), w in HAND_WP.items():
        expected[i, k] = w
    assert torch.allclose(Wp, expected, atol=1e-15)
    f, phi, tau = forward_flow(Wp, h, [0, 1])
    assert torch.allclose(f, torch.tensor(HAND_F, dtype=F64), atol=1e-15)
    assert torch.allclose(tau, torch.tensor(HAND_TAU, dtype=F64), atol=1e-15)
    assert phi[2, 3] == pytest.approx(40 / 63 * 3 / 5)
    assert float(absorbed_mass(phi, [5])) == pytest.approx(1.0, abs=1e-15)
    assert float(conservation_error(Wp, h, [5])) < 1e-15


def test_trace_flow_from_attention_matches_the_hand_dag_so_edges_are_the_transpose():
    attn = attention_from_edges(hand_W())
    assert attn[0, 0, 2, 0] == 0.5 and attn[0, 0, 0, 2] == 0   # query 2 reads key 0 ...
    W = edge_weights(attn, [0])
    assert W[0, 2] == 0.5 and W[2, 0] == 0                      # ... which is the edge 0 → 2
    flow = trace_flow(attn, [0, 1], [5], [0])
    assert torch.allclose(flow.h, torch.tensor(HAND_H, dtype=F64), atol=1e-15)
    assert torch.allclose(flow.f, torch.tensor(HAND_F, dtype=F64), atol=1e-15)
    assert torch.allclose(flow.tau, torch.tensor(HAND_TAU, dtype=F64), atol=1e-15)
    assert flow.n_dead == 1 and flow.absorbed_mass == pytest.approx(1.0, abs=1e-15)
    # reading attn[q, k] itself as the edge q → k is not causal attention
    with pytest.raises(ValueError, match="non-causal"):
        trace_flow(attn.transpose(-1, -2), [0, 1], [5], [0])


def test_edge_direction_one_hop_and_potential_differ_from_the_transposed_reading():
    # query 2 (the answer) reads key 0 strongly (.7) and key 1 weakly (.1); query 1 reads key 0 with .4
    attn = torch.tensor([[1.0, 0, 0], [0.4, 0.6, 0], [0.7, 0.1, 0.2]], dtype=F64)[None, None]
    W = edge_weights(attn, [0])
    assert torch.allclose(one_hop(W, [2]), torch.tensor([0.7, 0.1, 0.0], dtype=F64))
    # h(1) = .1, h(0) = .7 + .4·.1 = .74 (reading attn[k, i] as W[k, i] would leave h(0) = h(1) = 0)
    assert torch.allclose(potential(W, [2]), torch.tensor([0.74, 0.1, 1.0], dtype=F64))


def test_dead_ends_get_zero_credit():
    # the hand DAG's 4, plus a second dead end 6 (fed by 2, feeding only 7) and a token 7 after the answer
    W = torch.nn.functional.pad(hand_W(), (0, 2, 0, 2))
    W[2, 6], W[6, 7], W[5, 7] = 0.05, 0.9, 0.3
    flow_h = potential(W, [5])
    f, phi, tau = forward_flow(reweight(W, flow_h, [5]), flow_h, [0, 1])
    for dead in (4, 6, 7):
        assert flow_h[dead] == 0 and f[dead] == 0 and tau[dead] == 0 and phi[:, dead].abs().sum() == 0
    assert float(absorbed_mass(phi, [5])) == pytest.approx(1.0, abs=1e-12)


# ---------------------------------------------------------------- invariants on random causal maps


@pytest.mark.parametrize("seed", range(6))
def test_conservation_and_absorbed_mass_on_random_causal_maps(seed):
    rng = np.random.default_rng(seed)
    T = int(rng.integers(6, 24))
    attn = random_attention(rng, L=3, H=2, T=T, p_drop=0.5 * (seed % 2))
    question, answer = random_regions(rng, T)
    flow = trace_flow(attn, question, answer, [1, 2])
    live = (flow.h > 0) & ~torch.isin(torch.arange(T), torch.tensor(answer))
    assert live.any()
    assert torch.allclose(flow.W_prime[live].sum(dim=1), torch.ones(int(live.sum()), dtype=F64), atol=1e-12)
    assert flow.W_prime[~live].abs().sum() == 0                        # answers absorb, dead rows are empty
    assert flow.conservation_error < 1e-12
    assert abs(flow.absorbed_mass - 1) < 1e-9
    assert torch.allclose(flow.tau[live], 2 * flow.f[live], atol=1e-15)
    # h solves its equation: h(i) = Σ_k W_ik h(k) off A
    assert torch.allclose((flow.W @ flow.h)[live], flow.h[live], rtol=1e-12, atol=0)
    assert flow.n_dead == int((flow.h == 0).sum()) and not torch.isnan(flow.tau).any()
    assert flow.backbone_fraction >= 0.8
    for i, k, carried in flow.backbone:
        assert i < k and 0 < carried <= flow.phi[i, k] + 1e-12


def test_masked_keys_and_sink_columns_get_no_flow():
    rng = np.random.default_rng(7)
    T, masked = 10, 4
    attn = random_attention(rng, L=2, H=2, T=T).numpy()
    attn[..., :, masked] = 0                                           # key 4 is masked for every query ...
    attn[..., masked, :] = 0                                           # ... and query 4 reads nothing
    rows = attn.sum(axis=-1, keepdims=True)
    attn = torch.tensor(np.divide(attn, rows, out=np.zeros_like(attn), where=rows > 0))
    flow = trace_flow(attn, [0, 1, 2], [8], [0, 1])
    assert flow.f[masked] == 0 and flow.tau[masked] == 0 and flow.phi[:, masked].sum() == 0
    assert flow.conservation_error < 1e-12 and abs(flow.absorbed_mass - 1) < 1e-12
    sunk = trace_flow(attn, [0, 1, 2], [8], [0, 1], drop_sink_columns=[0])
    assert sunk.W[0].sum() == 0 and sunk.tau[0] == 0 and sunk.h[0] == 0
    assert abs(sunk.absorbed_mass - 1) < 1e-12


# ---------------------------------------------------------------- log space


@pytest.mark.parametrize("seed", range(3))
def test_log_space_equals_direct_on_random_maps(seed):
    rng = np.random.default_rng(100 + seed)
    T = int(rng.integers(8, 20))
    attn = random_attention(rng, L=2, H=3, T=T, p_drop=0.4)
    question, answer = random_regions(rng, T)
    direct, logged = (trace_flow(attn, question, answer, [0, 1], log_space=s) for s in (False, True))
    for name in ("h", "W_prime", "f", "tau"):
        assert torch.allclose(getattr(direct, name), getattr(logged, name), rtol=1e-10, atol=1e-300), name
    assert torch.equal(torch.isinf(log_potential(direct.W, answer)), direct.h == 0)
    assert direct.n_dead == logged.n_dead


def chain_attention(T: int, w: float) -> torch.Tensor:
    """Query k reads key k − 1 with w and itself with 1 − w: W is a chain with h(i) = w^(T−1−i)."""
    A = torch.diag(torch.full((T,), 1 - w, dtype=F64)) + torch.diag(torch.full((T - 1,), w, dtype=F64), -1)
    A[0, 0] = 1.0
    return A[None, None]


def test_log_space_on_a_long_chain_where_float32_underflows():
    T, w = 60, 0.02
    W = edge_weights(chain_attention(T, w), [0])
    exact = w ** torch.arange(T - 1, -1, -1, dtype=F64)                # h(0) = .02^59 ≈ 6e-101
    h32 = torch.zeros(T, dtype=torch.float32)
    h32[-1] = 1
    for i in range(T - 2, -1, -1):
        h32[i] = W.float()[i, i + 1] * h32[i + 1]
    assert h32[0] == 0                                                 # float32 underflows ...
    assert torch.allclose(potential(W, [T - 1]), exact, rtol=1e-12)   # ... float64 and log space do not
    assert torch.allclose(potential(W, [T - 1], log_space=True), exact, rtol=1e-12)
    assert torch.allclose(log_potential(W, [T - 1]), exact.log(), rtol=1e-12)


def test_log_space_keeps_flow_where_float64_h_underflows():
    T, w = 250, 0.02                                                   # h(0) = .02^249 ≈ 1e-423
    attn = chain_attention(T, w)
    with pytest.raises(ValueError, match="no question token reaches"):
        trace_flow(attn, [0], [T - 1], [0])
    flow = trace_flow(attn, [0], [T - 1], [0], log_space=True)
    assert torch.allclose(flow.f, torch.ones(T, dtype=F64), atol=1e-12)   # the whole unit walks the chain
    assert flow.n_dead == 0 and abs(flow.absorbed_mass - 1) < 1e-12 and flow.conservation_error < 1e-12


# ---------------------------------------------------------------- batch


@pytest.mark.parametrize("log_space", [False, True])
def test_batch_equals_per_sequence_with_padding(log_space):
    rng = np.random.default_rng(11)
    B, L, H, T = 5, 3, 2, 16
    attn = torch.zeros(B, L, H, T, T, dtype=F64)
    key_mask = torch.zeros(B, T, dtype=torch.bool)
    question_masks, answer_masks = torch.zeros_like(key_mask), torch.zeros_like(key_mask)
    singles = []
    for b in range(B):
        n = int(rng.integers(6, T + 1))
        seq = random_attention(rng, L, H, n, p_drop=0.3 * (b % 2))
        question, answer = random_regions(rng, n)
        attn[b, ..., :n, :n] = seq
        attn[b, ..., n:, :] = 1.0 / T                                   # padded queries: garbage, never validated
        key_mask[b, :n], question_masks[b, question], answer_masks[b, answer] = True, True, True
        singles.append((n, trace_flow(seq, question, answer, [1, 2], log_space=log_space, drop_sink_columns=[0])))
    batch = trace_flow_batch(attn, key_mask, question_masks, answer_masks, [1, 2], log_space=log_space,
                             drop_sink_columns=[0])
    assert batch.tau.shape == (B, T) and batch.tau.dtype == F64
    for b, (n, single) in enumerate(singles):
        assert torch.allclose(batch.tau[b, :n], single.tau, rtol=1e-10, atol=1e-14)
        assert torch.allclose(batch.h[b, :n], single.h, rtol=1e-10, atol=1e-300)
        assert torch.allclose(batch.W[b, :n, :n], single.W, atol=1e-15)
        assert batch.tau[b, n:].abs().sum() == 0 and batch.W[b, n:].abs().sum() == 0
        assert float(batch.absorbed_mass[b]) == pytest.approx(single.absorbed_mass, abs=1e-12)
        assert float(batch.conservation_error[b]) < 1e-12 and int(batch.n_dead[b]) == single.n_dead


def test_batch_input_checks():
    rng = np.random.default_rng(3)
    attn = torch.stack([random_attention(rng, 2, 2, 8) for _ in range(2)])
    keys = torch.ones(2, 8, dtype=torch.bool)
    q, a = torch.zeros_like(keys), torch.zeros_like(keys)
    q[:, :3], a[:, 6] = True, True
    with pytest.raises(ValueError, match="bool"):
        trace_flow_batch(attn, keys[:, :7], q, a, [0])
    with pytest.raises(ValueError, match=r"\(B, L, H, T, T\)"):
        trace_flow_batch(attn[0], keys, q, a, [0])
    short = keys.clone()
    short[1, 6:] = False
    with pytest.raises(ValueError, match="out of range"):
        trace_flow_batch(attn, short, q, a, [0])
    empty = a.clone()
    empty[1] = False
    with pytest.raises(ValueError, match="empty answer"):
        trace_flow_batch(attn, keys, q, empty, [0])
    late = q.clone()
    late[0, 7] = True
    with pytest.raises(ValueError, match="answer before question"):
        trace_flow_batch(attn, keys, late, a, [0])


# ---------------------------------------------------------------- input checks


def valid_attention() -> torch.Tensor:
    return random_attention(np.random.default_rng(0), L=2, H=2, T=6)


@pytest.mark.parametrize("corrupt, message", [
    (lambda a: a[0], r"\(L, H, T, T\)"),
    (lambda a: a[..., :5], "square"),
    (lambda a: a + torch.triu(torch.full((6, 6), 1e-3, dtype=F64), 1), "non-causal"),
    (lambda a: a * 0.9, "sum to 1"),
    (lambda a: torch.where(a > 0.5, -a, a), "negative"),
    (lambda a: torch.where(a > 0.5, float("nan"), a), "NaN"),
])
def test_bad_attention_is_rejected(corrupt, message):
    with pytest.raises(ValueError, match=message):
        edge_weights(corrupt(valid_attention()), [0, 1])


def test_tolerances_masked_rows_and_unused_layers():
    attn = valid_attention()
    attn[..., 0, 0] = 0.0                                               # a fully masked query row is allowed
    attn[..., 3, :] *= 1 + 5e-5                                         # within 1e-4
    attn[..., 2, 5] = 5e-7                                              # causal slack below 1e-6
    edge_weights(attn, [0, 1])
    attn[1, 0, 4, 5] = 1e-3                                             # layer 1 is broken ...
    edge_weights(attn, [0])                                             # ... but not used
    with pytest.raises(ValueError, match="non-causal"):
        edge_weights(attn, [1])


@pytest.mark.parametrize("question, answer, layers, message", [
    ([0, 1], [5], [2], "layer index 2 out of range"),
    ([0, 1], [5], [], "no layers"),
    ([], [5], [0], "empty question"),
    ([0, 1], [], [0], "empty answer"),
    ([0, 3], [2, 5], [0], "answer before question"),
    ([0, 2], [2], [0], "answer before question"),
    ([0, 1], [6], [0], "out of range"),
    ([-1, 1], [5], [0], "out of range"),
    ([0.5], [5], [0], "integers"),
])
def test_bad_regions_and_layers_are_rejected(question, answer, layers, message):
    with pytest.raises(ValueError, match=message):
        trace_flow(valid_attention(), question, answer, layers)


def test_bad_edges_potential_and_sources_are_rejected():
    W = hand_W()
    with pytest.raises(ValueError, match="strictly upper triangular"):
        potential(W.T, [5])
    with pytest.raises(ValueError, match="negative or NaN"):
        potential(-W, [5])
    with pytest.raises(ValueError, match="sink column 9"):
        edge_weights(attention_from_edges(W), [0], drop_sink_columns=[9])
    with pytest.raises(ValueError, match="shape"):
        reweight(W, torch.ones(5, dtype=F64), [5])
    h = potential(W, [5])
    with pytest.raises(ValueError, match="no question token reaches"):
        forward_flow(reweight(W, h, [5]), h, [4])                       # the dead end is the only source
    with pytest.raises(ValueError, match="coverage"):
        backbone(torch.zeros(6, 6), [0], [5], coverage=0)


# ---------------------------------------------------------------- backbone


def test_backbone_is_the_dominant_path():
    W = torch.zeros(6, 6, dtype=F64)
    for i in range(5):
        W[i, i + 1] = 0.8                                                # the chain 0 → 1 → … → 5
    W[0, 2] = W[1, 3] = W[0, 5] = W[2, 5] = 0.01                         # weak shortcuts
    h = potential(W, [5])
    f, phi, _ = forward_flow(reweight(W, h, [5]), h, [0])
    edges, fraction = backbone(phi, [0], [5])
    chain = [(i, i + 1) for i in range(5)]
    assert sorted((i, k) for i, k, _ in edges) == chain
    # one widest path suffices: the chain, carrying its bottleneck min φ (≈ .94 of the unit) on every edge
    carried = min(float(phi[i, k]) for i, k in chain)
    assert 0.9 < carried < 0.97 and fraction == pytest.approx(carried)
    assert all(flow == pytest.approx(carried) for _, _, flow in edges)
    all_edges, everything = backbone(phi, [0], [5], coverage=1.0)
    assert everything == pytest.approx(1.0, abs=1e-12) and len(all_edges) == int((phi > 0).sum())


# ---------------------------------------------------------------- baselines


def test_baselines_known_answers():
    W = hand_W()
    assert torch.allclose(one_hop(W, [5]), torch.tensor([0, 0.1, 0.2, 0.5, 0, 0], dtype=F64))
    assert torch.allclose(max_received(W), torch.tensor([0.5, 0.5, 0.6, 0.5, 0, 0], dtype=F64))
    assert torch.equal(recency(4), torch.tensor([0.0, 1, 2, 3], dtype=F64))
    # rollout, two layers on two tokens: Â_1 = ½A_1 + ½I = [[1, 0], [.3, .7]], Â_2 = [[1, 0], [.1, .9]]
    # R = Â_2 Â_1 = [[1, 0], [.1 + .9·.3, .9·.7]] = [[1, 0], [.37, .63]]; query 0's all-zero row → [1, 0]
    attn = torch.tensor([[[[0.0, 0], [0.6, 0.4]]], [[[1.0, 0], [0.2, 0.8]]]], dtype=F64)
    assert torch.allclose(rollout(attn, [1]), torch.tensor([0.37, 0.63], dtype=F64))
    assert torch.allclose(rollout(attn, [0, 1]), torch.tensor([1.37, 0.63], dtype=F64))
    # three tokens, two heads averaged, order matters: layer 0 first
    a0 = torch.tensor([[1.0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=F64)   # query 2 reads 1 in layer 0
    a1 = torch.tensor([[1.0, 0, 0], [0, 1, 0], [0, 1, 0]], dtype=F64)   # query 2 reads 1 in layer 1
    attn = torch.stack([torch.stack([a0, a0]), torch.stack([a1, a1])])
    # Â_0 = [[1,0,0],[.5,.5,0],[0,.5,.5]], Â_1 = [[1,0,0],[0,1,0],[0,.5,.5]]
    # (Â_1 Â_0)[2] = .5·[.5,.5,0] + .5·[0,.5,.5] = [.25, .5, .25]; (Â_0 Â_1)[2] would be [0, .75, .25]
    assert torch.allclose(rollout(attn, [2]), torch.tensor([0.25, 0.5, 0.25], dtype=F64))
    assert torch.allclose(rollout(attn, [2], layers=[1]), torch.tensor([0, 0.5, 0.5], dtype=F64))
    assert middle_layers(4) == [1, 2] and middle_layers(1) == [0]


def test_backbone_paths_start_at_the_super_source_within_each_question_tokens_injection():
    # Q = {0, 1}, each injected ½; 0 sends its ½ to 1, 1 sends 1 to the answer 2. Paths S → 1 → 2 can carry
    # only 1's own ½: the other ½ must be routed S → 0 → 1 → 2, so the edge 0 → 1 is in the full backbone
    phi = torch.zeros(3, 3, dtype=F64)
    phi[0, 1], phi[1, 2] = 0.5, 1.0
    edges, fraction = backbone(phi, [0, 1], [2], coverage=1.0)
    assert fraction == pytest.approx(1.0)
    assert sorted(edges) == [(0, 1, 0.5), (1, 2, 1.0)]
    assert backbone(phi, [0, 1], [2], coverage=0.5) == ([(1, 2, 0.5)], 0.5)


def test_baselines_take_a_batch_with_answer_masks():
    rng = np.random.default_rng(5)
    attn = torch.stack([random_attention(rng, 2, 2, 9) for _ in range(3)])
    answer = torch.zeros(3, 9, dtype=torch.bool)
    answer[0, 7], answer[1, 5:7], answer[2, 8] = True, True, True
    W = edge_weights(attn, [1])
    assert torch.allclose(one_hop(W, answer), torch.stack([one_hop(W[b], answer[b]) for b in range(3)]))
    assert torch.allclose(rollout(attn, answer), torch.stack([rollout(attn[b], answer[b]) for b in range(3)]))
    assert torch.allclose(max_received(W), torch.stack([max_received(W[b]) for b in range(3)]))
