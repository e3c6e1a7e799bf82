"""The mathematics of fair_selective: the decomposition identity, the degenerate accepted TPR,
the ring buffer, a_K / w / c_g on hand cases, the myopic premise, GAE, and the poisoning test
(rewriting every hidden label leaves training bit-identical)."""
from __future__ import annotations

import numpy as np
import pytest

from assets.fair_selective import agents as ag
from assets.fair_selective import env as envs
from assets.fair_selective import fairness as fm


def random_log(rng, n, soft=False):
    g = rng.integers(0, 2, n)
    a = rng.integers(0, 2, n)
    y = rng.integers(0, 2, n)
    yhat = rng.random(n) if soft else rng.integers(0, 2, n)
    return g, a, y, np.where(a == 1, y, yhat)


@pytest.mark.parametrize("measure", fm.MEASURES)
@pytest.mark.parametrize("soft", [False, True])
def test_identity_holds_on_random_logs(measure, soft):
    rng = np.random.default_rng(0)
    for _ in range(200):
        g, a, y, yt = random_log(rng, int(rng.integers(20, 400)), soft)
        dec = fm.decomposition(fm.group_sums(g, a, y, yt), measure)
        assert dec["residual"] <= 1e-9
        assert dec["delta_true"] == pytest.approx(fm.delta(fm.group_sums(g, a, y, yt), measure, "full"))


def test_bias_closed_forms_on_a_hand_case():
    # group 0: 4 rows, a = [1,1,0,0], y = [1,0,1,1], ŷ on rejected = [0,1] → e_0 = ((0−1)+(1−1))/2 = −0.5
    g = np.array([0, 0, 0, 0, 1, 1])
    a = np.array([1, 1, 0, 0, 1, 0])
    y = np.array([1, 0, 1, 1, 1, 0])
    yt = np.array([1, 0, 0, 1, 1, 1])
    dec = fm.decomposition(fm.group_sums(g, a, y, yt), "accuracy")
    assert dec["e"][0] == pytest.approx(-0.5) and dec["alpha"][0] == pytest.approx(0.5)
    assert dec["b"][0] == pytest.approx(0.5 * -0.5)
    # TPR: U_true_0 = 1/3, E[ỹ|0] = 2/4 → b_0 = (1/3)·0.5·(−0.5)/0.5 = −1/6; U_imp_0 = 1/2
    tpr = fm.decomposition(fm.group_sums(g, a, y, yt), "tpr")
    assert tpr["b"][0] == pytest.approx(-1 / 6)
    assert fm.utilities(fm.group_sums(g, a, y, yt), "tpr", "imputation")[0] == pytest.approx(0.5)
    qual = fm.decomposition(fm.group_sums(g, a, y, yt), "qualification")
    assert qual["b"][0] == pytest.approx(+0.25)


def test_accepted_tpr_is_identically_zero():
    rng = np.random.default_rng(1)
    for _ in range(200):
        g, a, y, yt = random_log(rng, 300)
        sums = fm.group_sums(g, a, y, yt)
        if (sums[:, 3] > 0).all():
            assert fm.delta(sums, "tpr", "accepted") == 0.0
    # accuracy on accepted rows is precision, not degenerate
    g, a, y, yt = random_log(np.random.default_rng(2), 500)
    assert fm.delta(fm.group_sums(g, a, y, yt), "accuracy", "accepted") != 0.0


@pytest.mark.parametrize("size", [1, 7, 50])
def test_ring_buffer_equals_recount(size):
    rng = np.random.default_rng(3)
    g, a, y, yt = random_log(rng, 400, soft=True)
    win = fm.RingWindow(size)
    for t in range(len(g)):
        win.push(int(g[t]), int(a[t]), int(y[t]), float(yt[t]))
        ref = fm.recount_window(g, a, y, yt, t, size)
        assert np.abs(win.sums - ref).max() <= 1e-9
        assert np.abs(win.recount() - ref).max() <= 1e-9
        for m in fm.MEASURES:
            assert fm.delta_scalar(win.sums.tolist(), m, "imputation") == pytest.approx(
                fm.delta(ref, m, "imputation"), abs=1e-12)


