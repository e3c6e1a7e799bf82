"""DiSPaT's mathematics: f′, f*, the variational identity, the JS GAN form, toy self-play,
calibration and the paired bootstrap."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from assets.dispat import method as M

P = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
Q = np.array([0.3, 0.1, 0.2, 0.2, 0.2])


@pytest.mark.parametrize("f", M.F_NAMES)
def test_f_prime_is_the_derivative_of_f(f):
    r = torch.tensor([0.2, 0.7, 1.0, 1.9, 4.5], dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(M.f_value(f, r).sum(), r)
    assert torch.allclose(M.f_prime_log(f, torch.log(r.detach())), grad, atol=1e-10)


@pytest.mark.parametrize("f", M.F_NAMES)
def test_conjugate_is_the_legendre_transform(f):
    # f*(t) = sup_r (t r − f(r)), attained at r with f′(r) = t: check on a fine grid of r
    r = torch.linspace(1e-4, 30, 300_001, dtype=torch.float64)
    for r0 in (0.3, 1.0, 2.5):
        t = M.f_prime_log(f, torch.log(torch.tensor(r0, dtype=torch.float64)))
        sup = float((t * r - M.f_value(f, r)).max())
        assert M.f_conjugate(f, t).item() == pytest.approx(sup, abs=1e-5)
        # the closed form f*(f′(r)) equals Fenchel–Young's r f′(r) − f(r)
        u = torch.log(torch.tensor(r0, dtype=torch.float64))
        fy = r0 * t - M.f_value(f, torch.tensor(r0, dtype=torch.float64))
        assert M.f_conjugate_of_prime_log(f, u).item() == pytest.approx(fy.item(), abs=1e-12)


@pytest.mark.parametrize("f", M.F_NAMES)
def test_variational_identity_at_the_true_ratio(f):
    """L_f = −D_f(P‖Q) exactly when r = P/Q (exact expectations over 5 outcomes)."""
    u = torch.log(torch.as_tensor(P / Q))
    loss = M.f_loss(f, u, u, weights_data=torch.as_tensor(P), weights_gen=torch.as_tensor(Q))
    assert loss.item() == pytest.approx(-M.f_divergence(f, P, Q), abs=1e-12)
    # any other critic gives a looser bound: L_f(r) ≥ −D_f
    for scale in (0.5, 0.9, 1.3):
        worse = M.f_loss(f, scale * u, scale * u, weights_data=torch.as_tensor(P), weights_gen=torch.as_tensor(Q))
        assert worse.item() > -M.f_divergence(f, P, Q)


def test_known_divergences():
    kl = float(np.sum(P * np.log(P / Q)))
    assert M.f_divergence("kl", P, Q) == pytest.approx(kl)
    m = (P + Q) / 2
    js = 0.5 * np.sum(P * np.log(P / m)) + 0.5 * np.sum(Q * np.log(Q / m))
    assert M.f_divergence("js", P, Q) == pytest.approx(2 * js)          # this f is 2·JSD
    assert M.f_divergence("chi2", P, Q) == pytest.approx(float(np.sum((P - Q) ** 2 / Q)))


def test_js_gan_form():
    g = torch.Generator().manual_seed(0)
    ud, ug = torch.randn(50, generator=g) * 3, torch.randn(70, generator=g) * 3
    assert M.js_gan_loss(ud, ug).item() == pytest.approx(M.f_loss("js", ud, ug).item() + 2 * math.log(2), abs=1e-6)
    # log r is clipped to ±10 for every f
    big = torch.tensor([50.0])
    assert M.f_loss("kl", big, big).item() == pytest.approx(M.f_loss("kl", big.clamp(max=10), big.clamp(max=10)).item())


@pytest.mark.parametrize("f", M.F_NAMES)
def test_self_play_on_a_categorical_toy_converges_to_the_data(f):
    """β = 1: the round's minimiser is the data distribution, for every f."""
    history = M.toy_self_play(P, np.full(5, 0.2), f=f, beta=1.0, rounds=3, steps=150, lr=0.05)
    tv = [0.5 * np.abs(h - P).sum() for h in history]
    assert tv[0] > 0.1 and tv[-1] < 0.01


