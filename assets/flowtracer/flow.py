"""FlowTracer's attention-induced information flow — torch (float64) and numpy only, no Dagster.

Nodes are the tokens 0..T−1 of one sequence; attn[..., l, head, q, k] is the attention of query q on
key k (causal: 0 for k > q). Q = question positions, A = answer positions (every a ∈ A after every q ∈ Q).

    W_ik   = mean_{l ∈ layers, head} attn[l, head, k, i]       i < k; W_ii = 0       edge i → k (k reads i)
    h(a)   = 1                                                  a ∈ A                 (absorbing)
    h(i)   = Σ_{k>i} W_ik h(k)                                  i ∉ A                 ((I − W_{·∉A}) h = 1_A)
    W′_ik  = W_ik h(k) / h(i)                                   i ∉ A, h(i) > 0; else 0
    Σ_k W′_ik = 1                                               i ∉ A, h(i) > 0       (Theorem 3.1)
    s(q)   = 1/|Q₊|,  Q₊ = {q ∈ Q : h(q) > 0}                   super-source injection
    f(k)   = s(k) + Σ_{i<k} f(i) W′_ik                                                ((I − W′)ᵀ f = s)
    φ(i→k) = f(i) W′_ik
    τ(k)   = f(k) + Σ_{j>k} φ(k→j)                              (= 2 f(k) off A, f(k) on A)
    Σ_{a∈A} Σ_i φ(i→a) = 1                                      every injected unit is absorbed at A

W is not out-degree normalised (softmax normalises each query, i.e. each column of W); conservation
comes only from the h-transform. Nodes with h = 0 (dead ends: no path to A, or after A) get f = τ = 0.
The backbone is a greedy widest-path decomposition of φ (see `backbone`).

Baselines on the same conventions: one_hop (attention the answer pays to i), rollout (Abnar & Zuidema
2020), recency (position), max_received (max attention i receives from any query).

Every function accepts one sequence (W (T, T), positions as index lists) or a batch (W (B, T, T),
positions as bool masks (B, T)); trace_flow / trace_flow_batch are the two pipelines.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

F64 = torch.float64
CAUSAL_TOL = 1e-6      # attention mass allowed on keys after the query
ROW_TOL = 1e-4         # |Σ_k attn[q, k] − 1| allowed for an unmasked query
ZERO_ROW = 1e-6        # a query row summing to at most this is a masked (all-zero) row


# ---------------------------------------------------------------- validation helpers


def _positions_mask(positions, T: int, batch_shape: tuple, name: str, device) -> torch.Tensor:
    """Index list (applied to every sequence) or bool mask (..., T) → bool mask (*batch_shape, T).
    Raises on empty sets, out-of-range indices and non-integer positions."""
    if isinstance(positions, torch.Tensor) and positions.dtype == torch.bool:
        mask = positions.to(device)
    else:
        array = np.asarray(positions.detach().cpu() if isinstance(positions, torch.Tensor) else positions)
        if array.dtype == bool:
            mask = torch.as_tensor(array, device=device)
        elif array.size == 0:
            raise ValueError(f"empty {name} set")
        elif not np.issubdtype(array.dtype, np.integer):
            raise ValueError(f"{name} positions must be integers or a bool mask, got dtype {array.dtype}")
        else:
            array = array.reshape(-1)
            bad = array[(array < 0) | (array >= T)]
            if bad.size:
                raise ValueError(f"{name} position {int(bad[0])} out of range for T={T}")
            mask = torch.zeros(T, dtype=torch.bool, device=device)
            mask[torch.as_tensor(array, device=device)] = True
    if mask.shape[-1] != T:
        raise ValueError(f"{name} mask has length {mask.shape[-1]}, expected T={T}")
    try:
        mask = mask.expand(*batch_shape, T)
    except RuntimeError as error:
        raise ValueError(f"{name} mask of shape {tuple(mask.shape)} does not fit batch {batch_shape}") from error
    if not bool(mask.any(dim=-1).all()):
        raise ValueError(f"empty {name} set")
    return mask


def _check_order(question: torch.Tensor, answer: torch.Tensor) -> None:
    """Every answer position must come after every question position (per sequence)."""
    T = question.shape[-1]
    index = torch.arange(T, device=question.device)
    last_q = torch.where(question, index, -1).amax(dim=-1)
    first_a = torch.where(answer, index, T).amin(dim=-1)
    bad = first_a <= last_q
    if bool(bad.any()):
        where = int(bad.reshape(-1).nonzero()[0])
        raise ValueError(f"answer before question: answer position {int(first_a.reshape(-1)[where])} is not "
                         f"after question position {int(last_q.reshape(-1)[where])}")


def _check_edges(W) -> torch.Tensor:
    """W (..., T, T) float64, non-negative, strictly upper triangular."""
    W = torch.as_tensor(W).to(F64)
    if W.ndim < 2 or W.shape[-1] != W.shape[-2]:
        raise ValueError(f"W must be (..., T, T), got shape {tuple(W.shape)}")
    if W.numel() and not bool(W.amin() >= 0):                           # amin propagates NaN
        raise ValueError("W has negative or NaN entries")
    if bool(torch.tril(W).any()):
        raise ValueError("W must be strictly upper triangular (edges i → k with i < k only)")
    return W


def _check_potential(h, W: torch.Tensor, name: str = "h") -> torch.Tensor:
    h = torch.as_tensor(h, device=W.device).to(F64)
    if h.shape != W.shape[:-1]:
        raise ValueError(f"{name} must have shape {tuple(W.shape[:-1])}, got {tuple(h.shape)}")
    if bool(torch.isnan(h).any()):
        raise ValueError(f"{name} has NaN entries")
    return h


def _layer_index(layers, n_layers: int, device) -> torch.Tensor:
    layers = list(range(n_layers)) if layers is None else [int(l) for l in layers]
    if not layers:
        raise ValueError("no layers given")
    bad = [l for l in layers if not 0 <= l < n_layers]
    if bad:
        raise ValueError(f"layer index {bad[0]} out of range for {n_layers} layers")
    return torch.tensor(layers, device=device)


def _later_mass(maps: torch.Tensor) -> torch.Tensor:
    """(..., T, T) query × key → (..., T): each query's mass on keys after it."""
    T = maps.shape[-1]
    return maps.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=maps.device).triu(1), 0).sum(dim=-1)


