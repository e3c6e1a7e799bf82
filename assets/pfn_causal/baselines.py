"""Classical estimators of E[Y | do(X_S = v)] on the same D_obs — numpy + scikit-learn.

- g_formula: the oracle-graph plug-in (a lower bound for what a graph-aware method can do):
  one HistGradientBoosting regressor per non-root covariate on its true parents and one for Y,
  then Monte-Carlo simulation of the intervened SCM in topological order — clamped columns set
  to v, other non-roots f̂(parents) + a resampled residual, roots resampled from D_obs — and
  E[Y | do] = mean of f̂_Y(parents of Y) over the simulated rows;
- s_learner: graph-agnostic — f̂(x) = E[Y | X = x] on all covariates, then
  μ̂ = mean over the observed rows of f̂(x with x_S := v) (ignores that clamping X_S changes
  the descendants of S among the other covariates);
- naive: E[Y | X_S = v] — a regression of Y on X_S alone, evaluated at v (confounded).

Shapes: x (n, d), y (n,), masks / values (Q, d) bool / float; all in the same units.
No causal library: DoWhy's gcm would refit the same regressions; EconML / causalml / DoubleML
give single-treatment contrasts, not joint-intervention levels (NOTES.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class HGBConfig:
    max_iter: int = 40
    learning_rate: float = 0.15
    max_leaf_nodes: int = 8
    min_samples_leaf: int = 5

    def make(self):
        from sklearn.ensemble import HistGradientBoostingRegressor

        return HistGradientBoostingRegressor(max_iter=self.max_iter, learning_rate=self.learning_rate,
                                             max_leaf_nodes=self.max_leaf_nodes,
                                             min_samples_leaf=self.min_samples_leaf, early_stopping=False,
                                             random_state=0)


def _fit(config: HGBConfig, x: np.ndarray, y: np.ndarray):
    return config.make().fit(x, y)


def g_formula(x: np.ndarray, y: np.ndarray, parents: list[list[int]], y_parents: list[int], order: list[int],
              masks: np.ndarray, values: np.ndarray, draws: int, rng: np.random.Generator,
              config: HGBConfig) -> np.ndarray:
    """Oracle-graph g-formula (module docstring). parents[c]: the parent columns of covariate
    c; y_parents: Y's parent columns; order: the covariate columns in a topological order.
    Returns μ̂ (Q,)."""
    n, d = x.shape
    Q = masks.shape[0]
    models, residuals = {}, {}
    for c in order:
        if parents[c]:
            models[c] = _fit(config, x[:, parents[c]], x[:, c])
            residuals[c] = x[:, c] - models[c].predict(x[:, parents[c]])
    rows = rng.integers(0, n, size=draws)
    sim = np.broadcast_to(x[rows][None], (Q, draws, d)).copy()                    # roots resampled jointly
    for c in order:
        clamp = masks[:, c]
        if c in models:
            pred = models[c].predict(sim[:, :, parents[c]].reshape(Q * draws, -1)).reshape(Q, draws)
            sim[:, :, c] = pred + residuals[c][rng.integers(0, n, size=(Q, draws))]
        sim[clamp, :, c] = values[clamp, c][:, None]
    if not y_parents:
        return np.full(Q, float(y.mean()))
    model_y = _fit(config, x[:, y_parents], y)
    return model_y.predict(sim[:, :, y_parents].reshape(Q * draws, -1)).reshape(Q, draws).mean(axis=1)


def s_learner(x: np.ndarray, y: np.ndarray, masks: np.ndarray, values: np.ndarray, config: HGBConfig) -> np.ndarray:
    """Graph-agnostic S-learner (module docstring). Returns μ̂ (Q,)."""
    n, d = x.shape
    Q = masks.shape[0]
    model = _fit(config, x, y)
    grid = np.broadcast_to(x[None], (Q, n, d)).copy()
    grid = np.where(masks[:, None, :], values[:, None, :], grid)
    return model.predict(grid.reshape(Q * n, d)).reshape(Q, n).mean(axis=1)


def naive(x: np.ndarray, y: np.ndarray, masks: np.ndarray, values: np.ndarray, config: HGBConfig) -> np.ndarray:
    """E[Y | X_S = v] by a regression of Y on X_S alone (module docstring). Returns μ̂ (Q,)."""
    out = np.zeros(masks.shape[0])
    keys = [tuple(np.flatnonzero(m)) for m in masks]
    for cols in sorted(set(keys)):
        rows = [i for i, k in enumerate(keys) if k == cols]
        model = _fit(config, x[:, list(cols)], y)
        out[rows] = model.predict(values[np.ix_(rows, list(cols))])
    return out


def column_graph(adjacency: np.ndarray, perm: np.ndarray) -> tuple[list[list[int]], list[int], list[int]]:
    """(parents per covariate column, Y's parent columns, covariate columns in topological
    order) of an SCM over nodes 0..d (node d = Y) shown with column c = node perm[c]."""
    d = len(perm)
    column_of = {int(node): c for c, node in enumerate(perm)}
    parents = [[column_of[int(j)] for j in np.flatnonzero(adjacency[:d, perm[c]])] for c in range(d)]
    y_parents = [column_of[int(j)] for j in np.flatnonzero(adjacency[:d, d])]
    order = [column_of[node] for node in range(d)]
    return parents, y_parents, order
