"""The shared PFN layer (assets/common/pfn): the SCM prior's do() against closed forms, the
in-context transformer's leakage guards and invariances, the (seed, stream, step) loop, the
bar-distribution head."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from assets.common.pfn import scm as S
from assets.common.pfn.heads import BarDistribution, quantile_borders
from assets.common.pfn.model import InContextTransformer, PFNConfig, count_parameters
from assets.common.pfn.train import TrainConfig, relative_loss_drop, stream_rng, train


# ------------------------------------------------------------------------------ SCM prior
def chain_weights() -> tuple[np.ndarray, np.ndarray]:
    """x0 → x1 → x3, x0 → x2 → x3, x1 → x2 (a confounded linear-Gaussian SCM, node 3 = Y)."""
    W = np.zeros((4, 4))
    W[0, 1], W[0, 2], W[1, 2], W[1, 3], W[2, 3] = 0.8, -0.6, 0.5, 1.2, -0.7
    return W, np.array([0.3, -0.2, 0.1, 0.5])


@pytest.mark.parametrize("mask", [[True, False, False], [False, True, False], [True, True, False],
                                  [False, True, True], [True, True, True]])
def test_linear_gaussian_do_matches_the_closed_form_within_three_standard_errors(mask):
    W, bias = chain_weights()
    scm = S.linear_scm(W, bias, noise_sd=np.array([1.0, 0.5, 0.7, 0.4]))
    m = np.append(mask, False)
    values = np.array([1.3, -0.8, 0.6, 0.0])
    exact = S.linear_interventional_mean(W, bias, m, values)
    draws = 20_000
    x = S.sample(scm, S.draw_noise(scm, np.random.default_rng(1), draws), m, values)[0]
    se = x.std(axis=0, ddof=1) / math.sqrt(draws)
    free = ~m
    assert np.all(np.abs(x.mean(axis=0)[free] - exact[free]) < 3 * se[free])
    assert np.all(x[:, m] == values[m])                                        # clamped exactly


def test_linear_closed_form_equals_propagation_in_topological_order():
    W, bias = chain_weights()
    m = np.array([False, True, False, False])
    values = np.array([0.0, 2.0, 0.0, 0.0])
    mu = np.zeros(4)
    for i in range(4):
        mu[i] = values[i] if m[i] else bias[i] + W[:, i] @ mu
    np.testing.assert_allclose(S.linear_interventional_mean(W, bias, m, values), mu)
    # and with no intervention it is (I − Wᵀ)⁻¹ b
    np.testing.assert_allclose(S.linear_interventional_mean(W, bias, np.zeros(4, bool), values),
                               np.linalg.solve(np.eye(4) - W.T, bias))


def test_clamping_cuts_the_parents_and_leaves_ancestors_alone():
    config = S.SCMPriorConfig(nodes=(6, 6), edge_prob=(0.9, 0.9), mechanisms=("mlp", "tree"),
                              mechanism_probs=(0.5, 0.5), activations=("tanh", "sin", "relu"))
    scm = S.sample_scms(config, np.random.default_rng(3), 4)
    rng = np.random.default_rng(4)
    noise = S.draw_noise(scm, rng, 200)
    mask = np.zeros(6, bool)
    mask[3] = True
    values = np.full(6, 0.7)
    base = S.sample(scm, noise)
    cut = S.sample(scm, noise, mask, values)
    np.testing.assert_array_equal(cut[:, :, 3], 0.7)
    np.testing.assert_array_equal(cut[:, :, :3], base[:, :, :3])                # upstream untouched
    other = noise.copy()
    other[:, :, :3] = rng.standard_normal(other[:, :, :3].shape)                # new parent values
    other[:, :, 3] = rng.standard_normal(other[:, :, 3].shape)                  # and its own noise
    np.testing.assert_array_equal(S.sample(scm, other, mask, values)[:, :, 3], 0.7)
    mlp_children = [(b, i) for b in range(4) for i in range(4, 6) if scm.adjacency[b, 3, i] and scm.kind[b, i] == S.MLP]
    assert mlp_children and all(not np.allclose(cut[b, :, i], base[b, :, i]) for b, i in mlp_children)


def test_do_zero_differs_from_no_intervention():
    W, bias = chain_weights()
    scm = S.linear_scm(W, bias)
    noise = S.draw_noise(scm, np.random.default_rng(0), 500)
    mask = np.array([False, True, False, False])
    observational = S.sample(scm, noise)
    at_zero = S.sample(scm, noise, mask, np.zeros(4))
    assert not np.allclose(observational[..., 3], at_zero[..., 3])
    assert abs(S.linear_interventional_mean(W, bias, mask, np.zeros(4))[3]
               - S.linear_interventional_mean(W, bias, np.zeros(4, bool), np.zeros(4))[3]) > 0.01


def test_prior_draws_are_dags_with_parents_for_tree_splits_and_standardised_nodes():
    config = S.SCMPriorConfig(nodes=(3, 8), edge_prob=(0.2, 0.6), mechanisms=("mlp", "tree", "linear"),
                              mechanism_probs=(0.5, 0.3, 0.2), activations=("tanh", "square", "abs", "sigmoid"),
                              noise_kinds=("normal", "uniform"), pilot_rows=2000)
    scm = S.sample_scms(config, np.random.default_rng(5), 32)
    assert not np.any(np.tril(scm.adjacency.transpose(0, 1, 2)))                # forward edges only
    for b in range(scm.batch):
        n = scm.n_nodes[b]
        assert not scm.adjacency[b, n:].any() and not scm.adjacency[b, :, n:].any()
        for i in np.flatnonzero(scm.kind[b] == S.TREE):
            assert set(scm.tree_feature[b, i]) <= set(scm.parents(b, i))
    x = S.sample(scm, S.draw_noise(scm, np.random.default_rng(6), 4000))
    active = np.arange(8)[None, :] < scm.n_nodes[:, None]
    assert np.all(np.abs(x.mean(axis=1)[active]) < 0.2)                      # pilot-sample standardisation
    assert np.all(np.abs(x.std(axis=1)[active] - 1) < 0.2)
    assert np.median(np.abs(x.std(axis=1)[active] - 1)) < 0.05
    assert np.all(x[~np.broadcast_to(active[:, None, :], x.shape)] == 0)


def test_noise_kinds_have_unit_variance():
    from scipy import stats

    for kind in ("normal", "uniform"):
        scm = S.draw_scms(S.SCMPriorConfig(noise_kinds=(kind,)), np.random.default_rng(0), 2)
        eps = S.draw_noise(scm, np.random.default_rng(1), 200_000)
        assert abs(eps.var() - 1) < 0.02, kind
    scm = S.draw_scms(S.SCMPriorConfig(noise_kinds=("student_t",)), np.random.default_rng(0), 2)
    eps = S.draw_noise(scm, np.random.default_rng(1), 200_000)   # t(3) has no 4th moment: compare quantiles
    expected = stats.t.ppf([0.75, 0.95], S.STUDENT_T_DF) / np.sqrt(S.STUDENT_T_DF / (S.STUDENT_T_DF - 2))
    np.testing.assert_allclose(np.quantile(eps, [0.75, 0.95]), expected, rtol=0.03)


def test_tree_mechanism_is_piecewise_constant_with_at_most_2_to_the_depth_values():
    config = S.SCMPriorConfig(nodes=(4, 4), edge_prob=(1.0, 1.0), mechanisms=("tree",), mechanism_probs=(1.0,),
                              noise_sd=(0.0, 0.0), tree_depth=2)
    scm = S.draw_scms(config, np.random.default_rng(2), 3)
    x = S.sample(scm, S.draw_noise(scm, np.random.default_rng(3), 500) * 0 + np.random.default_rng(4).normal(
        size=(3, 500, 4)) * (np.arange(4) == 0))
    assert all(len(np.unique(np.round(x[b, :, 3], 12))) <= 4 for b in range(3))


def test_fingerprints_identify_the_drawn_parameters_not_the_calibration():
    config = S.SCMPriorConfig()
    a = S.draw_scms(config, np.random.default_rng(7), 5)
    b = S.draw_scms(config, np.random.default_rng(7), 5)
    c = S.draw_scms(config, np.random.default_rng(8), 5)
    assert a.fingerprints() == b.fingerprints()
    assert not set(a.fingerprints()) & set(c.fingerprints())
    assert S.calibrate(a, np.random.default_rng(9), 64).fingerprints() == a.fingerprints()
    assert a.take(np.array([2, 0])).fingerprints() == [a.fingerprints()[2], a.fingerprints()[0]]
    restored = S.SCMBatch.from_arrays(a.arrays())
    assert restored.fingerprints() == a.fingerprints()


# ------------------------------------------------------------------------------ transformer
def backbone(arch: str = "sn", **kw) -> InContextTransformer:
    torch.manual_seed(0)
    return InContextTransformer(PFNConfig(d_model=16, n_heads=4, n_layers=2, arch=arch, **kw)).eval()


def test_queries_attend_to_context_only_and_never_to_each_other():
    model = backbone("snf")
    x = torch.randn(2, 10, 3, 16)                                                # 7 context rows, 3 queries
    out = model(x, n_context=7).hidden
    y = x.clone()
    y[:, 8] = torch.randn(2, 3, 16)                                              # change one query row
    again = model(y, n_context=7).hidden
    torch.testing.assert_close(again[:, :8], out[:, :8])
    torch.testing.assert_close(again[:, 9:], out[:, 9:])
    assert not torch.allclose(again[:, 8], out[:, 8])


def test_attention_over_rows_sums_to_one_and_padding_gets_none_and_does_not_matter():
    model = backbone("sn")
    x = torch.randn(2, 9, 16)
    valid = torch.ones(2, 6, dtype=torch.bool)
    valid[0, 4:] = False
    out = model(x, n_context=6, context_mask=valid, return_attention=True)
    for layer in out.attentions:
        torch.testing.assert_close(layer["s"].sum(-1), torch.ones(2, 1, 4, 9))
        assert torch.all(layer["s"][0, ..., 4:] == 0)
    y = x.clone()
    y[0, 4:6] = 100 * torch.randn(2, 16)                                         # garbage in padded rows
    again = model(y, n_context=6, context_mask=valid).hidden
    torch.testing.assert_close(again[0, 6:], out.hidden[0, 6:])
    torch.testing.assert_close(again[0, :4], out.hidden[0, :4])


def test_outputs_are_invariant_to_permuting_the_context_rows():
    model = backbone("snf")
    x = torch.randn(1, 12, 2, 16)
    perm = torch.randperm(8)
    y = torch.cat([x[:, perm], x[:, 8:]], dim=1)
    torch.testing.assert_close(model(y, n_context=8).hidden[:, 8:], model(x, n_context=8).hidden[:, 8:],
                               atol=1e-5, rtol=1e-5)


def test_snf_and_fsn_share_one_parameter_set_but_compute_differently():
    snf, fsn = backbone("snf", norm="post", norm_affine=False), backbone("fsn", norm="post", norm_affine=False)
    assert snf.state_dict().keys() == fsn.state_dict().keys()
    assert count_parameters(snf) == count_parameters(fsn)
    fsn.load_state_dict(snf.state_dict())
    x = torch.randn(1, 6, 3, 16)
    assert not torch.allclose(snf(x, n_context=4).hidden, fsn(x, n_context=4).hidden)
    assert not any("norm" in k for k in snf.state_dict())                         # LayerNorm without affine


def test_feature_mask_hides_padded_tokens_and_manual_attention_equals_the_fused_kernel():
    model = backbone("snf")
    x = torch.randn(2, 5, 4, 16)
    features = torch.ones(2, 4, dtype=torch.bool)
    features[:, 3] = False
    out = model(x, n_context=3, feature_mask=features, return_attention=True)
    y = x.clone()
    y[:, :, 3] = torch.randn(2, 5, 16)
    torch.testing.assert_close(model(y, n_context=3, feature_mask=features).hidden[:, :, :3], out.hidden[:, :, :3],
                               atol=1e-5, rtol=1e-5)
    fused = model(x, n_context=3, feature_mask=features).hidden              # no weights: the fused kernel
    torch.testing.assert_close(fused, out.hidden, atol=1e-5, rtol=1e-5)
    assert all(torch.all(layer["f"][..., 3] == 0) for layer in out.attentions)
    assert len(model(x, n_context=3, return_hidden=True).hidden_states) == 3


def test_config_rejects_bad_arch():
    with pytest.raises(ValueError, match="arch"):
        PFNConfig(arch="nf")
    with pytest.raises(ValueError, match="arch"):
        PFNConfig(arch="ssn")


# ------------------------------------------------------------------------------ training loop
def tiny_task(step_rng: np.random.Generator) -> dict:
    x = step_rng.normal(size=(8, 3)).astype(np.float32)
    return {"x": torch.from_numpy(x), "y": torch.from_numpy(x @ np.array([1.0, -2.0, 0.5], np.float32))}


def test_batches_are_a_function_of_seed_stream_and_step():
    a = stream_rng(3, "pretrain", 17).normal(size=4)
    np.testing.assert_array_equal(a, stream_rng(3, "pretrain", 17).normal(size=4))
    assert not np.allclose(a, stream_rng(3, "pretrain", 18).normal(size=4))
    assert not np.allclose(a, stream_rng(3, "finetune", 17).normal(size=4))
    assert not np.allclose(a, stream_rng(4, "pretrain", 17).normal(size=4))


def test_training_reproduces_and_resumes_on_the_same_batches():
    def run(steps, start=0, state=None):
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1)
        if state:
            model.load_state_dict(state)
        seen = []

        def make(step):
            seen.append(step)
            return tiny_task(stream_rng(0, "t", step))

        result = train(model, make, lambda m, b: ((m(b["x"]).squeeze(-1) - b["y"]) ** 2).mean(),
                       TrainConfig(steps=steps, lr=0.05, min_lr_ratio=1.0), start_step=start)
        return result, seen, model

    a, seen_a, _ = run(40)
    b, _, _ = run(40)
    assert a.losses == b.losses and seen_a == list(range(40))
    assert relative_loss_drop(a.losses, 5) > 0.5
    _, seen_c, _ = run(5, start=40)
    assert seen_c == list(range(40, 45))


def test_learning_rate_schedule_and_loss_guards():
    config = TrainConfig(steps=110, lr=1.0, warmup_steps=10, min_lr_ratio=0.1)
    assert config.lr_at(0) == pytest.approx(0.1) and config.lr_at(9) == pytest.approx(1.0)
    assert config.lr_at(10) == pytest.approx(1.0) and config.lr_at(110) == pytest.approx(0.1)
    assert config.lr_at(60) == pytest.approx(0.55)
    assert relative_loss_drop([2.0, 2.0, 1.0, 1.0], 2) == pytest.approx(0.5)
    model = torch.nn.Linear(1, 1)
    with pytest.raises(FloatingPointError, match="step 0"):
        train(model, lambda s: None, lambda m, b: torch.tensor(float("nan"), requires_grad=True), TrainConfig(steps=1))


# ------------------------------------------------------------------------------ bar head
def test_bar_distribution_is_a_normalised_density_with_closed_form_moments():
    borders = np.array([-2.0, -1.0, 0.0, 0.5, 2.0])
    bar = BarDistribution(borders)
    logits = torch.randn(3, 4)
    y = torch.tensor([-1.5, 0.25, 1.9])
    p = torch.softmax(logits, -1)
    # exp(−nll) is the density: p_k / w_k in y's bin
    expected = p[torch.arange(3), torch.tensor([0, 2, 3])] / torch.tensor([1.0, 0.5, 1.5])
    torch.testing.assert_close(torch.exp(-bar.nll(logits, y)), expected)
    one_hot = torch.full((1, 4), -1e9)
    one_hot[0, 3] = 0.0
    torch.testing.assert_close(bar.mean(one_hot), torch.tensor([1.25]))
    torch.testing.assert_close(bar.variance(one_hot), torch.tensor([1.5 ** 2 / 12]))
    assert bar.bin_of(torch.tensor([-9.0, 9.0])).tolist() == [0, 3]                 # clamped to the edge bins
    b = quantile_borders(np.random.default_rng(0).normal(size=1000), 16)
    assert len(b) == 17 and np.all(np.diff(b) > 0)
