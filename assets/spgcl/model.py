"""Encoders, augmentations and losses of SPGCL and its baselines (torch; no Dagster).

All propagation is sparse (Â as a torch sparse COO matrix, never a dense n×n adjacency); the
only n×n object is the similarity matrix inside the contrastive losses, processed in row
chunks (recomputed in the backward pass when n exceeds the chunk) so memory stays bounded
as n grows.

Shapes: x (n, F) float32; edge_index (2, E) int64 directed entries; z (n, D) embeddings.
"""
from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn


# ----------------------------------------------------------------------------- graph ops
def normalized_adjacency(edge_index: torch.Tensor, n: int) -> torch.Tensor:
    """Â = D̃^{-1/2}(A + I)D̃^{-1/2} as a coalesced sparse (n, n) tensor, GCNConv's gcn_norm:
    d̃_j = in-degree of j + 1; entry (j, i) for a message i → j. Works for asymmetric
    (sampled) edge sets too."""
    device = edge_index.device
    loops = torch.arange(n, device=device)
    src = torch.cat([edge_index[0], loops])
    dst = torch.cat([edge_index[1], loops])
    degree = torch.zeros(n, device=device).index_add_(0, dst, torch.ones_like(dst, dtype=torch.float32))
    inv_sqrt = degree.pow(-0.5)
    values = inv_sqrt[src] * inv_sqrt[dst]
    return torch.sparse_coo_tensor(torch.stack([dst, src]), values, (n, n),
                                   check_invariants=False).coalesce()


def inverted_dropout(x: torch.Tensor, p: float) -> torch.Tensor:
    """Dropout as F.dropout (zero each entry with probability p, scale the rest by 1/(1 − p)),
    drawn as uniform < 1 − p: the same distribution, about 2× faster than F.dropout's
    bernoulli_ on CPU (measured at 2000 × 300)."""
    keep = (torch.rand_like(x) >= p).to(x.dtype)
    return x * keep * (1.0 / (1.0 - p))


class GraphStack(nn.Module):
    """Layers [dropout → linear → (propagate) → +bias → activation ↔ norm].

    forward(x, adj) is a GCN (GCNConv: Â X W + b); forward(x, None) runs the SAME weights and
    biases without propagation (the reference's `forward_linear`), i.e. an MLP sharing the
    GCN's parameters. dims lists the output width of each layer.
    """

    def __init__(self, in_dim: int, dims: list[int], activation: str = "prelu",
                 norm: str | None = "layer", dropout: float = 0.0, norm_first: bool = False):
        super().__init__()
        widths = [in_dim, *dims]
        self.linears = nn.ModuleList(nn.Linear(a, b, bias=False) for a, b in zip(widths, widths[1:]))
        self.biases = nn.ParameterList(nn.Parameter(torch.zeros(b)) for b in dims)
        self.acts = nn.ModuleList(nn.PReLU() if activation == "prelu" else nn.ReLU() for _ in dims)
        if norm == "layer":
            self.norms = nn.ModuleList(nn.LayerNorm(b) for b in dims)
        elif norm == "batch":
            self.norms = nn.ModuleList(nn.BatchNorm1d(b) for b in dims)
        else:
            self.norms = nn.ModuleList(nn.Identity() for _ in dims)
        self.dropout = dropout
        self.norm_first = norm_first
        for lin in self.linears:
            nn.init.xavier_uniform_(lin.weight)

    def forward(self, x: torch.Tensor, adj: torch.Tensor | None = None) -> torch.Tensor:
        for lin, bias, act, norm in zip(self.linears, self.biases, self.acts, self.norms):
            if self.training and self.dropout > 0:
                x = inverted_dropout(x, self.dropout)
            x = lin(x)
            if adj is not None:
                x = torch.sparse.mm(adj, x)
            x = x + bias
            x = act(norm(x)) if self.norm_first else norm(act(x))
        return x


def stack_dims(hidden: int, layers: int) -> list[int]:
    """Layer widths: layer 1 → 2·hidden, last → hidden (the reference's layout)."""
    return [2 * hidden] * (layers - 1) + [hidden]


