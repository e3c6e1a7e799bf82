"""PAC labeling mathematics: losses, bounds, the threshold search, the oracle, the guarantee."""
import math

import numpy as np
import pytest
from scipy.stats import norm

from assets.pac_labels import method as M
from assets.pac_labels.straightforward import pac_labeling_straightforward, wsr_upper_bound_scan


def _classification_pool(n=3000, seed=0, accuracy_slope=0.6):
    """Items whose AI label is wrong with probability (1 − conf) · slope-ish: conf ~ U(0.5, 1)."""
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.5, 1.0, n)
    y = rng.integers(0, 5, n).astype(float)
    wrong = rng.random(n) < accuracy_slope * (1 - conf) * 2
    yhat = np.where(wrong, (y + 1) % 5, y)
    return y, yhat, conf


# ---------------------------------------------------------------- losses and uncertainty
def test_losses_have_their_closed_forms():
    assert M.zero_one_loss(np.array([1, 2, 3]), np.array([1, 0, 3])).tolist() == [0.0, 1.0, 0.0]
    assert M.squared_loss(np.array([0.0, 1.0]), np.array([0.5, -1.0])).tolist() == [0.25, 4.0]
    assert M.loss_upper_bound("zero_one", np.array([3.0])) == 1.0
    # squared: the worst label in [0, 1] for predictions 0.2 and 1.5 is 0 for 1.5 → 2.25
    assert M.loss_upper_bound("squared", np.array([0.2, 1.5]), (0.0, 1.0)) == pytest.approx(2.25)
    with pytest.raises(M.InputError, match="label_range"):
        M.loss_upper_bound("squared", np.array([0.2]))


def test_uncertainty_breaks_ties_deterministically_and_keeps_the_order():
    conf = np.array([0.9, 0.9, 0.9, 0.5, 0.7])
    u1 = M.uncertainty_from_confidence(conf, seed=3)
    u2 = M.uncertainty_from_confidence(conf, seed=3)
    assert np.array_equal(u1, u2)
    assert np.unique(u1).size == conf.size
    assert np.argsort(u1)[-1] == 3 and np.argsort(u1)[-2] == 4        # lower confidence = more uncertain
    assert np.allclose(u1, 1 - conf, atol=1e-4)