def _check_attention(attn, layers, key_mask=None) -> torch.Tensor:
    """Validates attention probabilities and returns the selected layers (..., L', H, T, T).

    Checks, on the selected layers: shape (L, H, T, T) or (B, L, H, T, T) with square maps; no NaN or negative
    entries; and, on query rows that key_mask marks real, causal (mass on k > q ≤ 1e-6 per query and head)
    and each row sums to 1 ± 1e-4 or is all zero (a masked query)."""
    attn = torch.as_tensor(attn)
    if attn.ndim not in (4, 5):
        raise ValueError(f"attention must be (L, H, T, T) or (B, L, H, T, T), got shape {tuple(attn.shape)}")
    if attn.shape[-1] != attn.shape[-2]:
        raise ValueError(f"attention maps must be square T×T, got {tuple(attn.shape[-2:])}")
    if not attn.is_floating_point():
        attn = attn.to(F64)
    elif attn.dtype in (torch.float16, torch.bfloat16):
        attn = attn.float()
    index = _layer_index(layers, attn.shape[-4], attn.device)
    first, n = int(index[0]), len(index)
    consecutive = bool((index == torch.arange(first, first + n, device=attn.device)).all())
    selected = attn.narrow(-4, first, n) if consecutive else attn.index_select(-4, index)
    if not bool(selected.amin() >= 0):                                   # amin propagates NaN
        raise ValueError("attention has NaN entries" if bool(torch.isnan(selected).any())
                         else "attention has negative entries")
    real = None if key_mask is None else key_mask[:, None, None, :]
    # entries are ≥ 0, so the mass of the head-and-layer sum on k > q bounds every head's: the exact
    # per-head check runs only when this cheap one fails
    if bool((_later_mass(selected.sum(dim=(-4, -3))) > CAUSAL_TOL).any()):
        non_causal = _later_mass(selected)                                # (..., L', H, T)
        bad_causal = non_causal > CAUSAL_TOL
        if real is not None:
            bad_causal = bad_causal & real
        if bool(bad_causal.any()):
            q = int(bad_causal.nonzero()[0, -1])
            raise ValueError(f"non-causal attention: query {q} puts mass {float(non_causal[bad_causal][0]):.3g} "
                             f"on later keys")
    row_sum = selected.sum(dim=-1)
    bad_row = ((row_sum - 1).abs() > ROW_TOL) & (row_sum > ZERO_ROW)
    if real is not None:
        bad_row = bad_row & real
    if bool(bad_row.any()):
        q = int(bad_row.nonzero()[0, -1])
        raise ValueError(f"attention rows must sum to 1 (or 0 for a masked query): query {q} sums to "
                         f"{float(row_sum[bad_row][0]):.6g}")
    return selected