# ----------------------------------------------------------------------------- models
class SPGCLModel(nn.Module):
    """Encoder (PReLU, LayerNorm, dropout) + projection head fc2(ELU(fc1(z)))."""

    def __init__(self, in_dim: int, hidden: int, proj: int, layers: int, dropout: float):
        super().__init__()
        self.encoder = GraphStack(in_dim, stack_dims(hidden, layers), "prelu", "layer", dropout)
        self.fc1 = nn.Linear(hidden, proj)
        self.fc2 = nn.Linear(proj, hidden)

    def embed(self, x: torch.Tensor, adj: torch.Tensor, high_mask: torch.Tensor | None) -> torch.Tensor:
        """EAP: Z = GCN_W(Â, X⊙1_H) + Lin_W(X⊙1_L); high_mask None = propagate every dim."""
        if high_mask is None:
            return self.encoder(x, adj)
        return self.encoder(x * high_mask, adj) + self.encoder(x * (1.0 - high_mask), None)

    def project(self, z: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.fc2(F.elu(self.fc1(z))), dim=1)


class GRACEModel(nn.Module):
    """GRACE: 2-layer encoder (ReLU), projection fc2(ELU(fc1(z))). mlp=True never propagates."""

    def __init__(self, in_dim: int, hidden: int, proj: int, layers: int, mlp: bool = False):
        super().__init__()
        self.encoder = GraphStack(in_dim, stack_dims(hidden, layers), "relu", None, 0.0)
        self.fc1 = nn.Linear(hidden, proj)
        self.fc2 = nn.Linear(proj, hidden)
        self.mlp = mlp

    def embed(self, x: torch.Tensor, adj: torch.Tensor | None) -> torch.Tensor:
        return self.encoder(x, None if self.mlp else adj)

    def project(self, z: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.fc2(F.elu(self.fc1(z))), dim=1)


