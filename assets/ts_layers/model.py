"""Patch transformers for time series on the shared tiny transformer — torch only, no Dagster.

    window x (B, lookback [+ patch])  ──RevIN (look-back mean/std)──>  z
    z → patches (B, N, P) ──TinyLM(vectors; patch embedding + learned positions, causal blocks)──>
        hidden (B, N, d) ──head Linear(d, P)──> next-patch predictions (B, N, P)

TSFM: the whole model is trained from scratch (next-patch MSE at every position).
LLM4TS: the blocks, positions and final LayerNorm come from a char-level LM pretrained on text;
the patch embedding and the head are new (`from_text_backbone`).
The horizon is forecast by two autoregressive patches (`forecast`). Layer pruning uses TinyLM's
`keep` (a skipped block is the identity: its residual branches are zero); `compact` copies the
kept blocks into a physically shallower model (same outputs, for latency).
Units: z is unitless (RevIN-normalised); MSE is reported on that scale.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from assets.common.tiny_lm import TinyLM, TinyLMConfig

REVIN_EPS = 1e-5


def revin_stats(lookback: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, std) over the last axis of the look-back (B, L) → (B, 1) each (population std)."""
    mean = lookback.mean(dim=-1, keepdim=True)
    std = lookback.std(dim=-1, unbiased=False, keepdim=True)
    return mean, std