# ---------------------------------------------------------------- the DAG


def edge_weights(attn, layers, drop_sink_columns: Sequence[int] = (), *, key_mask=None) -> torch.Tensor:
    """W (T, T) or (B, T, T) float64 from attention attn (L, H, T, T) or (B, L, H, T, T).

    W[..., i, k] = mean over heads and `layers` of attn[..., l, head, k, i] (query k on key i), i.e. the
    transpose, with the diagonal removed: W is strictly upper triangular (edge i → k only for i < k).
    drop_sink_columns: key positions (e.g. <bos>) whose edges are dropped (rows W[i, :] = 0; no
    renormalisation). key_mask (B, T) bool (batched input only): False = padding; padded query rows are
    exempt from the causal and row-sum checks (not from NaN / negative) and padded tokens lose all their edges.
    Raises ValueError on invalid attention or layers (see _check_attention)."""
    if key_mask is not None:
        key_mask = torch.as_tensor(key_mask, device=torch.as_tensor(attn).device).bool()
        attn_shape = torch.as_tensor(attn).shape
        if torch.as_tensor(attn).ndim != 5 or key_mask.shape != (attn_shape[0], attn_shape[-1]):
            raise ValueError(f"key_mask must be (B, T) for attention (B, L, H, T, T), got {tuple(key_mask.shape)} "
                             f"for {tuple(attn_shape)}")
    selected = _check_attention(attn, layers, key_mask)
    T = selected.shape[-1]
    # summed in the input's precision (float32: relative error ~1e-7, the precision of the probabilities
    # themselves; 3× cheaper than converting the whole stack), then float64
    W = selected.sum(dim=(-4, -3)).to(F64) / (selected.shape[-4] * selected.shape[-3])
    W = W.transpose(-1, -2).triu(1)
    if key_mask is not None:
        W = W * (key_mask[:, :, None] & key_mask[:, None, :])
    sinks = [int(s) for s in drop_sink_columns]
    if sinks:
        bad = [s for s in sinks if not 0 <= s < T]
        if bad:
            raise ValueError(f"sink column {bad[0]} out of range for T={T}")
        W[..., sinks, :] = 0
    return W.contiguous()


# ---------------------------------------------------------------- potential, reweighting, flow
# Each public function validates its inputs and calls an unchecked core (W float64, bool masks); the
# pipelines validate once and call the cores.


def _potential(W: torch.Tensor, answer: torch.Tensor) -> torch.Tensor:
    M = W.masked_fill(answer[..., :, None], 0)
    rhs = answer.to(F64)[..., None]
    # unitriangular: the solver reads only the strict upper part of −M and takes the diagonal as 1
    return torch.linalg.solve_triangular(-M, rhs, upper=True, unitriangular=True)[..., 0].clamp_min(0)