def test_ring_fill_then_push_matches_recount():
    rng = np.random.default_rng(4)
    g, a, y, yt = random_log(rng, 300)
    win = fm.RingWindow(100)
    win.fill(g[:100], a[:100], y[:100], yt[:100])
    for t in range(100, 300):
        win.push(int(g[t]), int(a[t]), int(y[t]), float(yt[t]))
    assert np.array_equal(win.sums, fm.group_sums(g[200:], a[200:], y[200:], yt[200:]))


def test_coverage_weights_and_renyi_constants_on_hand_cases():
    assert fm.coverage(np.array([[0.5], [0.5]]))[0] == pytest.approx(0.75)
    assert fm.coverage(np.array([[0.2, 0.0], [0.5, 0.0]])).tolist() == pytest.approx([0.6, 0.0])
    assert fm.importance_weights(np.array([0.2]), np.array([0.5]))[0] == pytest.approx(1.6)
    with pytest.raises(fm.FairnessInputError, match="a_K = 0"):
        fm.importance_weights(np.array([0.2, 0.1]), np.array([0.5, 0.0]))
    # group 0: a = [1, 0, 0, 0] (r = 0.75), a_K = [0.4, 0.4, 0.8, 0.8] → c_0 = 0.6 / 0.75 = 0.8
    # group 1: a = [1, 0] (r = 0.5), a_K = [0.5, 0.3] → c_1 = 0.4 / 0.5 = 0.8; TPR divides by mean ỹ
    group = np.array([0, 0, 0, 0, 1, 1])
    action = np.array([1, 0, 0, 0, 1, 0])
    a_k = np.array([0.4, 0.4, 0.8, 0.8, 0.5, 0.3])
    yt = np.array([1, 0, 1, 0, 1, 1])
    assert fm.renyi_weights(group, action, a_k, yt, "accuracy").tolist() == pytest.approx([0.8, 0.8])
    assert fm.renyi_weights(group, action, a_k, yt, "tpr").tolist() == pytest.approx([1.6, 0.8])
    pi = np.array([0.5, 0.5, 0.0, 0.0, 1.0, 0.0])
    # values (1−π)²/a_K: g0 [0.625, 0.625, 1.25, 1.25] mean 0.9375; g1 [0, 1/0.3] mean 1.6667
    assert fm.renyi_term(pi, a_k, group, np.array([0.8, 0.8])) == pytest.approx((0.9375 + 5 / 3) / 2)


def test_overlap_bound_is_cauchy_schwarz_and_reweights_exactly():
    rng = np.random.default_rng(5)
    err = rng.normal(size=1000)
    w = rng.exponential(size=1000)
    out = fm.overlap_bound(err, w)
    rho = w / w.mean()
    assert out["e_iw"] == pytest.approx(float((rho * err).mean()))
    assert abs(out["e_iw"]) <= out["bound"]
    assert out["d2"] >= 1.0    # E[ρ²] ≥ (E ρ)² = 1


def test_certificate_needs_both_halves():
    assert fm.certificate(0.02, 0.02, 0.05)
    assert not fm.certificate(0.03, 0.0, 0.05)
    assert not fm.certificate(0.0, 0.03, 0.05)


def test_myopic_premise_is_the_exact_hand_value():
    spec = envs.lending_spec()
    tpr0 = (.2 * .6 + .3 * .65 + .3 * .7) / (.1 * .2 + .1 * .45 + .2 * .6 + .3 * .65 + .3 * .7)
    tpr1 = (.3 * .75) / (.1 * .1 + .1 * .1 + .2 * .25 + .3 * .4 + .3 * .75)
    assert envs.myopic_tpr_gap(spec) == pytest.approx(tpr1 - tpr0, abs=1e-12)
    assert abs(envs.myopic_tpr_gap(envs.hiring_spec())) >= 0.10
    for spec in (envs.lending_spec(), envs.hiring_spec()):
        for g in (0, 1):
            assert spec.p_state[spec.states[:, 0] == g].sum() == pytest.approx(1.0)


