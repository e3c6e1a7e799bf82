"""Output distributions for PFN regression heads — torch only, no Dagster.

`BarDistribution` is the PFN "Riemann" head (Müller et al. 2022): K logits define a
piecewise-constant density on K bins with borders b_0 < … < b_K; p_k = softmax(logits)_k is
the mass of bin k and its density is p_k / (b_{k+1} − b_k). Targets outside [b_0, b_K] are
counted in the edge bins (clamped). A paper's Gaussian or classification head lives with the
paper; this one is shared because both PFN papers' regression variants use it.
"""
from __future__ import annotations

import numpy as np
import torch


def quantile_borders(samples: np.ndarray, n_bins: int, pad: float = 0.5) -> np.ndarray:
    """K + 1 increasing borders: the (K − 1) inner borders at equally spaced quantiles of
    `samples` (prior targets), the outer two `pad` × the sample range beyond min and max."""
    x = np.sort(np.asarray(samples, dtype=float).ravel())
    if x.size < n_bins or n_bins < 2:
        raise ValueError(f"need ≥ n_bins samples and n_bins ≥ 2, got {x.size} samples, {n_bins} bins")
    inner = np.quantile(x, np.linspace(0, 1, n_bins + 1)[1:-1])
    span = x[-1] - x[0] or 1.0
    borders = np.concatenate([[x[0] - pad * span], inner, [x[-1] + pad * span]])
    return np.maximum.accumulate(borders + np.arange(n_bins + 1) * 1e-9)     # strictly increasing


class BarDistribution:
    """Piecewise-constant density on fixed borders (module docstring); borders (K + 1,)."""

    def __init__(self, borders: torch.Tensor | np.ndarray):
        b = torch.as_tensor(np.asarray(borders, dtype=np.float32))
        if b.dim() != 1 or b.numel() < 3 or not torch.all(b[1:] > b[:-1]):
            raise ValueError("borders must be a strictly increasing 1-D sequence of ≥ 3 values")
        self.borders = b
        self.widths = b[1:] - b[:-1]
        self.midpoints = (b[1:] + b[:-1]) / 2

    @property
    def n_bins(self) -> int:
        return int(self.widths.numel())

    def bin_of(self, y: torch.Tensor) -> torch.Tensor:
        """Index of the bin holding y (clamped to [0, K − 1])."""
        inner = self.borders[1:-1].to(y.device)
        return torch.bucketize(y.contiguous(), inner, right=True).clamp(0, self.n_bins - 1)

    def nll(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """−log density of y: logits (..., K), y (...) → (...)."""
        log_p = torch.log_softmax(logits, dim=-1)
        k = self.bin_of(y)
        return -(log_p.gather(-1, k.unsqueeze(-1)).squeeze(-1) - torch.log(self.widths.to(y.device)[k]))

    def mean(self, logits: torch.Tensor) -> torch.Tensor:
        return (torch.softmax(logits, dim=-1) * self.midpoints.to(logits.device)).sum(-1)

    def variance(self, logits: torch.Tensor) -> torch.Tensor:
        """Σ p_k (m_k² + w_k²/12) − mean² (a uniform density inside every bin)."""
        p = torch.softmax(logits, dim=-1)
        m, w = self.midpoints.to(logits.device), self.widths.to(logits.device)
        return ((p * (m * m + w * w / 12)).sum(-1) - self.mean(logits) ** 2).clamp_min(0.0)