@pytest.mark.parametrize("f", ["js", "kl"])
def test_small_beta_self_play_converges_with_small_steps(f):
    """β = 0.1 (the default): small SGD steps per round still converge to the data."""
    history = M.toy_self_play(P, np.full(5, 0.2), f=f, beta=0.1, rounds=20, steps=20, lr=2.0, optimizer="sgd")
    tv = [0.5 * np.abs(h - P).sum() for h in history]
    assert tv[-1] < 0.005 and tv[-1] < tv[5] < tv[0]


def test_self_play_fixed_point_is_the_data():
    """At θ = θt with p_θt = p_data the gradient of L_f vanishes (for every f)."""
    for f in M.F_NAMES:
        logits = torch.log(torch.as_tensor(P)).clone().requires_grad_(True)
        ref = torch.log_softmax(logits, 0).detach()
        u = 0.1 * (torch.log_softmax(logits, 0) - ref)
        loss = M.f_loss(f, u, u, weights_data=torch.as_tensor(P), weights_gen=torch.exp(ref))
        (grad,) = torch.autograd.grad(loss, logits)
        assert grad.abs().max().item() < 1e-12
    # away from the data, the JS gradient at θ = θt is β/2 times the MLE gradient
    q = torch.full((5,), 0.2, dtype=torch.float64)
    logits = torch.log(q).clone().requires_grad_(True)
    ref = torch.log_softmax(logits, 0).detach()
    u = 0.1 * (torch.log_softmax(logits, 0) - ref)
    (g_js,) = torch.autograd.grad(M.f_loss("js", u, u, weights_data=torch.as_tensor(P), weights_gen=q), logits)
    logits2 = torch.log(q).clone().requires_grad_(True)
    (g_mle,) = torch.autograd.grad(-(torch.as_tensor(P) * torch.log_softmax(logits2, 0)).sum(), logits2)
    assert torch.allclose(g_js, 0.05 * g_mle, atol=1e-12)


# f*(f′(e^u)) has slope f″(1) at u = 0: KL 1, JS 1/2, χ² 2
SLOPE = {"kl": 1.0, "js": 0.5, "chi2": 2.0}
ALLOWED = torch.tensor([True, False, True, True, False, False])       # the constrained decoder's set
LOGITS = torch.tensor([0.3, 1.2, -0.4, 0.1, 0.8, -1.0], dtype=torch.float64)