def test_gae_with_lambda_one_is_return_to_go():
    r = np.array([1.0, 0.0, 2.0, -1.0])
    v = np.array([0.5, 0.2, 0.1, 0.3])
    done = np.array([False, True, False, False])
    adv, ret = ag.gae(r, v, done, last_value=0.7, gamma=1.0, lam=1.0)
    assert ret.tolist() == pytest.approx([1.0, 0.0, 2.0 - 1.0 + 0.7, -1.0 + 0.7])
    assert adv.tolist() == pytest.approx((ret - v).tolist())


def test_minmax_and_standardise_rows():
    v = np.array([[1.0, 3.0, 2.0], [5.0, 5.0, 5.0]])
    assert ag.minmax(v).tolist() == [[0.0, 1.0, 0.5], [0.0, 0.0, 0.0]]
    s = ag.standardise(np.array([[1.0, 2.0, 3.0]]))
    assert s.tolist()[0] == pytest.approx([-1.0, 0.0, 1.0])


def test_sellf_uses_half_omega_and_naive_imputation_omega():
    assert ag.AgentConfig(kind="sellf", omega=0.05).threshold == 0.025
    assert ag.AgentConfig(kind="naive_imp", omega=0.05).threshold == 0.05


def _train(kind, poison, spec, pool):
    cfg = ag.AgentConfig(kind=kind, beta1=2.0, beta2=0.05 if kind == "sellf" else 0.0, total_steps=384,
                         n_steps=128, epochs=2, predictor_steps=5)
    return ag.train_agent(spec, pool, cfg, seed=3, window=100, horizon=150, resource0=50.0, poison_hidden=poison)


@pytest.mark.parametrize("kind", ["sellf", "naive_acc", "naive_imp", "ppo"])
def test_rewriting_hidden_labels_leaves_training_bit_identical(kind, one_torch_thread):
    spec = envs.lending_spec()
    pool = envs.sample_pool(spec, 150, np.random.default_rng(0))
    clean, poisoned = _train(kind, False, spec, pool), _train(kind, True, spec, pool)
    assert clean["state"].keys() == poisoned["state"].keys()
    for key in clean["state"]:
        assert clean["state"][key].equal(poisoned["state"][key]), key
    # the poisoning is real: the evaluator's true Δ differs
    assert [r["delta_true"] for r in clean["curve"]] != [r["delta_true"] for r in poisoned["curve"]]


def test_the_oracle_does_read_hidden_labels(one_torch_thread):
    spec = envs.lending_spec()
    pool = envs.sample_pool(spec, 150, np.random.default_rng(0))
    clean, poisoned = _train("oracle", False, spec, pool), _train("oracle", True, spec, pool)
    assert any(not clean["state"][k].equal(poisoned["state"][k]) for k in clean["state"])


def test_deep_predictor_gpu_variant_trains_at_tiny_size(one_torch_thread):
    spec = envs.hiring_spec()
    pool = envs.sample_pool(spec, 100, np.random.default_rng(0))
    cfg = ag.AgentConfig(kind="sellf", beta1=5.0, beta2=0.1, predictor="deep", total_steps=256, n_steps=128,
                         epochs=1, predictor_steps=3)
    out = ag.train_agent(spec, pool, cfg, seed=0, window=64, horizon=100, resource0=20.0)
    assert out["memory_rows"] > 0 and len(out["curve"]) == 2
    assert all(np.isfinite(v.double().numpy()).all() for v in out["state"].values())
