"""LimiX tokens — torch only, no Dagster.

Preprocessing (released code, spec "Tokenization" 1–3), per task of a batch x (B, R, D) whose
first n_context rows are context rows: non-finite cells are marked missing and mean-imputed
from the context rows; every column is z-scored with context statistics only (queries never
change them) and clipped to ±100; columns constant on the context are zeroed and not counted;
values are rescaled by sqrt(D / D_valid).

Scalar embeddings, each mapping z-scored scalars (...,) to tokens (..., d):
- `AffineEmbedding`  e(x) = x·w + b (TabPFN-v2's tokens; Prop. 3.1: rank ≤ 2 per column);
- `MLPEmbedding`     Linear(1, h)–GELU–Linear(h, d);
- `PeriodicEmbedding` [sin 2πcx, cos 2πcx] over K/2 learned frequencies c → Linear(K, d);
- `PLEEmbedding`     piecewise-linear encoding over K fixed bins of [−3, 3] → Linear(K, d);
- `RaBEL`            as released: K fixed RBF centres linspace(0, 10, K), σ, over the mantissa of
  the value, gated through an MLP of frozen sign / exponent-sign / exponent-digit embeddings
  (φ·sigmoid(γ) + tanh(β)), LayerNorm(K), Linear(K, d).

`TokenEncoder` fuses the embeddings of each feature pair into one token (MLP, LayerNorm), puts
a learned mask embedding in place of a missing cell, adds a column-group ID ("subortho": fresh
random orthogonal vectors through a learned Linear, per forward in training, from a fixed seed in
eval; or "learned": an nn.Embedding; or "none") and appends the target token: the context
label's embedding, or a learned y-mask embedding for query rows. Output (B, R, G + 1, d).
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

EXPONENT_CLAMP = 9
CLIP = 100.0
MAX_CLASSES = 10
EMBEDDINGS = ("linear", "mlp", "periodic", "ple", "rabel")


def preprocess(x: torch.Tensor, n_context: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """x (B, R, D) raw (NaN / ±inf allowed) → (z (B, R, D) finite, missing (B, R, D) bool,
    valid (B, D) bool: the column varies on the context). Statistics of context rows only."""
    x = x.to(torch.float32)
    missing = ~torch.isfinite(x)
    ctx = x[:, :n_context]
    ok = ~missing[:, :n_context]
    count = ok.sum(1).clamp(min=1)
    zero = torch.zeros_like(ctx)
    mean = torch.where(ok, ctx, zero).sum(1) / count
    var = torch.where(ok, (ctx - mean[:, None]) ** 2, zero).sum(1) / count
    std = var.sqrt()
    valid = (std > 1e-8) & (ok.sum(1) >= 2)
    filled = torch.where(missing, mean[:, None].expand_as(x), x)
    z = (filled - mean[:, None]) / torch.where(valid, std, torch.ones_like(std))[:, None]
    z = torch.where(valid[:, None], z.clamp(-CLIP, CLIP), torch.zeros_like(z))
    used = valid.sum(1, keepdim=True).clamp(min=1).to(z.dtype)
    z = z * torch.sqrt(x.shape[-1] / used)[:, None]
    return z, missing, valid


def mantissa_exponent(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """x → (sign s ∈ {0, 1} = [x < 0], exponent e ∈ [−9, 9] integer, mantissa m) with
    x = (−1)^s · m · 10^e; m ∈ [1, 10) unless e is clamped, m = 0 for x = 0."""
    a = x.abs().to(torch.float64)
    e = torch.floor(torch.log10(torch.where(a > 0, a, torch.ones_like(a))))
    e = e.clamp(-EXPONENT_CLAMP, EXPONENT_CLAMP)
    m = a / torch.pow(10.0, e)
    up = (m >= 10) & (e < EXPONENT_CLAMP)          # floor(log10) rounding at powers of ten
    e, m = torch.where(up, e + 1, e), torch.where(up, m / 10, m)
    down = (m < 1) & (a > 0) & (e > -EXPONENT_CLAMP)
    e, m = torch.where(down, e - 1, e), torch.where(down, m * 10, m)
    return (x < 0).to(torch.long), e.to(torch.long), m.to(x.dtype)


def compose(sign: torch.Tensor, exponent: torch.Tensor, mantissa: torch.Tensor) -> torch.Tensor:
    """The inverse of `mantissa_exponent`."""
    sign = torch.where(sign.bool(), -1.0, 1.0).to(mantissa.dtype)
    return sign * mantissa * torch.pow(10.0, exponent.to(mantissa.dtype))


class AffineEmbedding(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.proj = nn.Linear(1, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x.unsqueeze(-1))


class MLPEmbedding(nn.Module):
    def __init__(self, d: int, hidden: int = 0):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, hidden or 2 * d), nn.GELU(), nn.Linear(hidden or 2 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.unsqueeze(-1))


class PeriodicEmbedding(nn.Module):
    """Gorishniy et al.'s periodic features: frequencies c ~ N(0, sigma²) learned."""

    def __init__(self, d: int, k: int = 16, sigma: float = 1.0):
        super().__init__()
        self.freq = nn.Parameter(torch.randn(k // 2) * sigma)
        self.proj = nn.Linear(2 * (k // 2), d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        angle = 2 * math.pi * x.unsqueeze(-1) * self.freq
        return self.proj(torch.cat([torch.sin(angle), torch.cos(angle)], -1))


class PLEEmbedding(nn.Module):
    """Piecewise-linear encoding: bin t of K equal bins over [lo, hi] holds
    clamp((x − left_t) / width, 0, 1) (the first bin unbounded below, the last above)."""

    def __init__(self, d: int, k: int = 16, lo: float = -3.0, hi: float = 3.0):
        super().__init__()
        self.register_buffer("left", torch.linspace(lo, hi, k + 1)[:-1])
        self.width = (hi - lo) / k
        self.proj = nn.Linear(k, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = (x.unsqueeze(-1) - self.left) / self.width
        k = t.shape[-1]
        lo = torch.zeros(k, device=x.device, dtype=t.dtype)
        hi = torch.ones(k, device=x.device, dtype=t.dtype)
        lo[0], hi[-1] = -math.inf, math.inf
        return self.proj(torch.maximum(torch.minimum(t, hi), lo))


class RaBEL(nn.Module):
    """RaBEL as released (module docstring): mantissa RBFs φ_k = exp(−(m − c_k)² / 2σ²), gate
    (γ, β) = MLP([E_s(s), E_es(e < 0), E_ed(|e|)]) from frozen embeddings (buffers, drawn once
    at construction), φ̃ = φ ⊙ sigmoid(γ) + tanh(β), LayerNorm(K), Linear(K, d)."""

    def __init__(self, d: int, k: int = 16, sigma: float = 0.5, gate_dim: int = 16, gate_hidden: int = 64):
        super().__init__()
        self.k, self.sigma = k, sigma
        self.register_buffer("centres", torch.linspace(0.0, 10.0, k))
        self.register_buffer("sign_table", torch.randn(2, gate_dim))
        self.register_buffer("exp_sign_table", torch.randn(2, gate_dim))
        self.register_buffer("exp_digit_table", torch.randn(EXPONENT_CLAMP + 1, gate_dim))
        self.gate = nn.Sequential(nn.Linear(3 * gate_dim, gate_hidden), nn.GELU(), nn.Linear(gate_hidden, 2 * k))
        self.norm = nn.LayerNorm(k)
        self.proj = nn.Linear(k, d)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The gated, normalised RBF features (..., K) before the projection."""
        s, e, m = mantissa_exponent(x)
        phi = torch.exp(-((m.unsqueeze(-1) - self.centres) ** 2) / (2 * self.sigma ** 2))
        code = torch.cat([self.sign_table[s], self.exp_sign_table[(e < 0).long()], self.exp_digit_table[e.abs()]], -1)
        gamma, beta = self.gate(code).chunk(2, dim=-1)
        return self.norm(phi * torch.sigmoid(gamma) + torch.tanh(beta))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(self.features(x))


def scalar_embedding(kind: str, d: int, k: int = 16, sigma: float = 0.5) -> nn.Module:
    if kind == "linear":
        return AffineEmbedding(d)
    if kind == "mlp":
        return MLPEmbedding(d)
    if kind == "periodic":
        return PeriodicEmbedding(d, k)
    if kind == "ple":
        return PLEEmbedding(d, k)
    if kind == "rabel":
        return RaBEL(d, k, sigma)
    raise ValueError(f"unknown embedding {kind!r}; known: {EMBEDDINGS}")


def orthogonal_ids(groups: int, d_id: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """(groups, d_id) rows orthonormal when groups ≤ d_id (random unit rows otherwise)."""
    g = torch.randn(max(groups, d_id), d_id, generator=generator)
    if groups <= d_id:
        q, _ = torch.linalg.qr(g[:d_id])
        return q[:groups]
    return F.normalize(g[:groups], dim=-1)


class TokenEncoder(nn.Module):
    """x (B, R, D) raw, y_context (B, n_context) int labels → tokens (B, R, G + 1, d),
    G = ceil(D / features_per_group); module docstring."""

    def __init__(self, d: int, embedding: str = "rabel", k: int = 16, sigma: float = 0.5,
                 features_per_group: int = 2, feature_ids: str = "subortho", max_groups: int = 64,
                 eval_id_seed: int = 0):
        super().__init__()
        if feature_ids not in ("subortho", "learned", "none"):
            raise ValueError(f"feature_ids must be subortho, learned or none, got {feature_ids!r}")
        self.d, self.group, self.feature_ids, self.eval_id_seed = d, features_per_group, feature_ids, eval_id_seed
        self.cell = scalar_embedding(embedding, d, k, sigma)
        self.mask_embedding = nn.Parameter(torch.randn(d) * 0.02)
        self.fuse = nn.Sequential(nn.Linear(features_per_group * d, d), nn.LayerNorm(d), nn.ReLU(),
                                  nn.Linear(d, d), nn.LayerNorm(d))
        if feature_ids == "subortho":
            self.id_proj = nn.Linear(max(1, d // 4), d)
        elif feature_ids == "learned":
            self.id_table = nn.Embedding(max_groups, d)
        self.label = nn.Embedding(MAX_CLASSES, d)
        self.y_mask = nn.Parameter(torch.randn(d) * 0.02)

    def group_ids(self, groups: int, device) -> torch.Tensor:
        """(groups, d) column-group vectors added to every cell token of group j."""
        if self.feature_ids == "none":
            return torch.zeros(groups, self.d, device=device)
        if self.feature_ids == "learned":
            return self.id_table(torch.arange(groups, device=device))
        gen = None
        if not self.training:
            gen = torch.Generator().manual_seed(self.eval_id_seed)
        return self.id_proj(orthogonal_ids(groups, self.id_proj.in_features, gen).to(device))

    def cells(self, x: torch.Tensor, n_context: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-cell embeddings (B, R, D, d) with the mask embedding at missing cells, and valid (B, D)."""
        z, missing, valid = preprocess(x, n_context)
        e = self.cell(z)
        e = torch.where(missing.unsqueeze(-1), self.mask_embedding.expand_as(e), e)
        return e, valid

    def forward(self, x: torch.Tensor, y_context: torch.Tensor, n_context: int) -> torch.Tensor:
        b, r, dcols = x.shape
        pad = (-dcols) % self.group
        if pad:
            x = torch.cat([x, torch.zeros(b, r, pad, dtype=x.dtype, device=x.device)], -1)
        e, _ = self.cells(x, n_context)
        groups = e.shape[2] // self.group
        tokens = self.fuse(e.reshape(b, r, groups, self.group * self.d))
        tokens = tokens + self.group_ids(groups, x.device)
        y = torch.cat([self.label(y_context.long()),
                       self.y_mask.expand(b, r - n_context, self.d)], 1)
        return torch.cat([tokens, y.unsqueeze(2)], 2)
