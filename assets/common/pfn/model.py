"""The in-context transformer shared by the PFN papers — torch only, no Dagster.

pfn_causal uses one token per row and `sn` blocks; limix uses cell tokens with S/N/F axes.

Input tokens (B, R, C, d): B tasks, R rows — the first `n_context` are context rows, the rest
query rows — and C tokens per row (C = 1 for row tokens; feature tokens + a target token for
cell tokens). A (B, R, d) input is read as C = 1 and returned in the same shape.

A layer is a sequence of steps named by `arch`, over one parameter set:
- s: attention across rows, separately for every token column c. Context rows attend to the
  (valid) context rows, query rows attend to context rows only: a query never sees another
  query and nothing sees a query, so one query's output cannot depend on another's input;
- n: position-wise feed-forward network (GELU);
- f: attention across the C tokens of one row (`feature_mask` marks valid tokens).
Every layer owns one module per letter (s, n and, when `arch` has one, f); `arch` only orders
them, so "snf" and "fsn" build the same state_dict. Residual + LayerNorm after each step
(post-norm) or before it (pre-norm, with a final LayerNorm). There is no positional encoding
over rows: outputs are invariant to permutations of the context rows and equivariant to
permutations of the query rows. Padded context rows (context_mask False) get zero attention.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

STEPS = ("s", "n", "f")


@dataclass(frozen=True)
class PFNConfig:
    """d_model: token width; d_ff: FFN hidden width (0 → 4 · d_model); arch: the order of the
    steps in every layer (letters of "snf", each at most once, "s" required); norm: "pre" or
    "post"; norm_affine: LayerNorm with a learned scale/shift; bias: in attention and FFN."""

    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 4
    d_ff: int = 0
    arch: str = "sn"
    norm: str = "pre"
    norm_affine: bool = True
    bias: bool = True
    dropout: float = 0.0

    def __post_init__(self):
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        arch = self.arch
        if not arch or set(arch) - set(STEPS) or len(set(arch)) != len(arch) or "s" not in arch:
            raise ValueError(f"arch {self.arch!r} must use each of {STEPS} at most once and contain 's'")
        if self.norm not in ("pre", "post"):
            raise ValueError(f"norm must be 'pre' or 'post', got {self.norm!r}")
        if self.n_layers < 1:
            raise ValueError("n_layers must be ≥ 1")

    @property
    def ff(self) -> int:
        return self.d_ff or 4 * self.d_model

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class PFNOutput:
    """hidden: final token states, the input's shape; attentions: per layer {"s": (B, C, H,
    R, n_context), "f": (B, R, H, C, C)} when requested; hidden_states: the input and each
    layer's output (B, R, C, d) when requested."""

    hidden: torch.Tensor
    attentions: list[dict[str, torch.Tensor]] = field(default_factory=list)
    hidden_states: list[torch.Tensor] = field(default_factory=list)


class Attention(nn.Module):
    """Multi-head attention of queries x_q (N, Tq, d) over keys/values x_kv (N, Tk, d);
    key_mask (N, Tk) bool, True = may be attended to."""

    def __init__(self, d_model: int, n_heads: int, bias: bool = True, dropout: float = 0.0):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.q = nn.Linear(d_model, d_model, bias=bias)
        self.kv = nn.Linear(d_model, 2 * d_model, bias=bias)
        self.out = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = dropout

    def forward(self, x_q: torch.Tensor, x_kv: torch.Tensor, key_mask: torch.Tensor | None = None,
                need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        n, tq, d = x_q.shape
        tk = x_kv.shape[1]
        q = self.q(x_q).view(n, tq, self.n_heads, self.d_head).transpose(1, 2)
        k, v = self.kv(x_kv).view(n, tk, 2, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
        allowed = None if key_mask is None else key_mask[:, None, None, :].bool()
        probs = None
        if need_weights:
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(self.d_head)
            if allowed is not None:
                scores = scores.masked_fill(~allowed, float("-inf"))
            probs = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
            mixed = F.dropout(probs, self.dropout, self.training) @ v
        else:
            mixed = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed,
                                                   dropout_p=self.dropout if self.training else 0.0)
        return self.out(mixed.transpose(1, 2).reshape(n, tq, d)), probs


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, bias: bool = True, dropout: float = 0.0):
        super().__init__()
        self.up = nn.Linear(d_model, d_ff, bias=bias)
        self.down = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.down(F.gelu(self.up(x))))