def _sample_term_grad(f: str, beta: float, renormalised: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Exact ∇θ E_{x∼q_θt}[f*(f′(r_θ(x)))] at θ = θt for a 6-outcome categorical policy whose samples
    come from the masked, renormalised distribution q_θt (the schema-constrained sampler); the score in
    r is log p (unconstrained) or log q (method.allowed_logprobs). Returns (grad, p, q)."""
    theta = LOGITS.clone().requires_grad_(True)
    targets = torch.arange(6)
    mask = ALLOWED.expand(6, 6)

    def score(logits):
        log_p = torch.log_softmax(logits, 0)
        if not renormalised:
            return log_p
        q, _ = M.allowed_logprobs(log_p.expand(6, 6), targets, mask)
        return q

    p = torch.softmax(LOGITS, 0)
    q = torch.where(ALLOWED, p, 0.0) / p[ALLOWED].sum()
    u = beta * (score(theta) - score(LOGITS).detach())
    term = M.f_conjugate_of_prime_log(f, u)
    (grad,) = torch.autograd.grad((q * torch.where(ALLOWED, term, 0.0)).sum(), theta)
    return grad, p, q


@pytest.mark.parametrize("f", M.F_NAMES)
def test_constrained_samples_with_an_unconstrained_score_bias_the_sample_term(f):
    """Samples from q = p·1_A / P(A), score log p: E_q[∇ log p_θ] = ∇ log P_θ(A) = q − p (softmax
    logits), so the sample term's gradient at θ = θt is f″(1)·β·(q − p), not 0; descending it lowers
    P(A) — mass leaves the valid tokens. Renormalised over A (score log q) it is exactly 0."""
    beta = 0.1
    grad, p, q = _sample_term_grad(f, beta, renormalised=False)
    expected = SLOPE[f] * beta * (q - p)                    # closed form of f″(1) β ∇log P(A)
    assert torch.allclose(grad, expected, atol=1e-12)
    assert expected.abs().max() > 1e-2
    mass = p[ALLOWED].sum()
    step = LOGITS - 1.0 * grad                              # one gradient-descent step on the sample term
    assert torch.softmax(step, 0)[ALLOWED].sum() < mass     # lowers P(allowed)
    grad_renorm, _, _ = _sample_term_grad(f, beta, renormalised=True)
    assert grad_renorm.abs().max() < 1e-12


def test_the_data_term_offsets_the_bias_only_on_the_same_contexts():
    """With data = q on the allowed set (one context), the unconstrained data term's gradient is
    −f″(1)·β·∇log P(A): it cancels the sample term's bias exactly. In a sequence the two terms see
    different prefixes (data rows vs the model's samples), so what is left is f″(1)·β·(E_gen − E_data)
    [∇ log P(A | prefix)]: zero only when the sampled prefixes match the data's."""
    beta = 0.1
    grad, p, q = _sample_term_grad("js", beta, renormalised=False)
    theta = LOGITS.clone().requires_grad_(True)
    u = beta * (torch.log_softmax(theta, 0) - torch.log_softmax(LOGITS, 0))
    (g_data,) = torch.autograd.grad(-(q * M.f_prime_log("js", u)).sum(), theta)
    assert torch.allclose(g_data, -grad, atol=1e-12)


def test_allowed_logprobs_renormalise_and_always_allow_the_target():
    log_p = torch.log_softmax(LOGITS, 0)
    q, mass = M.allowed_logprobs(log_p[None], torch.tensor([2]), ALLOWED[None])
    p = torch.softmax(LOGITS, 0)
    assert torch.allclose(mass, torch.log(p[ALLOWED].sum())[None], atol=1e-12)
    assert torch.allclose(q, torch.log(p[2] / p[ALLOWED].sum())[None], atol=1e-12)
    q1, mass1 = M.allowed_logprobs(log_p[None], torch.tensor([1]), ALLOWED[None])   # 1 ∉ A: counted as allowed
    assert torch.isfinite(q1).all() and torch.allclose(mass1, torch.log(p[[0, 1, 2, 3]].sum())[None], atol=1e-12)


def test_calibrated_threshold_gives_round_alpha_n_false_positives():
    rng = np.random.default_rng(0)
    for n in (20, 46, 300):
        s = rng.normal(size=n)
        thr = M.calibrated_threshold(s, 0.05)
        assert (s > thr).sum() == round(0.05 * n)
    with pytest.raises(ValueError, match="alpha"):
        M.calibrated_threshold(np.ones(5), 1.5)
    with pytest.raises(ValueError, match="alpha"):
        M.calibrated_threshold(np.ones(5), 0.0)


def test_detection_metrics_known_answer():
    scores = np.array([0.1, 0.2, 0.3, 0.9, 0.4, 0.8])
    labels = np.array([0, 0, 0, 1, 0, 1])
    m = M.detection_metrics(scores, labels, threshold=0.35)
    assert m["auroc"] == 1.0 and m["fpr"] == 0.25 and m["f1"] == pytest.approx(0.8)


def test_paired_bootstrap_is_zero_for_identical_methods_and_signed():
    rng = np.random.default_rng(1)
    y = np.r_[np.zeros(80), np.ones(20)].astype(int)
    good = y + rng.normal(0, 0.5, 100)
    bad = y + rng.normal(0, 2.0, 100)
    mean, low, high = M.paired_bootstrap_auc([good], [good], [y], 100, 0)
    assert mean == low == high == 0.0
    mean, low, high = M.paired_bootstrap_auc([good], [bad], [y], 200, 0)
    assert low > 0 and low <= mean <= high


def test_c2st_separates_shifted_samples_only():
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    a = rng.normal(size=(200, 3))
    with threadpool_limits(limits=1):
        assert M.c2st_auc(a, rng.normal(size=(200, 3)), 0) < 0.62
        assert M.c2st_auc(a, rng.normal(1.5, 1, size=(200, 3)), 0) > 0.9