def _log_potential(W: torch.Tensor, answer: torch.Tensor) -> torch.Tensor:
    log_w = W.log()
    log_h = torch.where(answer, 0.0, float("-inf")).to(F64)
    for i in range(W.shape[-1] - 2, -1, -1):
        reached = torch.logsumexp(log_w[..., i, i + 1:] + log_h[..., i + 1:], dim=-1)
        log_h[..., i] = torch.where(answer[..., i], 0.0, reached)
    return log_h


def _reweight(W: torch.Tensor, h: torch.Tensor | None, answer: torch.Tensor,
              log_h: torch.Tensor | None) -> torch.Tensor:
    if log_h is not None:
        live = (~answer) & (log_h > float("-inf"))
        denominator = torch.where(live, log_h, 0.0)
        Wp = (W.log() + log_h[..., None, :] - denominator[..., :, None]).exp()
    else:
        live = (~answer) & (h > 0)
        Wp = W * h[..., None, :] / torch.where(live, h, 1.0)[..., :, None]
    return Wp.masked_fill(~live[..., :, None], 0)


def _node_flow(Wp: torch.Tensor, h: torch.Tensor, question: torch.Tensor) -> torch.Tensor:
    source = question & (h > 0)
    n_source = source.sum(dim=-1, keepdim=True)
    if bool((n_source == 0).any()):
        raise ValueError("no question token reaches the answer (h = 0 on every question position)")
    injection = source.to(F64) / n_source
    # f = s + W′ᵀ f  ⇔  (I − W′ᵀ) f = s, lower triangular with unit diagonal
    return torch.linalg.solve_triangular(-Wp.transpose(-1, -2), injection[..., None], upper=False,
                                         unitriangular=True)[..., 0]


def _conservation_error(Wp: torch.Tensor, h: torch.Tensor, answer: torch.Tensor) -> torch.Tensor:
    live = (~answer) & (h > 0)
    return torch.where(live, (Wp.sum(dim=-1) - 1).abs(), 0.0).amax(dim=-1)


def potential(W, answer, log_space: bool = False) -> torch.Tensor:
    """h (..., T) float64: h = 1 on answer nodes, h(i) = Σ_{k>i} W_ik h(k) elsewhere.

    W (..., T, T) strictly upper triangular; answer: index list or bool mask (..., T). Direct: one
    triangular solve (I − M) h = 1_A with M = W with the answer rows zeroed. log_space=True computes
    log h by logsumexp (`log_potential`) and returns exp(log h): the same h where float64 can hold it."""
    if log_space:
        return log_potential(W, answer).exp()
    W = _check_edges(W)
    return _potential(W, _positions_mask(answer, W.shape[-1], W.shape[:-2], "answer", W.device))


def log_potential(W, answer) -> torch.Tensor:
    """log h (..., T) float64 (−inf where h = 0), right to left:
    log h(i) = logsumexp_{k>i} (log W_ik + log h(k)) for i ∉ A, log h(a) = 0. One vector op per position."""
    W = _check_edges(W)
    return _log_potential(W, _positions_mask(answer, W.shape[-1], W.shape[:-2], "answer", W.device))


def reweight(W, h, answer, *, log_h=None) -> torch.Tensor:
    """W′ (..., T, T) float64: W′_ik = W_ik h(k)/h(i) for i ∉ A with h(i) > 0, else 0 (answer nodes absorb).

    Theorem 3.1: Σ_k W′_ik = 1 on those rows. With log_h (from log_potential) the ratio is computed as
    exp(log W_ik + log h(k) − log h(i)), valid where h itself underflows; h is then ignored (may be None)."""
    W = _check_edges(W)
    answer = _positions_mask(answer, W.shape[-1], W.shape[:-2], "answer", W.device)
    if log_h is not None:
        return _reweight(W, None, answer, _check_potential(log_h, W, "log_h"))
    h = _check_potential(h, W)
    if bool((h < 0).any()):
        raise ValueError("h has negative entries")
    return _reweight(W, h, answer, None)