class PFNLayer(nn.Module):
    """One layer: the steps of `config.arch` in order (module docstring)."""

    def __init__(self, config: PFNConfig):
        super().__init__()
        self.config = config
        d = config.d_model
        self.s = Attention(d, config.n_heads, config.bias, config.dropout)
        self.norm_s = nn.LayerNorm(d, elementwise_affine=config.norm_affine)
        self.n = FeedForward(d, config.ff, config.bias, config.dropout)
        self.norm_n = nn.LayerNorm(d, elementwise_affine=config.norm_affine)
        if "f" in config.arch:
            self.f = Attention(d, config.n_heads, config.bias, config.dropout)
            self.norm_f = nn.LayerNorm(d, elementwise_affine=config.norm_affine)

    def _rows(self, h: torch.Tensor, n_context: int, context_mask: torch.Tensor | None, need: bool):
        b, r, c, d = h.shape
        cols = h.permute(0, 2, 1, 3).reshape(b * c, r, d)
        mask = None if context_mask is None else context_mask.repeat_interleave(c, dim=0)
        out, probs = self.s(cols, cols[:, :n_context], mask, need)
        out = out.view(b, c, r, d).permute(0, 2, 1, 3)
        return out, None if probs is None else probs.view(b, c, self.config.n_heads, r, n_context)

    def _features(self, h: torch.Tensor, feature_mask: torch.Tensor | None, need: bool):
        b, r, c, d = h.shape
        cells = h.reshape(b * r, c, d)
        mask = None if feature_mask is None else feature_mask.repeat_interleave(r, dim=0)
        out, probs = self.f(cells, cells, mask, need)
        return out.view(b, r, c, d), None if probs is None else probs.view(b, r, self.config.n_heads, c, c)

    def forward(self, x: torch.Tensor, n_context: int, context_mask: torch.Tensor | None = None,
                feature_mask: torch.Tensor | None = None, need_weights: bool = False
                ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        weights: dict[str, torch.Tensor] = {}
        pre = self.config.norm == "pre"
        for step in self.config.arch:
            norm = getattr(self, f"norm_{step}")
            h = norm(x) if pre else x
            if step == "s":
                out, probs = self._rows(h, n_context, context_mask, need_weights)
            elif step == "f":
                out, probs = self._features(h, feature_mask, need_weights)
            else:
                out, probs = self.n(h), None
            if probs is not None:
                weights[step] = probs
            x = x + out if pre else norm(x + out)
        return x, weights


class InContextTransformer(nn.Module):
    """The shared PFN backbone (module docstring). Deterministic given torch's seed."""

    def __init__(self, config: PFNConfig):
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList(PFNLayer(config) for _ in range(config.n_layers))
        self.final_norm = (nn.LayerNorm(config.d_model, elementwise_affine=config.norm_affine)
                           if config.norm == "pre" else nn.Identity())

    def forward(self, tokens: torch.Tensor, n_context: int, context_mask: torch.Tensor | None = None,
                feature_mask: torch.Tensor | None = None, return_attention: bool = False,
                return_hidden: bool = False) -> PFNOutput:
        """tokens (B, R, C, d) or (B, R, d); n_context: the first n_context rows are context
        (1 ≤ n_context ≤ R); context_mask (B, n_context) bool, False = padding row;
        feature_mask (B, C) bool, False = padding token (f steps only)."""
        squeeze = tokens.dim() == 3
        x = tokens.unsqueeze(2) if squeeze else tokens
        b, r, c, _ = x.shape
        if not 1 <= n_context <= r:
            raise ValueError(f"n_context must be in [1, {r}], got {n_context}")
        if context_mask is not None and tuple(context_mask.shape) != (b, n_context):
            raise ValueError(f"context_mask must be (B, n_context) = {(b, n_context)}, got {tuple(context_mask.shape)}")
        if feature_mask is not None and tuple(feature_mask.shape) != (b, c):
            raise ValueError(f"feature_mask must be (B, C) = {(b, c)}, got {tuple(feature_mask.shape)}")
        attentions, states = [], [x] if return_hidden else []
        for layer in self.layers:
            x, weights = layer(x, n_context, context_mask, feature_mask, return_attention)
            if return_attention:
                attentions.append(weights)
            if return_hidden:
                states.append(x)
        x = self.final_norm(x)
        return PFNOutput(hidden=x.squeeze(2) if squeeze else x, attentions=attentions, hidden_states=states)


def count_parameters(module: nn.Module) -> int:
    return int(sum(p.numel() for p in module.parameters()))
