"""Tiny VAR-style multi-scale residual VQ-VAE (pure torch; no Dagster import).

Shapes: images x (B, C_img, H, W) in [-1, 1]; latent f (B, Cvae, h, w) with h = H / 2^downsample;
scales (p_1 .. p_K) with p_K = h; tokens per image L = Σ p_k²; token ids are ordered scale by
scale, row-major inside a scale.

Tokenisation (spec "Background: VAR"): f_rest = f, f̂ = 0; for each scale k
    r_k = argmin_v ‖area_down(f_rest, p_k) − e_v‖      (no resize at the last scale)
    h_k = φ_k(bicubic_up(e[r_k], h×w));  f̂ += h_k;  f_rest −= h_k
with φ a 3×3 conv with residual ratio 0.5 (h ← 0.5 h + 0.5 conv(h)), `phi_count` partially
shared φ's chosen by k/(K−1). Loss: ‖x − D(f̂_ste)‖² + mean_k[‖sg(f̂_k) − f‖²·β + ‖f̂_k − sg(f)‖²]
(β = 0.25 commitment, codebook term through f̂), straight-through f̂_ste = f + sg(f̂ − f).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class TokenizerConfig:
    image_channels: int
    image_size: int
    scales: tuple[int, ...]
    hidden: int = 32
    cvae: int = 16
    vocab: int = 64
    downsample: int = 0        # number of stride-2 stages: latent size = image_size / 2^downsample
    phi_count: int = 2
    beta: float = 0.25

    def __post_init__(self):
        latent = self.image_size // (2 ** self.downsample)
        if latent * 2 ** self.downsample != self.image_size:
            raise ValueError(f"image size {self.image_size} is not divisible by 2^{self.downsample}")
        if self.scales[-1] != latent or list(self.scales) != sorted(set(self.scales)):
            raise ValueError(f"scales {self.scales} must increase strictly and end at the latent size {latent}")

    @property
    def latent_size(self) -> int:
        return self.image_size // (2 ** self.downsample)

    @property
    def tokens_per_image(self) -> int:
        return int(sum(p * p for p in self.scales))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["scales"] = list(self.scales)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TokenizerConfig":
        return cls(**{**d, "scales": tuple(d["scales"])})


class ResBlock(nn.Module):
    def __init__(self, ch: int):
        super().__init__()
        self.net = nn.Sequential(nn.GroupNorm(8, ch), nn.SiLU(), nn.Conv2d(ch, ch, 3, padding=1),
                                 nn.GroupNorm(8, ch), nn.SiLU(), nn.Conv2d(ch, ch, 3, padding=1))

    def forward(self, x):
        return x + self.net(x)


class Phi(nn.Conv2d):
    """3×3 conv with residual ratio 0.5: h ← 0.5·h + 0.5·conv(h)."""

    def __init__(self, ch: int):
        super().__init__(ch, ch, 3, padding=1)

    def forward(self, h):
        return 0.5 * h + 0.5 * super().forward(h)


def area_down(f: torch.Tensor, size: int) -> torch.Tensor:
    return f if f.shape[-1] == size else F.interpolate(f, size=(size, size), mode="area")


def bicubic_up(f: torch.Tensor, size: int) -> torch.Tensor:
    return f if f.shape[-1] == size else F.interpolate(f, size=(size, size), mode="bicubic")


class MultiScaleVQVAE(nn.Module):
    def __init__(self, cfg: TokenizerConfig):
        super().__init__()
        self.cfg = cfg
        h, c = cfg.hidden, cfg.image_channels
        enc = [nn.Conv2d(c, h, 3, padding=1)]
        for _ in range(cfg.downsample):
            enc += [nn.SiLU(), nn.Conv2d(h, h, 4, stride=2, padding=1)]
        enc += [ResBlock(h), nn.SiLU(), nn.Conv2d(h, cfg.cvae, 1)]
        self.encoder = nn.Sequential(*enc)
        dec = [nn.Conv2d(cfg.cvae, h, 1), ResBlock(h)]
        for _ in range(cfg.downsample):
            dec += [nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(h, h, 3, padding=1), nn.SiLU()]
        dec += [nn.SiLU(), nn.Conv2d(h, c, 3, padding=1)]
        self.decoder = nn.Sequential(*dec)
        self.codebook = nn.Embedding(cfg.vocab, cfg.cvae)
        nn.init.uniform_(self.codebook.weight, -1.0 / cfg.vocab, 1.0 / cfg.vocab)
        self.phis = nn.ModuleList(Phi(cfg.cvae) for _ in range(cfg.phi_count))

    # ---------------------------------------------------------------- building blocks
    def phi(self, k: int) -> Phi:
        K = len(self.cfg.scales)
        index = int(round(k / max(K - 1, 1) * (len(self.phis) - 1)))
        return self.phis[index]

    def scale_contribution(self, k: int, ids: torch.Tensor) -> torch.Tensor:
        """h_k = φ_k(bicubic_up(e[ids])) for ids (B, p_k²) → (B, Cvae, h, w)."""
        p = self.cfg.scales[k]
        e = self.codebook(ids).transpose(1, 2).reshape(ids.shape[0], self.cfg.cvae, p, p)
        return self.phi(k)(bicubic_up(e, self.cfg.latent_size))

    def nearest_code(self, vectors: torch.Tensor) -> torch.Tensor:
        """Exact nearest codebook entry: vectors (..., Cvae) → ids (...)."""
        flat = vectors.reshape(-1, vectors.shape[-1])
        dist = (flat.pow(2).sum(1, keepdim=True) - 2 * flat @ self.codebook.weight.T
                + self.codebook.weight.pow(2).sum(1)[None])
        return dist.argmin(1).reshape(vectors.shape[:-1])

    def decode_latent(self, f_hat: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.decoder(f_hat))

    # ---------------------------------------------------------------- tokenisation
    def quantize(self, f: torch.Tensor):
        """Residual multi-scale quantisation of f (B, Cvae, h, w).

        Returns (ids per scale [(B, p_k²)], f̂ (B, Cvae, h, w) with gradients to the codebook and
        φ's, vq loss scalar, rests [(B·p_k², Cvae)] the vectors that were quantised)."""
        f_nograd = f.detach()
        f_rest = f_nograd.clone()
        f_hat = torch.zeros_like(f)
        ids, rests, vq_loss = [], [], f.new_zeros(())
        for k, p in enumerate(self.cfg.scales):
            rest = area_down(f_rest, p).permute(0, 2, 3, 1)              # (B, p, p, Cvae)
            idx = self.nearest_code(rest).reshape(f.shape[0], p * p)
            h = self.scale_contribution(k, idx)
            f_hat = f_hat + h
            f_rest = f_rest - h.detach()
            ids.append(idx)
            rests.append(rest.reshape(-1, self.cfg.cvae))
            vq_loss = vq_loss + F.mse_loss(f_hat.detach(), f) * self.cfg.beta + F.mse_loss(f_hat, f_nograd)
        return ids, f_hat, vq_loss / len(self.cfg.scales), rests

    def forward(self, x: torch.Tensor):
        """(reconstruction (B, C, H, W), vq loss, ids per scale, rests) with the straight-through f̂."""
        f = self.encoder(x)
        ids, f_hat, vq_loss, rests = self.quantize(f)
        f_ste = f + (f_hat - f).detach()
        return self.decode_latent(f_ste), vq_loss, ids, rests

    @torch.no_grad()
    def encode_tokens(self, x: torch.Tensor) -> torch.Tensor:
        """Images (B, C, H, W) → token ids (B, L), scales concatenated."""
        ids, _, _, _ = self.quantize(self.encoder(x))
        return torch.cat(ids, dim=1)

    def split_tokens(self, tokens: torch.Tensor) -> list[torch.Tensor]:
        sizes = [p * p for p in self.cfg.scales]
        if tokens.shape[1] != sum(sizes):
            raise ValueError(f"token rows have {tokens.shape[1]} ids, expected L = {sum(sizes)}")
        return list(torch.split(tokens, sizes, dim=1))

    @torch.no_grad()
    def tokens_to_latent(self, tokens: torch.Tensor) -> torch.Tensor:
        """Token ids (B, L) → f̂ (B, Cvae, h, w)."""
        check_token_range(tokens, self.cfg.vocab)
        return sum(self.scale_contribution(k, ids) for k, ids in enumerate(self.split_tokens(tokens)))

    @torch.no_grad()
    def decode_tokens(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.decode_latent(self.tokens_to_latent(tokens))

    @torch.no_grad()
    def teacher_forcing_inputs(self, tokens: torch.Tensor) -> torch.Tensor:
        """VAR's teacher-forcing inputs: for k = 1..K−1 the cumulative f̂ after k scales,
        area-downsampled to p_{k+1}, flattened row-major. (B, L) → (B, L − p_1², Cvae)."""
        check_token_range(tokens, self.cfg.vocab)
        f_hat = None
        pieces = []
        parts = self.split_tokens(tokens)
        for k, ids in enumerate(parts[:-1]):
            h = self.scale_contribution(k, ids)
            f_hat = h if f_hat is None else f_hat + h
            nxt = self.cfg.scales[k + 1]
            pieces.append(area_down(f_hat, nxt).flatten(2).transpose(1, 2))
        return torch.cat(pieces, dim=1)


@torch.no_grad()
def token_pyramid(model: MultiScaleVQVAE, images: torch.Tensor,
                  chunk: int = 1024) -> tuple[torch.Tensor, torch.Tensor]:
    """Images (B, C, H, W) → (token ids (B, L), teacher-forcing inputs (B, L − p_1², Cvae)),
    encoded in chunks so large generated datasets fit in memory."""
    tokens = torch.cat([model.encode_tokens(images[i:i + chunk]) for i in range(0, len(images), chunk)])
    tf = torch.cat([model.teacher_forcing_inputs(tokens[i:i + chunk]) for i in range(0, len(tokens), chunk)])
    return tokens, tf


@torch.no_grad()
def reconstruct(model: MultiScaleVQVAE, images: torch.Tensor, chunk: int = 1024) -> torch.Tensor:
    """Encode–quantise–decode reconstruction (no straight-through), in chunks."""
    return torch.cat([model.decode_latent(model.quantize(model.encoder(images[i:i + chunk]))[1])
                      for i in range(0, len(images), chunk)])


def check_token_range(tokens: torch.Tensor, vocab: int) -> None:
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab):
        raise ValueError(f"token id outside the codebook: range [{int(tokens.min())}, {int(tokens.max())}] "
                         f"not within [0, {vocab})")


def restart_dead_codes(model: MultiScaleVQVAE, usage: torch.Tensor, rests: torch.Tensor,
                       min_fraction: float, generator: torch.Generator) -> int:
    """Re-initialise codes used by < min_fraction of the quantised vectors since the last
    restart with random quantised vectors (rests, (n, Cvae)) of the current batch. Returns
    how many codes were restarted. Deviation from "random encoder outputs": the vectors
    quantised at scale k are residuals, so residual vectors of all scales are sampled."""
    fraction = usage / usage.sum().clamp_min(1)
    dead = torch.nonzero(fraction < min_fraction).flatten()
    if len(dead):
        pick = torch.randint(0, rests.shape[0], (len(dead),), generator=generator).to(rests.device)
        with torch.no_grad():
            model.codebook.weight[dead] = rests[pick].detach()
    return int(len(dead))


def train_tokenizer(images: np.ndarray, cfg: TokenizerConfig, steps: int, batch: int, lr: float,
                    seed: int, restart_every: int, restart_fraction: float,
                    log: Callable[[str], None] = lambda m: None,
                    device: str = "cpu") -> tuple[MultiScaleVQVAE, list[float]]:
    """Train the tokenizer on images (n, C, H, W) in [-1, 1] with Adam; returns (model, losses)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = MultiScaleVQVAE(cfg).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=max(steps, 1), pct_start=0.1)
    x_all = torch.from_numpy(images).to(device)
    usage = torch.zeros(cfg.vocab, device=device)
    losses = []
    for step in range(steps):
        xb = x_all[torch.randint(0, len(x_all), (batch,), generator=gen).to(device)]
        recon, vq_loss, ids, rests = model(xb)
        loss = F.mse_loss(recon, xb) + vq_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        usage += torch.bincount(torch.cat([i.flatten() for i in ids]), minlength=cfg.vocab).float()
        losses.append(float(loss.detach()))
        # no restarts in the last 20% of training, so the final codebook is trained
        if restart_every and (step + 1) % restart_every == 0 and step < 0.8 * steps:
            restarted = restart_dead_codes(model, usage, torch.cat(rests), restart_fraction, gen)
            usage.zero_()
            if restarted:
                log(f"tokenizer step {step + 1}: restarted {restarted} dead codes")
        if (step + 1) % max(1, steps // 5) == 0:
            log(f"tokenizer step {step + 1}/{steps}: loss {np.mean(losses[-20:]):.4f}")
    model.eval().cpu()
    return model, losses


@torch.no_grad()
def evaluate_tokenizer(model: MultiScaleVQVAE, images: np.ndarray) -> dict:
    """Reconstruction MSE (on [-1, 1]) and codebook usage on held-out images (n, C, H, W)."""
    x = torch.from_numpy(images)
    tokens = torch.cat([model.encode_tokens(x[i:i + 1024]) for i in range(0, len(x), 1024)])
    recon = torch.cat([model.decode_tokens(tokens[i:i + 1024]) for i in range(0, len(tokens), 1024)])
    counts = torch.bincount(tokens.flatten(), minlength=model.cfg.vocab)
    per_scale = [int(torch.unique(t).numel()) for t in model.split_tokens(tokens)]
    return {"recon_mse": float(F.mse_loss(recon, x)), "codebook_usage": float((counts > 0).float().mean()),
            "codes_used": int((counts > 0).sum()), "codes_used_per_scale": per_scale,
            "token_min": int(tokens.min()), "token_max": int(tokens.max())}
