"""PAC router: the smoothed threshold and a known-answer routing case."""
import numpy as np
import pytest

from assets.pac_labels import router as R


def test_smoothed_threshold_solves_the_error_constraint():
    rng = np.random.default_rng(0)
    weights = np.full((200, 2), 0.5)
    errors = (rng.random((200, 2)) < 0.3).astype(float)
    scores = rng.random(200)
    u = R._solve_threshold(weights, errors, scores, epsilon=0.05)
    gate = 1 / (1 + np.exp(-R.SIGMOID_SCALE * (scores - u)))
    assert np.mean((weights * errors).sum(1) * (1 - gate)) == pytest.approx(0.05, abs=1e-6)
    # no error at all: the constraint cannot bind, there is no root
    assert R._solve_threshold(weights, np.zeros_like(errors), scores, 0.05) is None


def test_router_prefers_the_cheap_model_when_both_are_always_right():
    import torch

    rng = np.random.default_rng(1)
    n, C = 200, 3
    X = rng.random((n, 5))
    y = rng.integers(0, C, n)
    yhats = np.stack([y, y], axis=1)                       # both models are always correct
    confs = np.full((n, 2), 0.9)
    config = R.RouterConfig(costs=(0.1, 0.5), epsilon=0.05, epochs=5, batch_size=50)
    state = R.train_router(torch, X, yhats, confs, y, C, config, seed=0)
    model, routed, logits = R.route(torch, state, X, yhats, confs, C)
    assert np.all(model == 0)                              # every item goes to the cheaper model
    assert np.array_equal(routed, y.astype(float)) and np.isfinite(logits).all()
    again = R.train_router(torch, X, yhats, confs, y, C, config, seed=0)
    assert all(np.array_equal(state[k], again[k]) for k in state)          # deterministic given the seed
