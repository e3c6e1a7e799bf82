"""LaRI networks (small UNets trained from scratch), the SSI-aligned point loss, the stop-index loss,
decision rules and training — torch, no Dagster import.

Shapes: images (B, 3, H, W) in [0, 1]; point maps (B, H, W, L, 3) camera frame; masks (B, H, W, L);
stop-index logits (B, L + 1, H, W).
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


class CheckpointError(ValueError):
    """A checkpoint that does not fit what is asked of it (another L, another kind of net)."""


class ImageError(ValueError):
    """A wrong image shape / dtype or non-finite pixels."""


@dataclass(frozen=True)
class NetConfig:
    kind: str                   # "pointmap" or "stop"
    layers: int                 # L (point-map heads, or stop classes 0..L)
    width: int
    levels: int
    image: int

    def as_dict(self) -> dict:
        return asdict(self)


def uv_grid(h: int, w: int, like: torch.Tensor) -> torch.Tensor:
    """(1, 2, h, w) normalised pixel-centre coordinates in [−1, 1] (the UV channels of every stage)."""
    v, u = torch.meshgrid((torch.arange(h, dtype=like.dtype) + 0.5) / h * 2 - 1,
                          (torch.arange(w, dtype=like.dtype) + 0.5) / w * 2 - 1, indexing="ij")
    return torch.stack([u, v])[None].to(like.device)


def _with_uv(x: torch.Tensor) -> torch.Tensor:
    return torch.cat([x, uv_grid(x.shape[2], x.shape[3], x).expand(len(x), -1, -1, -1)], 1)


class Block(nn.Module):
    """Two 3×3 conv → GroupNorm → ReLU, on input channels + 2 UV channels."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(cin + 2, cout, 3, padding=1), nn.GroupNorm(4, cout), nn.ReLU(),
                                  nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(4, cout), nn.ReLU())

    def forward(self, x):
        return self.body(_with_uv(x))


class UNet(nn.Module):
    """UNet with UV channels at each stage and `heads` separate output heads of `head_out` channels.

    forward: (B, 3, H, W) → (B, heads, head_out, H, W). H and W divisible by 2^(levels − 1).
    """

    def __init__(self, width: int, levels: int, heads: int, head_out: int):
        super().__init__()
        chans = [width * 2 ** i for i in range(levels)]
        self.down = nn.ModuleList([Block(3 if i == 0 else chans[i - 1], c) for i, c in enumerate(chans)])
        self.up = nn.ModuleList([Block(chans[i + 1] + chans[i], chans[i]) for i in reversed(range(levels - 1))])
        self.heads = nn.ModuleList([nn.Sequential(nn.Conv2d(chans[0] + 2, chans[0], 1), nn.ReLU(),
                                                  nn.Conv2d(chans[0], head_out, 1)) for _ in range(heads)])

    def forward(self, x):
        skips = []
        for i, block in enumerate(self.down):
            x = block(x if i == 0 else F.avg_pool2d(x, 2))
            skips.append(x)
        for block, skip in zip(self.up, reversed(skips[:-1])):
            x = block(torch.cat([F.interpolate(x, size=skip.shape[2:], mode="bilinear", align_corners=False),
                                 skip], 1))
        x = _with_uv(x)
        return torch.stack([h(x) for h in self.heads], 1)


class PointMapNet(nn.Module):
    """L heads of (x̂, ŷ, ẑ) remapped by exp: (x̂·e^ẑ, ŷ·e^ẑ, e^ẑ). forward → (B, H, W, L, 3)."""

    def __init__(self, cfg: NetConfig):
        super().__init__()
        self.cfg = cfg
        self.net = UNet(cfg.width, cfg.levels, cfg.layers, 3)

    def forward(self, img):
        out = self.net(img).permute(0, 3, 4, 1, 2)                     # (B, H, W, L, 3)
        ez = torch.exp(out[..., 2:3].clamp(-15, 15))
        return torch.cat([out[..., :2] * ez, ez], -1)


class StopNet(nn.Module):
    """Stop-index classifier: forward → (B, L + 1, H, W) logits over S ∈ {0..L}."""

    def __init__(self, cfg: NetConfig):
        super().__init__()
        self.cfg = cfg
        self.net = UNet(cfg.width, cfg.levels, 1, cfg.layers + 1)

    def forward(self, img):
        return self.net(img)[:, 0]