# ---------------------------------------------------------------- confidence bounds
def test_clt_bound_is_the_one_sided_normal_formula():
    z = np.array([0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    expected = z.mean() + norm.isf(0.05) * z.std() / math.sqrt(z.size)
    assert M.ucb_clt(z, 0.05) == pytest.approx(expected)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_wsr_bisection_equals_the_full_grid_scan(seed):
    rng = np.random.default_rng(seed)
    z = (rng.random(400) < 0.08).astype(float) * rng.uniform(0.5, 1.0, 400)
    assert M.ucb_wsr(z, 0.05, 1.0, 20_000) == wsr_upper_bound_scan(z, 0.05, 1.0, 20_000)


def test_wsr_capital_is_non_decreasing_in_the_candidate_mean():
    rng = np.random.default_rng(4)
    x = rng.random(300) * (rng.random(300) < 0.2)
    lam = M.wsr_predictable_lambdas(x, 0.05)
    caps = [M._wsr_log_capital_max(x, lam, m, 0.75) for m in np.linspace(1e-5, 1 - 1e-5, 200)]
    assert np.all(np.diff(caps) >= -1e-12)


def test_wsr_upper_bound_covers_the_mean_with_probability_one_minus_alpha():
    rng = np.random.default_rng(5)
    p, misses, reps = 0.1, 0, 300
    for _ in range(reps):
        x = (rng.random(200) < p).astype(float)
        bound = M.ucb_wsr(x, 0.05, 1.0, 5_000)
        misses += bound < p
    assert misses / reps <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / reps)


def test_wsr_bound_scales_back_to_loss_units():
    rng = np.random.default_rng(6)
    z = rng.random(300) * 0.2
    assert M.ucb_wsr(z * 4.0, 0.05, 4.0, 10_000) == pytest.approx(4.0 * M.ucb_wsr(z, 0.05, 1.0, 10_000))


# ---------------------------------------------------------------- threshold search and labels
def test_fast_and_straightforward_implementations_give_the_same_answer():
    y, yhat, conf = _classification_pool(1500, seed=7)
    u = M.uncertainty_from_confidence(conf, seed=0)
    for ci in ("clt", "wsr"):
        config = M.PACConfig(epsilon=0.05, alpha=0.05, num_draws=300, ci=ci, wsr_grid_size=20_000)
        fast = M.pac_labeling(yhat, u, M.ExpertOracle(y), config, np.random.default_rng(11))
        labels, expert, u_hat = pac_labeling_straightforward(yhat, u, y, config, np.random.default_rng(11))
        assert fast.calibration.u_hat == u_hat
        assert np.array_equal(fast.labels, labels)
        assert np.array_equal(fast.provenance > 0, expert)


def test_no_feasible_threshold_labels_everything():
    """Reference-code bug pinned: with no feasible u, lb_index − 1 wrapped to the LARGEST
    uncertainty (one item labelled). Here every item must be expert-labelled."""
    y, yhat, conf = _classification_pool(200, seed=8)
    u = M.uncertainty_from_confidence(conf)
    config = M.PACConfig(epsilon=0.01, alpha=0.05, num_draws=5, ci="wsr", wsr_grid_size=10_000)
    oracle = M.ExpertOracle(y)
    result = M.pac_labeling(yhat, u, oracle, config, np.random.default_rng(0))
    assert result.calibration.feasible is False and result.calibration.u_hat == -math.inf
    assert oracle.n_bought == len(y)
    assert np.array_equal(result.labels, y)
    assert not np.any(result.provenance == M.AI)


def test_threshold_is_the_largest_feasible_candidate():
    y, yhat, conf = _classification_pool(2000, seed=9)
    u = M.uncertainty_from_confidence(conf)
    config = M.PACConfig(epsilon=0.05, alpha=0.05, num_draws=800, ci="clt")
    oracle = M.ExpertOracle(y)
    cal = M.calibrate_threshold(yhat, u, oracle, config, np.random.default_rng(1))
    assert cal.feasible and cal.ucb_at_u_hat <= config.epsilon
    # recompute the bound at the next candidate: it must exceed ε (bisection found the edge)
    candidates = np.sort(u)
    nxt = candidates[np.searchsorted(candidates, cal.u_hat) + 1]
    losses = np.where(cal.xi, M.zero_one_loss(y[cal.draws], yhat[cal.draws]), 0.0)
    assert M.ucb_clt(losses * (u[cal.draws] < nxt), 0.05) > config.epsilon


def test_provenance_and_ledger_agree_and_ai_labels_are_untouched():
    y, yhat, conf = _classification_pool(1500, seed=10)
    u = M.uncertainty_from_confidence(conf)
    oracle = M.ExpertOracle(y)
    result = M.pac_labeling(yhat, u, oracle, M.PACConfig(num_draws=400, ci="wsr", wsr_grid_size=10_000),
                            np.random.default_rng(2))
    assert np.array_equal(oracle.ledger_reason, result.provenance)
    cal = result.calibration
    sampled = np.unique(cal.draws[cal.xi])
    assert set(np.flatnonzero(result.provenance == M.EXPERT_SAMPLED)) == set(sampled)
    above = set(np.flatnonzero(u >= cal.u_hat)) - set(sampled)
    assert set(np.flatnonzero(result.provenance == M.EXPERT_THRESHOLD)) == above
    ai = result.provenance == M.AI
    assert np.array_equal(result.labels[ai], yhat[ai]) and np.array_equal(result.labels[~ai], y[~ai])


class _TrapLabels:
    """Hidden labels that raise when an item outside `allowed` is read, and refuse bulk reads."""

    def __init__(self, labels, allowed):
        self._labels = np.asarray(labels)
        self._allowed = set(int(i) for i in allowed)
        self.reads = []

    def __len__(self):
        return len(self._labels)

    def __getitem__(self, index):
        index = np.atleast_1d(np.asarray(index))
        forbidden = set(index.tolist()) - self._allowed
        if forbidden:
            raise AssertionError(f"unbought labels read: {sorted(forbidden)[:5]}")
        self.reads.extend(index.tolist())
        return self._labels[index]

    def __array__(self, *args, **kwargs):
        raise AssertionError("bulk read of hidden labels")

    def __iter__(self):
        raise AssertionError("iteration over hidden labels")


def test_the_method_reads_only_labels_it_buys():
    y, yhat, conf = _classification_pool(1200, seed=12)
    u = M.uncertainty_from_confidence(conf)
    config = M.PACConfig(num_draws=300, ci="wsr", wsr_grid_size=10_000)
    reference = M.ExpertOracle(y)
    expected = M.pac_labeling(yhat, u, reference, config, np.random.default_rng(5))
    bought = np.flatnonzero(reference.bought)
    assert 0 < bought.size < y.size

    trap = _TrapLabels(y, allowed=bought)
    result = M.pac_labeling(yhat, u, M.ExpertOracle(trap), config, np.random.default_rng(5))
    assert np.array_equal(result.labels, expected.labels)
    assert sorted(trap.reads) == sorted(bought.tolist())              # each bought label read once

    # the trap is real: forbidding one bought item makes the same run fail
    with pytest.raises(AssertionError, match="unbought labels read"):
        M.pac_labeling(yhat, u, M.ExpertOracle(_TrapLabels(y, allowed=bought[1:])), config,
                       np.random.default_rng(5))


def test_draws_are_with_replacement_and_importance_weighted():
    rng = np.random.default_rng(0)
    draws, xi = M.draw_items(100, 100, np.full(100, 0.5), rng)
    assert np.unique(draws).size < 100                                  # repeats occur
    # E[ℓ ξ / π · 1{U < u}] = L(u): average the estimator over many draws with π = 0.5
    y, yhat, conf = _classification_pool(400, seed=13)
    u = M.uncertainty_from_confidence(conf)
    cut = np.quantile(u, 0.7)
    true_L = float(np.mean(M.zero_one_loss(y, yhat) * (u < cut)))
    pi = np.full(y.size, 0.5)
    estimates = []
    for s in range(400):
        d, x = M.draw_items(y.size, 200, pi, np.random.default_rng(100 + s))
        estimates.append(np.mean(M.zero_one_loss(y[d], yhat[d]) * x / pi[d] * (u[d] < cut)))
    assert np.mean(estimates) == pytest.approx(true_L, abs=3 * np.std(estimates) / math.sqrt(400))


def test_guarantee_holds_over_trials_and_the_plugin_does_not():
    y, yhat, conf = _classification_pool(20000, seed=14)     # K ≪ n: sampled purchases barely lower the error
    u = M.uncertainty_from_confidence(conf)
    eps, alpha, trials = 0.05, 0.05, 200
    violations = {"clt": 0, "plugin": 0}
    for t in range(trials):
        for ci in violations:
            result = M.pac_labeling(yhat, u, M.ExpertOracle(y), M.PACConfig(eps, alpha, 1000, ci),
                                    np.random.default_rng(1000 + t))
            violations[ci] += M.realized_error(y, result.labels, "zero_one") > eps
    assert violations["clt"] / trials <= alpha + 2 * math.sqrt(alpha * (1 - alpha) / trials)
    assert violations["plugin"] / trials >= 0.2


@pytest.mark.parametrize("change, message", [
    ({"epsilon": 0.0}, "epsilon must lie in"), ({"alpha": 1.5}, "alpha must lie in"),
    ({"num_draws": 10_000}, "larger than the pool"), ({"ci": "bootstrap"}, "ci must be one of"),
    ({"loss": "squared", "ci": "wsr"}, "label_range"),
])
def test_bad_parameters_are_named(change, message):
    config = M.PACConfig(**{**dict(epsilon=0.05, alpha=0.05, num_draws=100, ci="clt"), **change})
    with pytest.raises(M.InputError, match=message):
        M.validate_config(config, n_items=500)


def test_oracle_charges_each_item_once():
    oracle = M.ExpertOracle(np.arange(10.0))
    assert oracle.buy(np.array([3, 3, 4]), M.EXPERT_SAMPLED).tolist() == [3.0, 3.0, 4.0]
    oracle.buy(np.array([4, 5]), M.EXPERT_THRESHOLD)
    assert oracle.n_bought == 3
    assert oracle.counts() == {"expert_sampled": 2, "expert_threshold": 1, "expert_calibration": 0}
