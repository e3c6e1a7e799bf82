"""A tiny decoder-only transformer, shared by the papers that train small language models
(flowtracer, hir, ts_layers) — torch only, no Dagster.

Pre-LayerNorm blocks (causal multi-head self-attention, GELU MLP). Positions are learned absolute
embeddings (`positional="learned"`, the default) or ALiBi (`positional="alibi"`, Press et al.
2022, "Train Short, Test Long"): no position embedding, and head h adds −m_h · (i − j) to the
score of query position i on key position j, with slopes m_h = 2^(−8(h+1)/H) — a recency bias
(`"learned+alibi"`: both). ALiBi depends only on i − j; flowtracer needs it (its NOTES.md).
What the papers need beyond a plain LM:
- token inputs (`tokens`, with an LM head) or vector inputs (`vectors`, e.g. time-series
  patches, through an input projection; no LM head: the caller adds its own);
- every layer's attention probabilities (B, H, T, S) and hidden states on request;
- `key_mask` (B, S): keys marked False get exactly zero attention (padding, masked tokens);
- `keep`: run only these layer indices, in order (a skipped layer is the identity: its residual
  branches are zero), for layer pruning;
- a KV cache for incremental decoding, equal to the full forward pass.

Shapes: B batch, T new positions, S = cached + T key positions, d = d_model, H heads.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

POSITIONALS = ("learned", "alibi", "learned+alibi")


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """ALiBi slopes m_h = 2^(−8(h+1)/H), h = 0…H−1: (H,), geometric from 2^(−8/H) down to 2^(−8)."""
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / n_heads) for h in range(n_heads)])


@dataclass(frozen=True)
class TinyLMConfig:
    """vocab_size > 0: token model with an LM head (tied to the embedding if tie_embeddings);
    vocab_size == 0: vector model, inputs of size input_dim, outputs the final hidden states."""

    vocab_size: int = 0
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 4
    context: int = 128
    d_ff: int = 0                   # 0 → 4 · d_model
    input_dim: int = 0              # vector models only
    tie_embeddings: bool = True
    dropout: float = 0.0
    positional: str = "learned"     # "learned" absolute embeddings or "alibi" linear biases

    def __post_init__(self):
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if (self.vocab_size > 0) == (self.input_dim > 0):
            raise ValueError("give exactly one of vocab_size (token model) or input_dim (vector model)")
        if self.n_layers < 1 or self.context < 1:
            raise ValueError("n_layers and context must be ≥ 1")
        if self.positional not in POSITIONALS:
            raise ValueError(f"positional must be one of {POSITIONALS}, got {self.positional!r}")

    @property
    def ff(self) -> int:
        return self.d_ff or 4 * self.d_model

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LayerCache:
    """Keys and values of the positions seen so far: (B, H, S, d_head) each; positions (B, S)
    of those keys (what ALiBi's distance needs). key_buffer / value_buffer (B, H, capacity,
    d_head), when the cache was started with a capacity: keys and values are their first S
    positions, and the next positions are written in place instead of concatenated (the same
    numbers; for a cache extended along one path only, as in sampling)."""

    keys: torch.Tensor
    values: torch.Tensor
    positions: torch.Tensor | None = None
    key_buffer: torch.Tensor | None = None
    value_buffer: torch.Tensor | None = None


@dataclass
class TinyLMOutput:
    """logits (B, T, V) for token models, else None; hidden: final hidden states (B, T, d);
    attentions: per *run* layer (B, H, T, S) when requested; hidden_states: the embedding output
    and each run layer's output (B, T, d) when requested; cache: per layer (None when skipped);
    layers: the layer indices that ran, in order."""

    logits: torch.Tensor | None
    hidden: torch.Tensor
    attentions: list[torch.Tensor] = field(default_factory=list)
    hidden_states: list[torch.Tensor] = field(default_factory=list)
    cache: list[LayerCache | None] | None = None
    layers: list[int] = field(default_factory=list)


class SelfAttention(nn.Module):
    def __init__(self, config: TinyLMConfig):
        super().__init__()
        self.n_heads = config.n_heads
        self.d_head = config.d_model // config.n_heads
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model)
        self.out = nn.Linear(config.d_model, config.d_model)
        self.dropout = nn.Dropout(config.dropout)
        self.scale = 1.0 / math.sqrt(self.d_head)
        self.exact_scale = self.scale == 2.0 ** round(math.log2(self.scale))

    def forward(self, x: torch.Tensor, additive: torch.Tensor | None, allowed: torch.Tensor | None,
                cache: LayerCache | None, capacity: int = 0) -> tuple[torch.Tensor, torch.Tensor, LayerCache]:
        """x (B, T, d); additive (B or 1, H or 1, T, S) or None: added to the scores (the ALiBi
        bias, and −inf on the disallowed keys when `allowed` is None); allowed (B or 1, 1, T, S)
        bool or None: the keys a query may attend to, when some query may have none (its
        probabilities are then zeros, and no gradient flows through its masked scores).
        capacity > 0 (no cache yet): start a cache with room for that many positions.
        Returns (output, probabilities (B, H, T, S), cache)."""
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
        k, v, buffers = _extend(cache, k, v, capacity)
        if self.exact_scale:    # a power of two: scaling q first is bit-identical and T/d_head times cheaper
            scores = (q * self.scale) @ k.transpose(-1, -2)
        else:
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(self.d_head)
        if additive is not None:
            scores = scores + additive
        if allowed is None:
            probs = torch.softmax(scores, dim=-1)
        else:
            # a query with no allowed key (only possible for masked queries) attends to nothing
            probs = torch.nan_to_num(torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1), nan=0.0)
        mixed = (self.dropout(probs) @ v).transpose(1, 2).reshape(b, t, d)
        return self.out(mixed), probs, LayerCache(k, v, None, *buffers)


def _extend(cache: LayerCache | None, k: torch.Tensor, v: torch.Tensor, capacity: int):
    """(keys, values, (key_buffer, value_buffer)) after appending the new k, v (B, H, T, d_head):
    written into the cache's buffers when it has them and they have room (no copy of the past),
    into new buffers of `capacity` positions when there is no cache yet, else concatenated."""
    past = 0 if cache is None else cache.keys.shape[2]
    end = past + k.shape[2]
    if cache is None and capacity >= end:
        buffers = (k.new_empty((*k.shape[:2], capacity, k.shape[3])), v.new_empty((*v.shape[:2], capacity, v.shape[3])))
    elif cache is not None and cache.key_buffer is not None and cache.key_buffer.shape[2] >= end:
        buffers = (cache.key_buffer, cache.value_buffer)
    else:
        if cache is not None:
            k, v = torch.cat([cache.keys, k], dim=2), torch.cat([cache.values, v], dim=2)
        return k, v, (None, None)
    buffers[0][:, :, past:end] = k
    buffers[1][:, :, past:end] = v
    return buffers[0][:, :, :end], buffers[1][:, :, :end], buffers


class Block(nn.Module):
    def __init__(self, config: TinyLMConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.d_model)
        self.attn = SelfAttention(config)
        self.ln2 = nn.LayerNorm(config.d_model)
        self.mlp = nn.Sequential(nn.Linear(config.d_model, config.ff), nn.GELU(),
                                 nn.Linear(config.ff, config.d_model), nn.Dropout(config.dropout))

    def forward(self, x, additive, allowed, cache, capacity=0):
        attended, probs, cache = self.attn(self.ln1(x), additive, allowed, cache, capacity)
        x = x + attended
        return x + self.mlp(self.ln2(x)), probs, cache


class TinyLM(nn.Module):
    """See the module docstring. Deterministic given torch's seed at construction."""

    def __init__(self, config: TinyLMConfig):
        super().__init__()
        self.config = config
        if config.vocab_size:
            self.embed = nn.Embedding(config.vocab_size, config.d_model)
        else:
            self.embed = nn.Linear(config.input_dim, config.d_model)
        self.position = nn.Embedding(config.context, config.d_model) if "learned" in config.positional else None
        if "alibi" in config.positional:
            self.register_buffer("slopes", alibi_slopes(config.n_heads), persistent=False)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.head = None
        if config.vocab_size:
            self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
            if config.tie_embeddings:
                self.head.weight = self.embed.weight
        self.apply(self._init)

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def n_parameters(self, layers: list[int] | None = None) -> int:
        """Parameters used when only `layers` run (all by default); tied weights counted once."""
        used = set(range(self.config.n_layers) if layers is None else layers)
        seen, total = set(), 0
        for name, p in self.named_parameters():
            if name.startswith("blocks.") and int(name.split(".")[1]) not in used:
                continue
            if id(p) not in seen:
                seen.add(id(p))
                total += p.numel()
        return total

    def forward(self, tokens: torch.Tensor | None = None, vectors: torch.Tensor | None = None, *,
                key_mask: torch.Tensor | None = None, positions: torch.Tensor | None = None,
                keep: list[int] | None = None, cache: list[LayerCache | None] | None = None,
                return_attention: bool = False, return_hidden: bool = False, use_cache: bool = False,
                cache_capacity: int = 0) -> TinyLMOutput:
        """tokens (B, T) long or vectors (B, T, input_dim); key_mask (B, S) bool over every key
        position (cached + new; True = may be attended to); positions (B, T) long (default:
        past length + arange(T)); keep: layer indices to run (default all, must be increasing).
        cache_capacity: when starting a cache (use_cache, no cache given), room for this many
        positions, filled in place by later calls (decoding along one path; same numbers)."""
        if (tokens is None) == (vectors is None):
            raise ValueError("pass exactly one of tokens or vectors")
        x = self.embed(tokens if tokens is not None else vectors)
        b, t, _ = x.shape
        past = 0 if not cache else next(c.keys.shape[2] for c in cache if c is not None)
        s = past + t
        if s > self.config.context and positions is None:
            raise ValueError(f"{s} positions exceed the context of {self.config.context}")
        if positions is None:
            positions = torch.arange(past, s, device=x.device).expand(b, t)
        bias = None
        if self.position is not None:
            x = x + self.position(positions)
        if "alibi" in self.config.positional:
            past_positions = next(c.positions for c in cache if c is not None) if past else positions[:, :0]
            key_positions = torch.cat([past_positions, positions], dim=1)
            distance = (positions[:, :, None] - key_positions[:, None, :]).clamp(min=0).to(x.dtype)
            bias = -self.slopes.to(x.dtype)[None, :, None, None] * distance[:, None]
        layers = list(range(self.config.n_layers)) if keep is None else list(keep)
        if layers != sorted(set(layers)) or any(not 0 <= i < self.config.n_layers for i in layers):
            raise ValueError(f"keep must be increasing layer indices in [0, {self.config.n_layers}), got {keep}")
        causal = torch.ones(t, s, dtype=torch.bool, device=x.device).tril(diagonal=past)
        allowed = causal[None, None]
        if key_mask is not None:
            if key_mask.shape != (b, s):
                raise ValueError(f"key_mask must be (B, S) = {(b, s)}, got {tuple(key_mask.shape)}")
            allowed = allowed & key_mask[:, None, None, :].bool()
        additive = bias
        if key_mask is None or bool(allowed.any(dim=-1).all()):
            # no query is left without a key (without a key mask each sees at least itself): the
            # mask joins the bias in one additive term, built once for all layers — the same
            # probabilities and gradients as masking the scores in every layer, in fewer passes
            additive = (torch.zeros((), dtype=x.dtype, device=x.device) if bias is None else bias)
            additive, allowed = additive.masked_fill(~allowed, float("-inf")), None
        attentions, hidden_states = [], [x] if return_hidden else []
        new_cache: list[LayerCache | None] = [None] * self.config.n_layers
        for index in layers:
            layer_cache = cache[index] if cache else None
            x, probs, layer_cache = self.blocks[index](x, additive, allowed, layer_cache,
                                                       cache_capacity if use_cache else 0)
            if bias is not None:
                layer_cache.positions = key_positions
            new_cache[index] = layer_cache
            if return_attention:
                attentions.append(probs)
            if return_hidden:
                hidden_states.append(x)
        hidden = self.ln_f(x)
        logits = self.head(hidden) if self.head is not None else None
        return TinyLMOutput(logits, hidden, attentions, hidden_states, new_cache if use_cache else None, layers)


def token_logprobs(model: TinyLM, tokens: torch.Tensor, key_mask: torch.Tensor | None = None,
                   positions: torch.Tensor | None = None, keep: list[int] | None = None) -> torch.Tensor:
    """log p(tokens[:, t] | tokens[:, :t]) for t ≥ 1: (B, T − 1)."""
    out = model(tokens[:, :-1], key_mask=None if key_mask is None else key_mask[:, :-1],
                positions=None if positions is None else positions[:, :-1], keep=keep)
    return F.log_softmax(out.logits, dim=-1).gather(-1, tokens[:, 1:, None]).squeeze(-1)
