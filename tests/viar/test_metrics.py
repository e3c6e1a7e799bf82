"""Metric mathematics: Fréchet distance on known Gaussians, KID, k-NN precision/recall."""
from __future__ import annotations

import numpy as np
import pytest

from assets.viar import metrics


def test_frechet_distance_closed_form_diagonal_gaussians():
    mu1, mu2 = np.array([0.0, 1.0, -2.0]), np.array([1.0, 1.0, 0.0])
    s1, s2 = np.array([1.0, 4.0, 0.25]), np.array([9.0, 1.0, 0.25])
    expected = np.sum((mu1 - mu2) ** 2) + np.sum(s1 + s2 - 2 * np.sqrt(s1 * s2))   # 5 + 4 + 1 + 0
    got = metrics.frechet_distance(mu1, np.diag(s1), mu2, np.diag(s2))
    assert got == pytest.approx(expected, abs=1e-9) and expected == pytest.approx(10.0)


def test_frechet_distance_non_commuting_covariances():
    """Σ2 = R Σ1 Rᵀ (same spectrum, rotated): W2² = Tr Σ1 + Tr Σ2 − 2 Tr (Σ1^½ Σ2 Σ1^½)^½."""
    import scipy.linalg

    s1 = np.diag([4.0, 1.0])
    theta = 0.7
    rot = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    s2 = rot @ s1 @ rot.T
    root = scipy.linalg.sqrtm(s1)
    expected = np.trace(s1) + np.trace(s2) - 2 * np.trace(np.real(scipy.linalg.sqrtm(root @ s2 @ root)))
    got = metrics.frechet_distance(np.zeros(2), s1, np.zeros(2), s2)
    assert got == pytest.approx(expected, rel=1e-8) and got > 0.1


def test_fcd_from_samples_converges_to_closed_form():
    rng = np.random.default_rng(0)
    a = rng.normal(0, 1, (20000, 2))
    b = rng.normal(0, 2, (20000, 2)) + np.array([3.0, 0.0])
    # ‖μ‖² = 9, per dimension (1 + 4 − 2·2) = 1 → 11
    assert metrics.fcd(a, b) == pytest.approx(11.0, rel=0.03)
    assert metrics.fcd(a, a) == pytest.approx(0.0, abs=1e-6)


def test_kid_unbiased_near_zero_for_same_distribution_and_positive_otherwise():
    rng = np.random.default_rng(1)
    same = [metrics.kid(rng.normal(size=(300, 4)), rng.normal(size=(300, 4))) for _ in range(10)]
    assert abs(np.mean(same)) < 0.02
    shifted = metrics.kid(rng.normal(size=(300, 4)), rng.normal(size=(300, 4)) + 1.0)
    assert shifted > 10 * max(abs(np.mean(same)), 1e-3)


def test_precision_recall_extremes():
    rng = np.random.default_rng(2)
    real = rng.normal(size=(200, 3))
    assert metrics.precision_recall(real, real.copy()) == (1.0, 1.0)
    far = rng.normal(size=(200, 3)) + 100.0
    assert metrics.precision_recall(real, far) == (0.0, 0.0)
    # a generator that covers only half the real modes: precision high, recall about half
    two_modes = np.concatenate([rng.normal(size=(200, 3)), rng.normal(size=(200, 3)) + 20])
    p, r = metrics.precision_recall(two_modes, rng.normal(size=(200, 3)))
    assert p > 0.9 and 0.35 < r < 0.65


def test_stratified_subset_takes_per_class():
    labels = np.repeat(np.arange(4), [10, 5, 7, 3])
    idx = metrics.stratified_subset(labels, 4, seed=0)
    assert np.bincount(labels[idx]).tolist() == [4, 4, 4, 3]
    assert len(np.unique(idx)) == len(idx)
