"""PAC router: the smoothed threshold, the gate's scale, and known-answer routing and ranking cases."""
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


def test_the_authors_gate_cannot_tell_items_apart_but_the_logit_gate_can():
    """σ on the head puts s in (0, 1); σ(0.1 (s − û)) then differs across items by at most
    0.1 · max σ' · 1 = 0.025 for any û. On the head's logit the same gate spans (0, 1)."""
    s = np.linspace(1e-6, 1 - 1e-6, 201)
    spreads = [np.ptp(R.gate(s, u, 0.1)) for u in np.linspace(-100, 100, 401)]
    assert max(spreads) <= 0.025 + 1e-12 and max(spreads) > 0.024
    logits = np.linspace(-60, 60, 201)
    assert np.ptp(R.gate(logits, 0.0, 0.1)) > 0.99
    lo, hi = R.bracket(logits, 0.1)
    assert (lo, hi) == (-160.0, 160.0) and R.gate(logits, lo, 0.1).min() > 1 - 1e-4
    with pytest.raises(ValueError, match="head"):
        R.RouterConfig(costs=(0.1, 0.2), head="tanh")


def test_router_learns_an_uncertainty_that_ranks_the_errors():
    """Known answer: the cheap model is wrong exactly when x_0 > 0.7 and both report the same
    confidence, so only the features reveal the errors. The spec's parameterisation (logit head,
    σ(0.1 (u − û))), trained as configured (50 epochs), ranks the routed errors on top and its gate
    separates the items; the authors' sigmoid head keeps a gate spread below 0.025."""
    import torch

    from assets.pac_labels import benchmark as B

    rng = np.random.default_rng(0)
    n, C = 300, 3
    X = rng.random((n, 5))
    y = rng.integers(0, C, n)
    yhats = np.stack([np.where(X[:, 0] > 0.7, (y + 1) % C, y), np.where(X[:, 1] > 0.9, (y + 2) % C, y)], axis=1)
    confs = np.full((n, 2), 0.9)                            # confidence carries no information
    history = []
    config = R.RouterConfig(costs=(0.1, 0.5), epsilon=0.05, epochs=50, batch_size=50)
    state = R.train_router(torch, X, yhats, confs, y, C, config, seed=0, history=history)
    _, routed, logits = R.route(torch, state, X, yhats, confs, C)
    wrong = routed != y
    assert 0 < wrong.sum() < n and B.ranking_auc(logits, wrong) >= 0.85
    assert history[-1]["gate_spread"] >= 0.5 and len(history) == 50
    authors = []
    sigmoid_head = R.RouterConfig(costs=(0.1, 0.5), epsilon=0.05, epochs=5, batch_size=50, head="sigmoid")
    R.train_router(torch, X, yhats, confs, y, C, sigmoid_head, seed=0, history=authors)
    assert max(h["gate_spread"] for h in authors if h["gate_spread"] is not None) <= 0.025


def test_ranking_auc_known_values():
    from assets.pac_labels import benchmark as B

    assert B.ranking_auc(np.array([0.1, 0.2, 0.8, 0.9]), np.array([0, 0, 1, 1])) == 1.0
    assert B.ranking_auc(np.array([0.9, 0.8, 0.2, 0.1]), np.array([0, 0, 1, 1])) == 0.0
    assert B.ranking_auc(np.array([0.5, 0.5]), np.array([0, 1])) == 0.5
    assert np.isnan(B.ranking_auc(np.array([0.5, 0.5]), np.array([1, 1])))


def _pac_rows(model, costs, violations=0.0):
    import pandas as pd

    return pd.DataFrame({"dataset_id": "digits", "model": model, "ci": "wsr", "method": "pac",
                         "trial": np.arange(len(costs)), "cost": costs, "error": 0.01})


def test_router_cost_is_judged_by_a_ci_against_single_models_only():
    import pandas as pd

    from assets.pac_labels import benchmark as B

    rng = np.random.default_rng(2)
    outcomes = pd.concat([_pac_rows("router", 0.40 + 0.01 * rng.standard_normal(50)),
                          _pac_rows("logreg", 0.50 + 0.01 * rng.standard_normal(50)),
                          _pac_rows("gnb", 0.80 + 0.01 * rng.standard_normal(50)),
                          _pac_rows("router_routed_confidence", 0.10 + 0.01 * rng.standard_normal(50))])
    summary = B.summarize(outcomes.assign(save=0.5, n_bought=0.0), 0.05, 0.05)
    pac = summary[summary["method"] == "pac"]
    claim = B.router_cost_claim(pac, outcomes, 0.05)
    assert claim.holds and "best single model (logreg)" in claim.measured_value and "CI" in claim.measured_value
    # a router that is only as cheap as the best single model does not hold
    tied = pd.concat([outcomes[outcomes["model"] != "router"],
                      _pac_rows("router", 0.50 + 0.01 * rng.standard_normal(50))])
    summary = B.summarize(tied.assign(save=0.5, n_bought=0.0), 0.05, 0.05)
    assert not B.router_cost_claim(summary[summary["method"] == "pac"], tied, 0.05).holds
    note = B.router_ablation_observation(pac, {"router": {"auc": 0.7}})
    assert note.kind == "observation" and "router_routed_confidence: cost 0.0" in note.measured_value


def test_router_cost_fails_when_the_ci_straddles_zero_and_names_its_trials():
    """The router's mean cost is below the best single model's (the point rule would pass), but
    the per-trial differences spread so that the 90 % CI of router − logreg reaches above 0."""
    import pandas as pd

    from assets.pac_labels import benchmark as B

    rng = np.random.default_rng(3)
    logreg = 0.50 + 0.01 * rng.standard_normal(20)
    router = logreg - 0.01 + 0.2 * rng.standard_normal(20)
    router += (logreg.mean() - 0.01) - router.mean()                  # mean exactly 0.01 below logreg's
    outcomes = pd.concat([_pac_rows("router", router), _pac_rows("logreg", logreg),
                          _pac_rows("gnb", 0.80 + 0.01 * rng.standard_normal(20))])
    summary = B.summarize(outcomes.assign(save=0.5, n_bought=0.0), 0.05, 0.05)
    pac = summary[summary["method"] == "pac"]
    r = pac.set_index("model")["cost_mean"]
    assert r["router"] < r["logreg"] < r["gnb"]
    claim = B.router_cost_claim(pac, outcomes, 0.05)
    assert not claim.holds and "router 0.489 vs best single model (logreg)" in claim.measured_value
    assert "vs gnb" in claim.measured_value
    assert claim.seeds == "PAC trials 0–19 (20)"
    assert B.trials_label(summary, outcomes) == "PAC trials 0–19 (20)"
    assert B.trials_label(summary) == "PAC trials 0–19 (20)"          # from the trial counts alone
