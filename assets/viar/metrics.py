"""Offline image-quality metrics for VIAR (Inception weights are unavailable offline).

Pure numpy/scipy/torch; no Dagster import. All features come from one small CNN classifier
trained on the TRAIN split and evaluated against the held-out TEST split (validation split
for calibration), never the classifier's training data.

- FCD  (Fréchet classifier distance): ‖μ_g − μ_r‖² + Tr(Σ_g + Σ_r − 2(Σ_g Σ_r)^{1/2}) on the
  64-d penultimate features (FID analogue).
- sFCD: the same on spatial features (first conv block, first 8 channels, 4×4 average pool =
  128-d; sFID analogue).
- KID: unbiased MMD² with the cubic polynomial kernel k(x, y) = (xᵀy/d + 1)³.
- class consistency: classifier(sample) == conditioning label (IS-like).
- precision / recall: k-NN manifolds (Kynkäänniemi et al.), k = 3.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.linalg
import torch
import torch.nn.functional as F
from torch import nn


class EvalCNN(nn.Module):
    """conv(→16) → conv(→32) → maxpool → conv(→32) → adaptive 4×4 pool → FC 64 (penultimate) → FC classes."""

    def __init__(self, channels: int, num_classes: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 16, 64)
        self.out = nn.Linear(64, num_classes)
        self.drop = nn.Dropout(0.2)

    def features(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, C, H, W) → (penultimate (B, 64), spatial (B, 128), logits (B, classes))."""
        h1 = F.relu(self.conv1(x))
        spatial = F.adaptive_avg_pool2d(h1[:, :8], 4).flatten(1)
        h = F.relu(self.conv2(h1))
        h = F.max_pool2d(h, 2) if h.shape[-1] >= 8 else h
        h = F.relu(self.conv3(h))
        h = F.adaptive_avg_pool2d(h, 4).flatten(1)
        pen = F.relu(self.fc(self.drop(h)))
        return pen, spatial, self.out(pen)

    def forward(self, x):
        return self.features(x)[2]


def train_classifier(images: np.ndarray, labels: np.ndarray, num_classes: int, epochs: int, batch: int,
                     lr: float, seed: int, log: Callable[[str], None] = lambda m: None,
                     device: str = "cpu") -> EvalCNN:
    """Adam on the train split with ±1-pixel random shifts (generated samples are not pixel-aligned)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = EvalCNN(images.shape[1], num_classes).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    x_all, y_all = torch.from_numpy(images).to(device), torch.from_numpy(labels).to(device)
    n = len(y_all)
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(n, generator=gen)
        total = 0.0
        for i in range(0, n, batch):
            idx = order[i:i + batch].to(device)
            xb = x_all[idx]
            dx, dy = (int(v) for v in torch.randint(-1, 2, (2,), generator=gen))
            xb = torch.roll(xb, shifts=(dy, dx), dims=(2, 3))
            loss = F.cross_entropy(model(xb), y_all[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        if (epoch + 1) % max(1, epochs // 3) == 0:
            log(f"classifier epoch {epoch + 1}/{epochs}: loss {total / n:.4f}")
    model.eval().cpu()
    return model


@torch.no_grad()
def extract(model: EvalCNN, images: np.ndarray, batch: int = 512) -> dict[str, np.ndarray]:
    """{"penultimate" (n, 64), "spatial" (n, 128), "pred" (n,)} float64 / int64."""
    model.eval()
    pens, spats, preds = [], [], []
    x = torch.from_numpy(np.ascontiguousarray(images, dtype=np.float32))
    for i in range(0, len(x), batch):
        pen, spat, logits = model.features(x[i:i + batch])
        pens.append(pen.double().numpy())
        spats.append(spat.double().numpy())
        preds.append(logits.argmax(1).numpy())
    return {"penultimate": np.concatenate(pens), "spatial": np.concatenate(spats),
            "pred": np.concatenate(preds).astype(np.int64)}


def gaussian_stats(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(μ (d,), Σ (d, d)) with the unbiased covariance."""
    features = np.asarray(features, dtype=np.float64)
    return features.mean(0), np.cov(features, rowvar=False)


def frechet_distance(mu1: np.ndarray, sigma1: np.ndarray, mu2: np.ndarray, sigma2: np.ndarray) -> float:
    """‖μ1 − μ2‖² + Tr(Σ1 + Σ2 − 2 (Σ1 Σ2)^{1/2}); sqrtm's real part (tiny imaginary parts are
    numerical), with a small ridge if the product is singular."""
    diff = mu1 - mu2
    covmean = scipy.linalg.sqrtm(sigma1 @ sigma2)
    if not np.isfinite(covmean).all():
        ridge = np.eye(len(mu1)) * 1e-6
        covmean = scipy.linalg.sqrtm((sigma1 + ridge) @ (sigma2 + ridge))
    covmean = np.real(covmean)
    return float(max(diff @ diff + np.trace(sigma1) + np.trace(sigma2) - 2 * np.trace(covmean), 0.0))


def fcd(gen_features: np.ndarray, ref_features: np.ndarray) -> float:
    return frechet_distance(*gaussian_stats(gen_features), *gaussian_stats(ref_features))


def kid(x: np.ndarray, y: np.ndarray) -> float:
    """Unbiased MMD² with k(a, b) = (aᵀb/d + 1)³ between samples x (n, d) and y (m, d)."""
    d = x.shape[1]
    kxx = (x @ x.T / d + 1) ** 3
    kyy = (y @ y.T / d + 1) ** 3
    kxy = (x @ y.T / d + 1) ** 3
    n, m = len(x), len(y)
    return float((kxx.sum() - np.trace(kxx)) / (n * (n - 1)) + (kyy.sum() - np.trace(kyy)) / (m * (m - 1))
                 - 2 * kxy.mean())


def _knn_radius(features: np.ndarray, k: int) -> np.ndarray:
    d = _pairwise(features, features)
    return np.sort(d, axis=1)[:, k]           # column 0 is the point itself


def _pairwise(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    sq = (a * a).sum(1)[:, None] + (b * b).sum(1)[None] - 2 * a @ b.T
    return np.sqrt(np.maximum(sq, 0))


def precision_recall(real: np.ndarray, gen: np.ndarray, k: int = 3) -> tuple[float, float]:
    """k-NN manifold precision (generated inside the real manifold) and recall (real inside
    the generated manifold)."""
    real_r, gen_r = _knn_radius(real, k), _knn_radius(gen, k)
    d = _pairwise(gen, real)                                        # (n_gen, n_real)
    precision = float(np.mean((d <= real_r[None, :]).any(axis=1)))
    recall = float(np.mean((d.T <= gen_r[None, :]).any(axis=1)))
    return precision, recall


def quality_metrics(gen: dict[str, np.ndarray], gen_labels: np.ndarray, ref: dict[str, np.ndarray]) -> dict[str, float]:
    """All metrics of one generated set against one real reference set (features from extract)."""
    precision, recall = precision_recall(ref["penultimate"], gen["penultimate"])
    return {"fcd": fcd(gen["penultimate"], ref["penultimate"]),
            "sfcd": fcd(gen["spatial"], ref["spatial"]),
            "kid": kid(gen["penultimate"], ref["penultimate"]),
            "class_consistency": float(np.mean(gen["pred"] == gen_labels)),
            "precision": precision, "recall": recall}


def stratified_subset(labels: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """Indices of up to per_class items of every class (sorted)."""
    rng = np.random.default_rng(seed)
    picks = [rng.permutation(np.flatnonzero(labels == c))[:per_class] for c in np.unique(labels)]
    return np.sort(np.concatenate(picks))
