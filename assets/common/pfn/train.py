"""The PFN pretraining / fine-tuning loop shared by the PFN papers — torch + numpy, no Dagster.

Batches are a pure function of (seed, stream, step): `stream_rng(seed, stream, step)` is the
one Generator a batch builder may use for step `step` of the named stream, so a run can be
resumed or re-created at any step, two model variants trained on one stream see the same
tasks, and a leakage check can regenerate any stream's tasks without the model.

    def make_batch(step):                       # the paper's task sampler
        return build_tasks(stream_rng(seed, "pretrain", step), ...)

    result = train(model, make_batch, loss_fn, TrainConfig(steps=2500, lr=1e-3, warmup_steps=100))
"""
from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn


def stream_seed(seed: int, stream: str, step: int, *keys: Any) -> np.random.SeedSequence:
    """SeedSequence of (seed, stream, step, *keys); strings are hashed with crc32 (stable
    across processes and Python versions)."""
    words = [int(seed) & 0xFFFFFFFF, zlib.crc32(str(stream).encode()), int(step)]
    words += [int(k) if isinstance(k, (int, np.integer)) else zlib.crc32(str(k).encode()) for k in keys]
    return np.random.SeedSequence(words)


def stream_rng(seed: int, stream: str, step: int, *keys: Any) -> np.random.Generator:
    """The Generator of step `step` of stream `stream` under `seed` (module docstring)."""
    return np.random.default_rng(stream_seed(seed, stream, step, *keys))


@dataclass(frozen=True)
class TrainConfig:
    """AdamW; linear warmup over warmup_steps, then cosine decay from lr to lr · min_lr_ratio
    (min_lr_ratio = 1: constant); gradient norm clipped at grad_clip (0: off)."""

    steps: int
    lr: float = 1e-3
    weight_decay: float = 0.0
    warmup_steps: int = 0
    min_lr_ratio: float = 0.1
    grad_clip: float = 1.0
    beta1: float = 0.9
    beta2: float = 0.999

    def lr_at(self, step: int) -> float:
        """Learning rate of (0-based) step `step`."""
        if self.warmup_steps and step < self.warmup_steps:
            return self.lr * (step + 1) / self.warmup_steps
        span = max(1, self.steps - self.warmup_steps)
        progress = min(1.0, (step - self.warmup_steps) / span)
        return self.lr * (self.min_lr_ratio + (1 - self.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TrainResult:
    """losses: the training loss of every step (float); seconds: wall clock of the loop."""

    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def steps(self) -> int:
        return len(self.losses)

    @property
    def seconds_per_step(self) -> float:
        return self.seconds / max(1, self.steps)


def train(model: nn.Module, make_batch: Callable[[int], Any], loss_fn: Callable[[nn.Module, Any], torch.Tensor],
          config: TrainConfig, *, start_step: int = 0, log: Callable[[str], None] | None = None,
          log_every: int = 0) -> TrainResult:
    """config.steps optimisation steps; step t uses make_batch(start_step + t) (the batch's
    randomness must come from stream_rng of that step). A non-finite loss stops with an error
    naming the step. Returns every step's loss and the loop's wall clock."""
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay,
                                  betas=(config.beta1, config.beta2))
    result = TrainResult()
    model.train()
    start = time.perf_counter()
    for t in range(int(config.steps)):
        for group in optimizer.param_groups:
            group["lr"] = config.lr_at(t)
        loss = loss_fn(model, make_batch(start_step + t))
        if not torch.isfinite(loss):
            raise FloatingPointError(f"non-finite training loss {float(loss)} at step {start_step + t}")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.grad_clip:
            torch.nn.utils.clip_grad_norm_(params, config.grad_clip)
        optimizer.step()
        result.losses.append(float(loss.detach()))
        if log and log_every and (t + 1) % log_every == 0:
            recent = result.losses[-log_every:]
            log(f"step {start_step + t + 1}: loss {np.mean(recent):.4f} (lr {config.lr_at(t):.2e})")
    result.seconds = time.perf_counter() - start
    model.eval()
    return result


def relative_loss_drop(losses: list[float] | np.ndarray, window: int) -> float:
    """(mean of the first `window` losses − mean of the last `window`) / |mean of the first|:
    0.2 = the loss fell by 20 %."""
    x = np.asarray(losses, dtype=float)
    w = max(1, min(int(window), len(x) // 2 or 1))
    first, last = float(x[:w].mean()), float(x[-w:].mean())
    return (first - last) / max(abs(first), 1e-12)


def finite_state(state: dict[str, torch.Tensor]) -> list[str]:
    """Names of the tensors of a state_dict that hold a NaN or an infinity."""
    return [k for k, v in state.items() if v.is_floating_point() and not torch.isfinite(v).all()]