def revin_normalize(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """(x − mean) / (std + eps), broadcasting (B, 1) stats over (B, T)."""
    return (x - mean) / (std + REVIN_EPS)


def revin_denormalize(z: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """Inverse of revin_normalize."""
    return z * (std + REVIN_EPS) + mean


@dataclass(frozen=True)
class PatchConfig:
    family: str            # "tsfm" or "llm4ts"
    depth: int
    d_model: int
    n_heads: int
    patch: int
    context: int           # positions (look-back patches + 1 autoregressive patch)

    def backbone(self) -> TinyLMConfig:
        return TinyLMConfig(input_dim=self.patch, d_model=self.d_model, n_heads=self.n_heads,
                            n_layers=self.depth, context=self.context)


class PatchForecaster(nn.Module):
    """See the module docstring. `forward(patches (B, N, P))` → predictions of patches 2…N+1."""

    def __init__(self, config: PatchConfig):
        super().__init__()
        self.config = config
        self.backbone = TinyLM(config.backbone())
        self.head = nn.Linear(config.d_model, config.patch)

    def forward(self, patches: torch.Tensor, keep: list[int] | None = None, return_attention: bool = False,
                return_hidden: bool = False):
        out = self.backbone(vectors=patches, keep=keep, return_attention=return_attention,
                            return_hidden=return_hidden)
        return self.head(out.hidden), out

    def n_parameters(self, keep: list[int] | None = None) -> int:
        """Parameters used when only `keep` blocks run (head included)."""
        return self.backbone.n_parameters(keep) + sum(p.numel() for p in self.head.parameters())


def to_patches(z: torch.Tensor, patch: int) -> torch.Tensor:
    """(B, N·P) → (B, N, P)."""
    b, t = z.shape
    return z.reshape(b, t // patch, patch)


def next_patch_loss(model: PatchForecaster, windows: torch.Tensor, lookback: int,
                    keep: list[int] | None = None) -> torch.Tensor:
    """Mean next-patch MSE of training windows (B, lookback + P): RevIN on the look-back,
    inputs patches 1…N, targets patches 2…N+1 (N = lookback / P)."""
    patch = model.config.patch
    mean, std = revin_stats(windows[:, :lookback])
    z = to_patches(revin_normalize(windows, mean, std), patch)
    pred, _ = model(z[:, :-1], keep=keep)
    return ((pred - z[:, 1:]) ** 2).mean()


@torch.no_grad()
def forecast(model: PatchForecaster, lookback: torch.Tensor, horizon: int, keep: list[int] | None = None
             ) -> torch.Tensor:
    """Normalised forecasts (B, horizon) of look-backs (B, L) (raw units), by autoregressive
    patches: predict patch N+1 from N patches, append it, predict patch N+2, truncate."""
    patch = model.config.patch
    mean, std = revin_stats(lookback)
    z = to_patches(revin_normalize(lookback, mean, std), patch)
    produced = []
    steps = -(-horizon // patch)
    for _ in range(steps):
        pred, _ = model(z, keep=keep)
        nxt = pred[:, -1:]
        produced.append(nxt)
        z = torch.cat([z, nxt], dim=1)
        if z.shape[1] > model.config.context:
            z = z[:, 1:]
    return torch.cat(produced, dim=1).reshape(lookback.shape[0], -1)[:, :horizon]



def forecast_latency_ms(model: PatchForecaster, lookback: torch.Tensor, horizon: int, repeats: int,
                        warmup: int) -> float:
    """Median wall time (ms) of `forecast` over `repeats` timed calls after `warmup` untimed ones."""
    for _ in range(warmup):
        forecast(model, lookback, horizon)
    seconds = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        forecast(model, lookback, horizon)
        seconds.append(time.perf_counter() - t0)
    return float(np.median(seconds) * 1e3)

def compact(model: PatchForecaster, keep: list[int]) -> PatchForecaster:
    """A model with only the `keep` blocks (in order), copying every other weight: its
    outputs equal `model(..., keep=keep)`."""
    config = PatchConfig(model.config.family, len(keep), model.config.d_model, model.config.n_heads,
                         model.config.patch, model.config.context)
    small = PatchForecaster(config)
    state = {}
    for name, value in model.state_dict().items():
        if name.startswith("backbone.blocks."):
            parts = name.split(".")
            index = int(parts[2])
            if index in keep:
                parts[2] = str(keep.index(index))
                state[".".join(parts)] = value
        else:
            state[name] = value
    small.load_state_dict(state)
    return small


def text_lm(vocab_size: int, depth: int, d_model: int, n_heads: int, context: int) -> TinyLM:
    """The char-level LM (token model with a tied LM head) for LLM4TS's backbone."""
    return TinyLM(TinyLMConfig(vocab_size=vocab_size, d_model=d_model, n_heads=n_heads, n_layers=depth,
                               context=context))


def from_text_backbone(text_state: dict[str, torch.Tensor], config: PatchConfig) -> PatchForecaster:
    """LLM4TS: a PatchForecaster whose blocks, final LayerNorm and first `context` positions
    come from the text LM's state_dict; patch embedding and head stay freshly initialised."""
    model = PatchForecaster(config)
    state = model.state_dict()
    for name, value in text_state.items():
        if name.startswith("blocks.") or name.startswith("ln_f."):
            state["backbone." + name] = value.clone()
        elif name == "position.weight":
            if value.shape[0] < config.context:
                raise ValueError(f"text LM context {value.shape[0]} < the forecaster's {config.context}")
            state["backbone.position.weight"] = value[:config.context].clone()
    model.load_state_dict(state)
    return model


def freeze_all_but_layernorm(model: PatchForecaster) -> None:
    """LLM4TS's LayerNorm-only fine-tuning: only LayerNorms, the patch embedding and the head train."""
    for name, p in model.named_parameters():
        p.requires_grad = (".ln" in name or name.startswith("backbone.ln_f") or name.startswith("head.")
                           or name.startswith("backbone.embed."))


def flops_per_window(config: PatchConfig, n_layers: int, tokens: int) -> float:
    """Approximate forward FLOPs (2 per multiply-add) of one window of `tokens` patches with
    `n_layers` blocks: patch embedding, per block QKV/out projections, attention scores and
    mixing, the MLP, and the head."""
    d, p, ff = config.d_model, config.patch, 4 * config.d_model
    per_block = tokens * (2 * 4 * d * d + 2 * 2 * d * ff) + 2 * 2 * tokens * tokens * d
    return float(tokens * 2 * p * d * 2 + n_layers * per_block)