def build(cfg: NetConfig) -> nn.Module:
    if cfg.kind == "pointmap":
        return PointMapNet(cfg)
    if cfg.kind == "stop":
        return StopNet(cfg)
    raise ValueError(f"unknown net kind {cfg.kind!r}")


def n_parameters(module: nn.Module) -> int:
    return int(sum(p.numel() for p in module.parameters()))


def ssi_solve(pred: torch.Tensor, gt: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Per-image scale s and z-shift t minimising Σ_valid ‖s·P̂ + (0, 0, t) − P‖² (closed form).

    pred, gt: (B, N, 3); mask: (B, N). Normal equations a00 = Σ‖P̂‖², a01 = Σẑ, a11 = N, b0 = Σ P̂·P,
    b1 = Σ z: s = (a11 b0 − a01 b1)/det, t = (−a01 b0 + a00 b1)/det, det = a00 a11 − a01².
    Returns s (B,), t (B,), ok (B,) = det > 0 (images with det ≤ 0 are skipped).
    """
    m = mask.to(pred.dtype)
    a00 = (m * (pred ** 2).sum(-1)).sum(1)
    a01 = (m * pred[..., 2]).sum(1)
    a11 = m.sum(1)
    b0 = (m * (pred * gt).sum(-1)).sum(1)
    b1 = (m * gt[..., 2]).sum(1)
    det = a00 * a11 - a01 ** 2
    ok = det > 1e-12 * torch.clamp(a00 * a11, min=1e-30)
    safe = torch.where(ok, det, torch.ones_like(det))
    return (a11 * b0 - a01 * b1) / safe, (-a01 * b0 + a00 * b1) / safe, ok


def apply_ssi(points: torch.Tensor, s: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """s·P + (0, 0, t) with s, t broadcast over every non-batch axis of points (B, ..., 3)."""
    shape = (-1,) + (1,) * (points.dim() - 1)
    shift = torch.zeros_like(points)
    shift[..., 2] = 1
    return s.view(shape) * points + t.view(shape) * shift


def pointmap_loss(pred: torch.Tensor, gt: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean Euclidean distance over valid GT points after per-image SSI alignment (invalid GT excluded).

    pred, gt: (B, H, W, L, 3); mask (B, H, W, L) bool. Images with det ≤ 0 are skipped.
    """
    b = len(pred)
    p, g, m = pred.reshape(b, -1, 3), gt.reshape(b, -1, 3), mask.reshape(b, -1)
    s, t, ok = ssi_solve(p, g, m)
    m = m & ok[:, None]
    if not m.any():
        return (pred * 0).sum()
    err = torch.linalg.norm(apply_ssi(p, s, t) - g, dim=-1)
    return err[m].mean()


def stop_loss(logits: torch.Tensor, stop: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over the L + 1 classes against S = Σ_l mask (clipped to L). logits (B, L+1, H, W)."""
    return F.cross_entropy(logits, stop.long())


def stop_argmax(probs: np.ndarray) -> np.ndarray:
    """S = argmax over classes; probs (..., L + 1)."""
    return probs.argmax(-1)


def stop_threshold_rule(probs: np.ndarray, tau: float) -> np.ndarray:
    """S_τ = #{l ≥ 1 : P(S ≥ l) ≥ τ}, P(S ≥ l) = Σ_{k ≥ l} p_k (non-increasing in l, so a prefix)."""
    tail = np.cumsum(probs[..., ::-1], axis=-1)[..., ::-1]          # tail[..., l] = P(S ≥ l)
    return (tail[..., 1:] >= tau).sum(-1)


def check_image(img: np.ndarray, size: int) -> np.ndarray:
    """An RGB image (size, size, 3), uint8 or float in [0, 1], as float32 in [0, 1]; ImageError otherwise."""
    a = np.asarray(img)
    if a.ndim != 3 or a.shape != (size, size, 3):
        raise ImageError(f"image must be ({size}, {size}, 3) RGB (the networks' resolution), got {a.shape}")
    if a.dtype == np.uint8:
        return a.astype(np.float32) / 255.0
    if a.dtype not in (np.float32, np.float64):
        raise ImageError(f"image dtype must be uint8 or float32/64 in [0, 1], got {a.dtype}")
    if not np.isfinite(a).all():
        raise ImageError("image has non-finite pixels")
    if a.min() < 0 or a.max() > 1:
        raise ImageError(f"float image values must lie in [0, 1], got [{a.min():.3g}, {a.max():.3g}]")
    return a.astype(np.float32)


def to_batch(rgb: np.ndarray) -> torch.Tensor:
    """(N, H, W, 3) uint8 → (N, 3, H, W) float32 in [0, 1]."""
    return torch.from_numpy(np.ascontiguousarray(rgb)).permute(0, 3, 1, 2).float() / 255.0


def train_net(cfg: NetConfig, rgb: np.ndarray, points: np.ndarray, stop: np.ndarray, steps: int, batch: int,
              lr: float, lr_min: float, weight_decay: float, betas: tuple[float, float], seed: int,
              device: str = "cpu") -> dict:
    """Train one net from scratch with AdamW and a cosine lr (lr → lr_min over `steps`).

    rgb (N, H, W, 3) uint8; points (N, H, W, L, 3) GT camera points of the first L layers; stop (N, H, W)
    GT stop index clipped to L. Batches are drawn with a generator seeded by `seed`.
    Returns {"state", "losses" (steps,), "seconds", "parameters"}.
    """
    torch.manual_seed(seed)
    net = build(cfg).to(device)
    opt = torch.optim.AdamW(net.parameters(), lr=lr, betas=tuple(betas), weight_decay=weight_decay)
    gen = np.random.default_rng(seed)
    x_all = to_batch(rgb)
    layers = cfg.layers
    p_all = torch.from_numpy(np.ascontiguousarray(points[..., :layers, :], dtype=np.float32))
    s_all = torch.from_numpy(np.minimum(stop, layers).astype(np.int64))
    m_all = torch.arange(layers)[None, None, None, :] < s_all[..., None]
    losses = []
    start = time.perf_counter()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_min + 0.5 * (lr - lr_min) * (1 + math.cos(math.pi * step / max(1, steps)))
        idx = torch.from_numpy(gen.choice(len(x_all), size=min(batch, len(x_all)), replace=False))
        x = x_all[idx].to(device)
        if cfg.kind == "pointmap":
            loss = pointmap_loss(net(x), p_all[idx].to(device), m_all[idx].to(device))
        else:
            loss = stop_loss(net(x), s_all[idx].to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return {"state": {k: v.detach().cpu() for k, v in net.state_dict().items()}, "losses": np.array(losses),
            "seconds": time.perf_counter() - start, "parameters": n_parameters(net)}


def load_net(state: dict, config: dict, kind: str, layers: int | None = None) -> nn.Module:
    """A net from its state_dict and sidecar config; CheckpointError when it is another kind or another L."""
    cfg = NetConfig(**{k: config[k] for k in ("kind", "layers", "width", "levels", "image")})
    if cfg.kind != kind:
        raise CheckpointError(f"checkpoint is a {cfg.kind!r} net, expected {kind!r}")
    if layers is not None and cfg.layers != layers:
        raise CheckpointError(f"checkpoint has L = {cfg.layers} layers, expected L = {layers}")
    net = build(cfg)
    net.load_state_dict(state)
    return net.eval()


@torch.no_grad()
def predict_points(net: nn.Module, rgb: np.ndarray, batch: int = 64) -> np.ndarray:
    """(N, H, W, L, 3) predicted (unaligned) points for images (N, H, W, 3) uint8."""
    x = to_batch(rgb)
    return torch.cat([net(x[i:i + batch]) for i in range(0, len(x), batch)]).numpy().astype(np.float64)


@torch.no_grad()
def predict_stop_probs(net: nn.Module, rgb: np.ndarray, batch: int = 64) -> np.ndarray:
    """(N, H, W, L + 1) class probabilities of the stop index."""
    x = to_batch(rgb)
    logits = torch.cat([net(x[i:i + batch]) for i in range(0, len(x), batch)])
    return torch.softmax(logits, 1).permute(0, 2, 3, 1).numpy().astype(np.float64)