class DGIModel(nn.Module):
    """DGI: 1-layer GCN (PReLU), sigmoid-mean readout, bilinear discriminator h W s."""

    def __init__(self, in_dim: int, hidden: int):
        super().__init__()
        self.encoder = GraphStack(in_dim, [hidden], "prelu", None, 0.0)
        self.disc_weight = nn.Parameter(torch.empty(hidden, hidden))
        self.disc_bias = nn.Parameter(torch.zeros(1))
        nn.init.xavier_uniform_(self.disc_weight)

    def discriminate(self, h: torch.Tensor, summary: torch.Tensor) -> torch.Tensor:
        """Bilinear scores h_i W s + b, (n,). Written as h (W s): nn.Bilinear's backward is
        orders of magnitude slower on CPU for one shared summary vector."""
        return h @ (self.disc_weight @ summary) + self.disc_bias

    def embed(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        return self.encoder(x, adj)


class BGRLModel(nn.Module):
    """BGRL: online encoder (GCN → BatchNorm → PReLU), predictor Linear-PReLU-Linear, and a
    target encoder updated as an exponential moving average of the online one."""

    def __init__(self, in_dim: int, hidden: int, layers: int, predictor_hidden: int):
        super().__init__()
        self.online = GraphStack(in_dim, stack_dims(hidden, layers), "prelu", "batch", 0.0, norm_first=True)
        self.predictor = nn.Sequential(nn.Linear(hidden, predictor_hidden), nn.PReLU(),
                                       nn.Linear(predictor_hidden, hidden))
        self.target = copy.deepcopy(self.online)
        for p in self.target.parameters():
            p.requires_grad_(False)

    def embed(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        return self.online(x, adj)

    @torch.no_grad()
    def update_target(self, momentum: float) -> None:
        for t, o in zip(self.target.parameters(), self.online.parameters()):
            t.mul_(momentum).add_(o.detach(), alpha=1.0 - momentum)


# ----------------------------------------------------------------------------- augmentations
def drop_edges(edge_index: torch.Tensor, p: float, generator: torch.Generator) -> torch.Tensor:
    """Keep each directed edge entry independently with probability 1 − p."""
    keep = torch.rand(edge_index.shape[1], generator=generator, device=generator.device) >= p
    return edge_index[:, keep]


def mask_feature_columns(x: torch.Tensor, p: float, generator: torch.Generator) -> torch.Tensor:
    """GRACE's feature masking: zero each feature dim (for all nodes) with probability p."""
    keep = (torch.rand(x.shape[1], generator=generator, device=generator.device) >= p).to(x.dtype)
    return x * keep


def mask_high_entries(x: torch.Tensor, p: float, high_mask: torch.Tensor | None,
                      generator: torch.Generator) -> torch.Tensor:
    """SPGCL's single view: element-wise Bernoulli masking (drop prob p) of the H dims only."""
    drop = (torch.rand(x.shape, generator=generator, device=generator.device) < p).to(x.dtype)
    if high_mask is not None:
        drop = drop * high_mask
    return x * (1.0 - drop)


def sample_kept_edges(edge_index: torch.Tensor, keep_prob: torch.Tensor,
                      generator: torch.Generator) -> torch.Tensor:
    """EPS: keep edge entry e with probability keep_prob[e] (bernoulli(P) is the KEEP mask)."""
    keep = torch.rand(edge_index.shape[1], generator=generator, device=generator.device) < keep_prob
    return edge_index[:, keep]


# ----------------------------------------------------------------------------- losses
DEFAULT_CHUNK = 4096


class _ExpSimilaritySums(torch.autograd.Function):
    """Row and column sums of S = exp((a bᵀ − 1)/τ) with a hand-written backward.

    Forward: one fused addmm (scale 1/τ, shift −1/τ) and an in-place exp per row block.
    When the whole n_a × n_b block fits in one chunk it is kept for the backward; otherwise
    each row block is recomputed there (O(chunk · n_b) memory instead of O(n_a · n_b)).

    Backward, with G_ij = (ḡ^row_i + ḡ^col_j) S_ij / τ: ∇a = G b, ∇b = Gᵀ a. In the
    symmetric case (b is a, only row sums used) G + Gᵀ = ((ḡ_i + ḡ_j) S_ij / τ) and
    ∇a = (G + Gᵀ) a — one n×n×D product instead of two (autograd would do both).
    """

    @staticmethod
    def forward(ctx, a, b, tau: float, chunk: int, symmetric: bool):
        n_a = a.shape[0]
        rows = torch.empty(n_a, device=a.device, dtype=a.dtype)
        cols = torch.zeros(b.shape[0], device=a.device, dtype=a.dtype)
        shift = torch.tensor(-1.0 / tau, device=a.device, dtype=a.dtype)
        block = None
        for start in range(0, n_a, chunk):
            block = torch.addmm(shift, a[start:start + chunk], b.T, alpha=1.0 / tau).exp_()
            rows[start:start + chunk] = block.sum(dim=1)
            if not symmetric:
                cols += block.sum(dim=0)
        stored = block if n_a <= chunk else None
        ctx.tau, ctx.chunk, ctx.symmetric, ctx.stored = tau, chunk, symmetric, stored
        ctx.save_for_backward(a, b)
        return rows, cols

    @staticmethod
    def backward(ctx, grad_rows, grad_cols):
        a, b = ctx.saved_tensors
        tau, chunk = ctx.tau, ctx.chunk
        g_rows = grad_rows / tau
        g_cols = g_rows if ctx.symmetric else grad_cols / tau
        grad_a = torch.empty_like(a)
        grad_b = None if ctx.symmetric else torch.zeros_like(b)
        shift = torch.tensor(-1.0 / tau, device=a.device, dtype=a.dtype)
        for start in range(0, a.shape[0], chunk):
            part = a[start:start + chunk]
            block = ctx.stored if ctx.stored is not None else \
                torch.addmm(shift, part, b.T, alpha=1.0 / tau).exp_()
            weights = (g_rows[start:start + chunk, None] + g_cols[None, :]) * block
            grad_a[start:start + chunk] = weights @ b
            if not ctx.symmetric:
                grad_b += weights.T @ part
        ctx.stored = None
        return grad_a, grad_b, None, None, None


def shifted_exp_sums(a: torch.Tensor, b: torch.Tensor, tau: float,
                     chunk: int = DEFAULT_CHUNK) -> tuple[torch.Tensor, torch.Tensor]:
    """Row and column sums of exp((a bᵀ − 1)/τ) for unit-norm rows, shapes (n_a,), (n_b,).

    The shift by 1/τ (the largest possible similarity) keeps every term ≤ 1, so no overflow.
    Rows are processed in blocks of `chunk`; above one block each block is recomputed in the
    backward pass, so peak memory is O(chunk · n_b), not O(n_a · n_b). Passing the same
    tensor as a and b takes the symmetric path (column sums are then not computed and are
    returned as zeros: for b = a they equal the row sums).
    """
    symmetric = a is b
    rows, cols = _ExpSimilaritySums.apply(a, b, float(tau), int(chunk), symmetric)
    return rows, (rows if symmetric else cols)


def neighbour_infonce(h: torch.Tensor, pos_edge_index: torch.Tensor, tau: float,
                      chunk: int = DEFAULT_CHUNK) -> torch.Tensor:
    """SPGCL's loss, mean over nodes of
    L_i = −log[ Σ_{j∈P(i)} e^{h_i·h_j/τ} / Σ_j e^{h_i·h_j/τ} ],  P(i) = {i} ∪ {j : (i, j) ∈ pos}.

    (Σ over all j equals the positives plus every k ∉ P(i), k ≠ i: the spec's denominator.)
    h: (n, D) unit rows; pos_edge_index: (2, E') sampled edges. Positive sums are computed
    sparsely from the edge list, the denominator in row chunks.
    """
    src, dst = pos_edge_index
    self_term = torch.exp(((h * h).sum(dim=1) - 1.0) / tau)
    edge_term = torch.exp(((h[src] * h[dst]).sum(dim=1) - 1.0) / tau)
    positive = self_term.index_add(0, src, edge_term)
    total, _ = shifted_exp_sums(h, h, tau, chunk)
    return (torch.log(total) - torch.log(positive)).mean()


def grace_loss(u: torch.Tensor, v: torch.Tensor, tau: float, positives: bool = True,
               chunk: int = DEFAULT_CHUNK) -> torch.Tensor:
    """GRACE's symmetric InfoNCE between two views (unit rows u, v of shape (n, D)):
    ℓ(u_i) = −log e^{θ(u_i,v_i)/τ} / (Σ_k e^{θ(u_i,v_k)/τ} + Σ_{k≠i} e^{θ(u_i,u_k)/τ}).

    positives=False is the uniformity-only "no positive" loss (ArchitectureMattersGCL,
    loss='uniform'): ℓ(u_i) = log(Σ_{k≠i} e^{θ(u_i,u_k)/τ} + Σ_k e^{θ(u_i,v_k)/τ}).
    The result is ½(mean ℓ(u) + mean ℓ(v)), with the common 1/τ shift dropped from the
    no-positive form (a constant).
    """
    uv_rows, uv_cols = shifted_exp_sums(u, v, tau, chunk)
    uu_rows, _ = shifted_exp_sums(u, u, tau, chunk)
    vv_rows, _ = shifted_exp_sums(v, v, tau, chunk)
    self_u = torch.exp(((u * u).sum(1) - 1.0) / tau)
    self_v = torch.exp(((v * v).sum(1) - 1.0) / tau)
    log_den_u = torch.log(uv_rows + uu_rows - self_u)
    log_den_v = torch.log(uv_cols + vv_rows - self_v)
    if not positives:
        return 0.5 * (log_den_u.mean() + log_den_v.mean())
    pos = ((u * v).sum(1) - 1.0) / tau
    return 0.5 * ((log_den_u - pos).mean() + (log_den_v - pos).mean())


def dgi_loss(model: DGIModel, x: torch.Tensor, adj: torch.Tensor,
             generator: torch.Generator) -> torch.Tensor:
    """DGI: BCE of D(h_i, s) = 1 for the real graph and 0 for row-shuffled features."""
    h = model.encoder(x, adj)
    perm = torch.randperm(x.shape[0], generator=generator, device=generator.device)
    h_fake = model.encoder(x[perm], adj)
    summary = torch.sigmoid(h.mean(dim=0))
    logits = torch.cat([model.discriminate(h, summary), model.discriminate(h_fake, summary)])
    labels = torch.cat([torch.ones(len(h), device=h.device), torch.zeros(len(h), device=h.device)])
    return F.binary_cross_entropy_with_logits(logits, labels)


def bgrl_loss(q: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """2 − 2·mean cosine(prediction, target) (target detached)."""
    return 2.0 - 2.0 * F.cosine_similarity(q, t.detach(), dim=-1).mean()


def bgrl_momentum(step: int, total: int, base: float) -> float:
    """τ_k = 1 − (1 − τ_base)(cos(πk/K) + 1)/2 (BGRL's cosine schedule to 1)."""
    return 1.0 - (1.0 - base) * (math.cos(math.pi * step / max(total, 1)) + 1.0) / 2.0