def forward_flow(W_prime, h, question) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Flow from a super-source injecting 1/|Q₊| into each question token with h > 0.

    W_prime (..., T, T) from `reweight`; h (..., T) (only its support h > 0 is used); question: index list
    or bool mask (..., T). Returns f (..., T) node flow, φ (..., T, T) edge flow φ[i, k] = f(i) W′_ik,
    τ (..., T) throughput τ(k) = f(k) + Σ_j φ(k→j). Raises ValueError if no question token has h > 0."""
    Wp = _check_edges(W_prime)
    question = _positions_mask(question, Wp.shape[-1], Wp.shape[:-2], "question", Wp.device)
    f = _node_flow(Wp, _check_potential(h, Wp), question)
    phi = f[..., :, None] * Wp
    return f, phi, f + phi.sum(dim=-1)


def conservation_error(W_prime, h, answer) -> torch.Tensor:
    """max over non-answer nodes with h > 0 of |Σ_k W′_ik − 1| (0 when there is none); shape (...)."""
    Wp = _check_edges(W_prime)
    answer = _positions_mask(answer, Wp.shape[-1], Wp.shape[:-2], "answer", Wp.device)
    return _conservation_error(Wp, _check_potential(h, Wp), answer)


def absorbed_mass(phi, answer) -> torch.Tensor:
    """Σ_{a∈A} Σ_i φ(i→a): the flow entering the answer nodes; shape (...)."""
    phi = _check_edges(phi)
    answer = _positions_mask(answer, phi.shape[-1], phi.shape[:-2], "answer", phi.device)
    return (phi.sum(dim=-2) * answer).sum(dim=-1)


# ---------------------------------------------------------------- backbone


def backbone(phi, question, answer, coverage: float = 0.8) -> tuple[list[tuple[int, int, float]], float]:
    """Greedy widest-path decomposition of the edge flow φ (T, T) of one sequence.

    A super-source S feeds each question node q its injection s(q) = Σ_j φ(q→j) − Σ_i φ(i→q). Repeatedly
    take the widest (max-bottleneck) path S → q → … → a ∈ A in the residual flow (one DP in position order),
    subtract its bottleneck from its edges and from s(q), until the paths carry ≥ coverage of the flow
    entering A. Returns (edges, fraction): edges = [(i, k, flow)] with flow = the part of φ(i→k) carried
    by the chosen paths, sorted by decreasing flow (S → q edges not listed); fraction = carried / total
    flow into A (≥ coverage unless the residual runs out)."""
    phi = torch.as_tensor(phi).to(F64)
    if phi.ndim != 2 or phi.shape[0] != phi.shape[1]:
        raise ValueError(f"backbone takes one sequence's φ (T, T), got shape {tuple(phi.shape)}")
    if not 0 < coverage <= 1:
        raise ValueError(f"coverage must be in (0, 1], got {coverage}")
    T = phi.shape[0]
    question_mask = _positions_mask(question, T, (), "question", phi.device)
    answer_mask = _positions_mask(answer, T, (), "answer", phi.device)
    _check_order(question_mask, answer_mask)
    residual = phi.cpu().numpy().copy()
    is_answer = answer_mask.cpu().numpy()
    supply = np.where(question_mask.cpu().numpy(), residual.sum(1) - residual.sum(0), 0.0).clip(min=0)
    total = float(residual[:, is_answer].sum())
    if total <= 0:
        raise ValueError("no flow enters the answer region")
    carried, carried_on = 0.0, {}
    while carried < coverage * total * (1 - 1e-12):
        width, parent = supply.copy(), np.full(T, -1)
        for k in range(1, T):
            through = np.minimum(width[:k], residual[:k, k])
            best = int(through.argmax())
            if through[best] > width[k]:
                width[k], parent[k] = through[best], best
        end = int(np.flatnonzero(is_answer)[width[is_answer].argmax()])
        bottleneck = float(width[end])
        if bottleneck <= 1e-15 * total:
            break
        node = end
        while parent[node] >= 0:
            edge = (int(parent[node]), node)
            residual[edge] -= bottleneck
            carried_on[edge] = carried_on.get(edge, 0.0) + bottleneck
            node = edge[0]
        supply[node] -= bottleneck
        carried += bottleneck
    edges = sorted(((i, k, flow) for (i, k), flow in carried_on.items()), key=lambda e: (-e[2], e[0], e[1]))
    return edges, carried / total


# ---------------------------------------------------------------- pipelines


@dataclass(frozen=True)
class Flow:
    """trace_flow's result for one sequence of T tokens (tensors float64)."""

    W: torch.Tensor                    # (T, T) edge capacities, W[i, k] = attention of k on i
    h: torch.Tensor                    # (T,) answer-conditioned potential
    W_prime: torch.Tensor              # (T, T) reweighted, conserving edges
    f: torch.Tensor                    # (T,) node flow
    phi: torch.Tensor                  # (T, T) edge flow φ(i→k)
    tau: torch.Tensor                  # (T,) throughput
    backbone: list[tuple[int, int, float]]   # (i, k, carried flow), see `backbone`
    backbone_fraction: float           # flow into A carried by the backbone paths
    conservation_error: float          # max_{i ∉ A, h(i) > 0} |Σ_k W′_ik − 1|
    absorbed_mass: float               # Σ_{a∈A} Σ_i φ(i→a) (1 by construction)
    n_dead: int                        # nodes with h = 0 (−inf log h in log space)


