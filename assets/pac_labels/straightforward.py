"""A straightforward re-implementation of the reference algorithm, for comparison only.

Same inputs and the same random draws as `method.pac_labeling` (it calls `method.draw_items`),
but written the plain way the authors' code is: a Python loop over the sampled items, the
per-threshold loss vector recomputed from scratch, and the WSR bound found by scanning the
(1e5-point) grid from its low end until the first rejected value, recomputing the capital
process for every grid value. Used by benchmarks/pac_labels_bench.py and by a test that
pins equal answers. Pure numpy/scipy.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm

from assets.pac_labels import method as M


def wsr_upper_bound_scan(z: np.ndarray, alpha: float, upper: float, grid_size: int = 100_000,
                         c: float = 0.75) -> float:
    """Largest grid value not rejected, found by a linear scan of the grid (O(K · G))."""
    x = np.clip(np.asarray(z, dtype=float) / upper, 0.0, 1.0)
    K = x.size
    t = np.arange(1, K + 1)
    mu_hat = (0.5 + np.cumsum(x)) / (1 + t)
    sigma2 = (0.25 + np.cumsum((x - mu_hat) ** 2)) / (1 + t)
    sigma2_prev = np.append(0.25, sigma2[:-1])
    lam = np.sqrt(2 * np.log(2 / alpha) / (K * sigma2_prev))
    grid = np.linspace(1e-5, 1 - 1e-5, grid_size)
    threshold = math.log(1 / alpha)
    last_accepted = None
    for m in grid:
        capital = np.cumsum(np.log1p(-np.minimum(lam, c / (1 - m)) * (x - m)))
        if capital.max() < threshold:
            last_accepted = m
        elif last_accepted is not None:
            break
    return float((grid[0] if last_accepted is None else last_accepted) * upper)


def pac_labeling_straightforward(yhat, uncertainty, hidden_labels, config: M.PACConfig,
                                 rng: np.random.Generator, pi=None):
    """(labels (n,), expert mask (n,), û). hidden_labels are indexed only at bought items."""
    yhat = np.asarray(yhat, dtype=float)
    uncertainty = np.asarray(uncertainty, dtype=float)
    n = len(yhat)
    pi = np.ones(n) if pi is None else np.asarray(pi, dtype=float)
    draws, xi = M.draw_items(n, config.num_draws, pi, rng)
    labels = yhat.copy()
    expert = np.zeros(n, dtype=bool)
    losses = np.zeros(len(draws))
    loss = M.loss_fn(config.loss)
    for k in range(len(draws)):
        i = draws[k]
        if xi[k]:
            expert[i] = True
            labels[i] = hidden_labels[i]
            losses[k] = loss(np.array([labels[i]]), np.array([yhat[i]]))[0] / pi[i]
    upper = M.loss_upper_bound(config.loss, yhat, config.label_range) / pi.min() if config.ci == "wsr" else 1.0
    lams = np.sort(uncertainty)
    lo, hi = 0, n - 1
    while lo <= hi:
        j = (lo + hi) // 2
        z = np.array([losses[k] * (uncertainty[draws[k]] < lams[j]) for k in range(len(draws))])
        if config.ci == "clt":
            bound = z.mean() + norm.isf(config.alpha) * z.std() / math.sqrt(len(z))
        else:
            bound = wsr_upper_bound_scan(z, config.alpha, upper, config.wsr_grid_size, config.wsr_c)
        if bound > config.epsilon:
            hi = j - 1
        else:
            lo = j + 1
    u_hat = -math.inf if lo == 0 else lams[lo - 1]
    for i in range(n):
        if uncertainty[i] >= u_hat:
            expert[i] = True
            labels[i] = hidden_labels[i]
    return labels, expert, u_hat
