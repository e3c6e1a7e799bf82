"""Mathematics of the TD-MPC2-lite model: symlog, two-hot, SimNorm, ensemble, losses."""
from __future__ import annotations

import math

import pytest
import torch

from assets.dream_mpc import model as M


def test_symlog_symexp_are_inverse_and_odd():
    x = torch.tensor([-1e4, -3.0, -1e-3, 0.0, 1e-3, 2.5, 1e4], dtype=torch.float64)
    assert torch.allclose(M.symexp(M.symlog(x)), x, rtol=1e-12)
    assert torch.allclose(M.symlog(-x), -M.symlog(x))
    assert M.symlog(torch.tensor(math.e - 1)).item() == pytest.approx(1.0)


def test_two_hot_mass_and_expectation_are_exact():
    x = torch.tensor([-7.3, -0.4, 0.0, 0.05, 1.0, 12.0, 3000.0], dtype=torch.float64)
    enc = M.two_hot(x, 101, -10.0, 10.0)
    assert torch.allclose(enc.sum(-1), torch.ones(len(x), dtype=torch.float64))
    assert (enc >= 0).all() and ((enc > 0).sum(-1) <= 2).all()
    centres = M.bin_centres(101, -10.0, 10.0).double()
    assert torch.allclose((enc * centres).sum(-1), M.symlog(x).clamp(-10, 10), atol=1e-6)


def test_two_hot_inverse_recovers_the_scalar():
    x = torch.tensor([-5.0, -0.25, 0.0, 0.7, 42.0], dtype=torch.float64)
    logits = torch.log(M.two_hot(x, 101, -10.0, 10.0) + 1e-30)
    assert torch.allclose(M.two_hot_inv(logits, -10.0, 10.0).squeeze(-1), x, rtol=1e-6, atol=1e-9)


def test_soft_ce_is_minimised_by_the_target_distribution():
    target = torch.tensor([[0.3]])
    best = torch.log(M.two_hot(target, 21, -2.0, 2.0))
    other = torch.zeros(1, 21)
    assert M.soft_ce(best.clamp(min=-50), target, 21, -2.0, 2.0) < M.soft_ce(other, target, 21, -2.0, 2.0)


def test_simnorm_makes_each_group_a_simplex():
    x = torch.randn(4, 24) * 5
    y = M.SimNorm(8)(x).view(4, 3, 8)
    assert (y >= 0).all()
    assert torch.allclose(y.sum(-1), torch.ones(4, 3))


def test_ensemble_heads_are_independent_mlps():
    ens = M.EnsembleMLP(3, 4, [6], 2, activation="silu")
    x = torch.randn(5, 4)
    out = ens(x)
    for k in range(3):  # head k equals an explicit MLP with the k-th weights
        h = x @ ens.weights[0][k] + ens.biases[0][k]
        h = torch.nn.functional.layer_norm(h, (6,)) * ens.ln_weights[0][k] + ens.ln_biases[0][k]
        h = torch.nn.functional.silu(h)
        assert torch.allclose(out[k], h @ ens.weights[1][k] + ens.biases[1][k], atol=1e-6)
    assert not torch.allclose(out[0], out[1])


def test_discount_heuristic_matches_tdmpc2():
    assert M.discount_from_episode_length(500) == pytest.approx(0.99)     # (100-1)/100
    assert M.discount_from_episode_length(125) == pytest.approx(0.96)     # (25-1)/25
    assert M.discount_from_episode_length(10) == 0.95 and M.discount_from_episode_length(10**6) == 0.995


def test_policy_actions_are_bounded_and_log_prob_matches_change_of_variables():
    cfg = M.ModelConfig(obs_dim=3, act_dim=1, latent_dim=16, mlp_dim=16, enc_dim=16)
    model = M.WorldModel(cfg)
    z = torch.softmax(torch.randn(2000, 16), -1)
    gen = torch.Generator().manual_seed(0)
    mean, a, log_p = model.pi(z, gen)
    assert (mean.abs() <= 1).all() and (a.abs() <= 1).all()
    # for one latent: density of tanh(N(μ, σ)) at a equals exp(log_p)
    mu, log_std = model.policy(z[:1]).chunk(2, -1)
    log_std = cfg.log_std_min + 0.5 * (cfg.log_std_max - cfg.log_std_min) * (torch.tanh(log_std) + 1)
    _, a1, lp1 = model.pi(z[:1], gen)
    u = torch.atanh(a1.clamp(-1 + 1e-6, 1 - 1e-6))
    normal = torch.distributions.Normal(mu, log_std.exp())
    expected = normal.log_prob(u) - torch.log(1 - a1 ** 2 + 1e-6)
    assert torch.allclose(lp1, expected.sum(-1, keepdim=True), atol=1e-3)


def test_learner_update_reduces_losses_on_a_fixed_batch():
    torch.manual_seed(0)
    cfg = M.ModelConfig(obs_dim=3, act_dim=1, latent_dim=16, mlp_dim=32, enc_dim=32, activation="silu", lr=3e-3)
    model = M.WorldModel(cfg)
    learner = M.Learner(model, torch.Generator().manual_seed(0))
    obs, act, rew = torch.randn(4, 32, 3), torch.rand(3, 32, 1) * 2 - 1, torch.rand(3, 32, 1)
    first = learner.update(obs, act, rew)
    for _ in range(60):
        last = learner.update(obs, act, rew)
    assert last["reward_loss"] < 0.5 * first["reward_loss"]
    assert all(math.isfinite(v) for v in last.values())


def test_checkpoint_with_wrong_action_dim_is_rejected():
    cfg = M.ModelConfig(obs_dim=3, act_dim=2, latent_dim=16, mlp_dim=16, enc_dim=16)
    state = M.state_dict_for_checkpoint(M.WorldModel(cfg))
    with pytest.raises(ValueError, match="does not fit"):
        M.model_from_state(state, M.ModelConfig(obs_dim=3, act_dim=1, latent_dim=16, mlp_dim=16, enc_dim=16))
    state["dynamics.0.weight"][0, 0] = float("nan")
    with pytest.raises(ValueError, match="non-finite"):
        M.model_from_state(state, cfg)


def test_simnorm_is_the_groupwise_softmax():
    x = torch.randn(7, 32) * 5
    ref = torch.softmax(x.view(7, -1, 8), -1).view(7, 32)
    out = M.SimNorm(8)(x)
    assert torch.allclose(out, ref, atol=1e-6)
    assert torch.allclose(out.view(7, -1, 8).sum(-1), torch.ones(7, 4))


def test_selected_q_heads_equal_those_rows_of_the_full_ensemble():
    torch.manual_seed(0)
    model = M.WorldModel(M.ModelConfig(obs_dim=3, act_dim=2, latent_dim=16, mlp_dim=32, enc_dim=32))
    for p in model.q_heads.weights[-1:]:      # the last layer starts at zero: give it values
        torch.nn.init.normal_(p)
    model.freeze()
    z, a = model.encode(torch.randn(9, 3)), torch.rand(9, 2) * 2 - 1
    idx = torch.tensor([3, 1])
    full = model.q_all(z, a)
    assert full.shape == (5, 9, 1) and full.std(0).abs().sum() > 0
    assert torch.allclose(model.q_all(z, a, heads=idx), full[idx], atol=1e-6)
    assert torch.allclose(model.q_all(z, a, target=True, heads=idx), model.q_all(z, a, target=True)[idx], atol=1e-6)