def _flow_core(W: torch.Tensor, question: torch.Tensor, answer: torch.Tensor, log_space: bool):
    """Shared by both pipelines, on validated input: (h, W′, support of h as 0/1, f)."""
    if log_space:
        log_h = _log_potential(W, answer)
        support = (log_h > float("-inf")).to(F64)
        Wp = _reweight(W, None, answer, log_h)
        h = log_h.exp()
    else:
        h = _potential(W, answer)
        support = (h > 0).to(F64)
        Wp = _reweight(W, h, answer, None)
    return h, Wp, support, _node_flow(Wp, support, question)


def trace_flow(attn, question, answer, layers, *, log_space: bool = False, drop_sink_columns: Sequence[int] = (),
               coverage: float = 0.8) -> Flow:
    """The whole analysis for one sequence: attn (L, H, T, T), question / answer index lists (or bool
    masks (T,)), layers = layer indices averaged into W. Raises ValueError on invalid input."""
    if torch.as_tensor(attn).ndim != 4:
        raise ValueError(f"trace_flow takes one sequence's attention (L, H, T, T), got shape "
                         f"{tuple(torch.as_tensor(attn).shape)}; use trace_flow_batch for a batch")
    W = edge_weights(attn, layers, drop_sink_columns)
    T = W.shape[-1]
    question = _positions_mask(question, T, (), "question", W.device)
    answer = _positions_mask(answer, T, (), "answer", W.device)
    _check_order(question, answer)
    h, Wp, support, f = _flow_core(W, question, answer, log_space)
    phi = f[:, None] * Wp
    edges, fraction = backbone(phi, question, answer, coverage)
    return Flow(W=W, h=h, W_prime=Wp, f=f, phi=phi, tau=f + phi.sum(dim=-1), backbone=edges,
                backbone_fraction=fraction, conservation_error=float(_conservation_error(Wp, support, answer)),
                absorbed_mass=float(phi[:, answer].sum()), n_dead=int((support == 0).sum()))


@dataclass(frozen=True)
class FlowBatch:
    """trace_flow_batch's result for B padded sequences of length ≤ T (float64; 0 on padding)."""

    W: torch.Tensor                    # (B, T, T) edge capacities (for max_received / one_hop)
    h: torch.Tensor                    # (B, T)
    f: torch.Tensor                    # (B, T)
    tau: torch.Tensor                  # (B, T)
    conservation_error: torch.Tensor   # (B,)
    absorbed_mass: torch.Tensor        # (B,)
    n_dead: torch.Tensor               # (B,) long: real tokens with h = 0


def trace_flow_batch(attn, key_mask, question_masks, answer_masks, layers, *, log_space: bool = False,
                     drop_sink_columns: Sequence[int] = ()) -> FlowBatch:
    """Many sequences at once (no backbone): attn (B, L, H, T, T); key_mask, question_masks, answer_masks
    (B, T) bool (key_mask False = padding, question/answer positions must be real tokens). Equals
    trace_flow on each unpadded sequence. Raises ValueError on invalid input."""
    attn = torch.as_tensor(attn)
    if attn.ndim != 5:
        raise ValueError(f"trace_flow_batch takes attention (B, L, H, T, T), got shape {tuple(attn.shape)}")
    B, T = attn.shape[0], attn.shape[-1]
    masks = []
    for name, mask in (("key", key_mask), ("question", question_masks), ("answer", answer_masks)):
        mask = torch.as_tensor(mask, device=attn.device)
        if mask.shape != (B, T) or mask.dtype != torch.bool:
            raise ValueError(f"{name} mask must be bool (B, T) = {(B, T)}, got {mask.dtype} {tuple(mask.shape)}")
        masks.append(mask)
    key_mask, question, answer = masks
    for name, mask in (("question", question), ("answer", answer)):
        if bool((mask & ~key_mask).any()):
            b, t = (int(x) for x in (mask & ~key_mask).nonzero()[0])
            raise ValueError(f"{name} position {t} of sequence {b} is out of range (padding)")
        if not bool(mask.any(dim=-1).all()):
            raise ValueError(f"empty {name} set in sequence {int((~mask.any(dim=-1)).nonzero()[0])}")
    _check_order(question, answer)
    W = edge_weights(attn, layers, drop_sink_columns, key_mask=key_mask)
    h, Wp, support, f = _flow_core(W, question, answer, log_space)
    inflow = (f[:, None, :] @ Wp)[:, 0, :]                               # Σ_i φ(i→k) without forming φ
    return FlowBatch(W=W, h=h, f=f, tau=f + f * Wp.sum(dim=-1),
                     conservation_error=_conservation_error(Wp, support, answer),
                     absorbed_mass=(inflow * answer).sum(dim=-1), n_dead=((support == 0) & key_mask).sum(dim=-1))


# ---------------------------------------------------------------- baselines


def one_hop(W, answer) -> torch.Tensor:
    """(..., T): Σ_{a∈A} W[i, a], the attention the answer tokens pay to token i."""
    W = _check_edges(W)
    answer = _positions_mask(answer, W.shape[-1], W.shape[:-2], "answer", W.device)
    return (W * answer[..., None, :]).sum(dim=-1)


def rollout(attn, answer, layers=None) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020), (T,) or (B, T) float64.

    Per layer Â_l = 0.5 mean_heads(attn_l) + 0.5 I, rows renormalised; R = Â_{l_n} ⋯ Â_{l_1} over `layers`
    (default all, in the given order); score of key i = Σ_{a∈A} R[a, i] (query × key orientation)."""
    selected = _check_attention(attn, layers).to(F64)
    T = selected.shape[-1]
    eye = torch.eye(T, dtype=F64, device=selected.device)
    answer = _positions_mask(answer, T, selected.shape[:-4], "answer", selected.device)
    R = eye.expand(*selected.shape[:-4], T, T)
    for l in range(selected.shape[-4]):
        A = 0.5 * selected[..., l, :, :, :].mean(dim=-3) + 0.5 * eye
        R = (A / A.sum(dim=-1, keepdim=True)) @ R
    return (R * answer[..., :, None]).sum(dim=-2)


def recency(T: int) -> torch.Tensor:
    """(T,) float64 position index: later tokens score higher."""
    return torch.arange(int(T), dtype=F64)


def max_received(W) -> torch.Tensor:
    """(..., T): max over queries k of W[i, k], the strongest attention token i receives (0 for the last)."""
    return _check_edges(W).amax(dim=-1)


def middle_layers(n_layers: int) -> list[int]:
    """The middle third of the layers (at least one): 4 → [1, 2]; 36 → 12..23."""
    start = n_layers // 3
    return list(range(start, max(start + 1, (2 * n_layers + 2) // 3)))
