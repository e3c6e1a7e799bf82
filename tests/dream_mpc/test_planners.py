"""Planners: gradient direction (finite differences), counters, reuse shift, frozen model,
and the synthetic linear-quadratic system against its closed form."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from assets.dream_mpc import microbench as MB
from assets.dream_mpc import model as M
from assets.dream_mpc import planners as P


def _model(act_dim=2, seed=0):
    torch.manual_seed(seed)
    cfg = M.ModelConfig(obs_dim=4, act_dim=act_dim, latent_dim=16, mlp_dim=32, enc_dim=32, activation="silu")
    model = M.WorldModel(cfg)
    with torch.no_grad():  # non-trivial reward and Q heads (they are zero-initialised)
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model.double().freeze()


def _configs(discount=0.97):
    return {c.name: c for c in P.default_planners(discount)}


def test_gradient_of_J_matches_finite_differences():
    model = _model()
    cfg = _configs()["dream_mpc"]
    z = torch.softmax(torch.randn(3, 16, dtype=torch.float64), -1)
    a = (torch.rand(3, 3, 2, dtype=torch.float64) * 1.6 - 0.8).requires_grad_(True)
    J, _ = P.trajectory_objective(model, z, a, cfg, cfg.uncertainty)
    (grad,) = torch.autograd.grad(J.sum(), a)
    eps = 1e-6
    fd = torch.zeros_like(a)
    with torch.no_grad():
        for idx in np.ndindex(*a.shape):
            plus, minus = a.detach().clone(), a.detach().clone()
            plus[idx] += eps
            minus[idx] -= eps
            fd[idx] = (P.trajectory_objective(model, z, plus, cfg, cfg.uncertainty)[0].sum()
                       - P.trajectory_objective(model, z, minus, cfg, cfg.uncertainty)[0].sum()) / (2 * eps)
    assert torch.allclose(grad, fd, rtol=1e-4, atol=1e-7)
    # a small ascent step along ∇J increases J (first order)
    with torch.no_grad():
        J_after = P.trajectory_objective(model, z, a + 1e-4 * grad, cfg, cfg.uncertainty)[0]
    assert (J_after > J.detach()).all()


def test_uncertainty_term_lowers_J_by_lambda_times_ensemble_std():
    model = _model()
    cfg = _configs()["dream_mpc"]
    z = torch.softmax(torch.randn(4, 16, dtype=torch.float64), -1)
    a = torch.rand(3, 4, 2, dtype=torch.float64) * 2 - 1
    J0, _ = P.trajectory_objective(model, z, a, cfg, 0.0)
    J1, u = P.trajectory_objective(model, z, a, cfg, 0.5)
    # per-step std: recompute by hand
    zz, penalty = z, torch.zeros(4, dtype=torch.float64)
    for t in range(3):
        penalty += cfg.discount ** t * model.q_all(zz, a[t]).squeeze(-1).std(0, unbiased=False)
        zz = model.next(zz, a[t])
    penalty += cfg.discount ** 3 * model.q_all(zz, model.pi(zz)[0]).squeeze(-1).std(0, unbiased=False)
    assert torch.allclose(J0 - J1, 0.5 * penalty)
    assert (u > 0).all()


@pytest.mark.parametrize("name, optimisation, proposal", [
    ("dream_mpc", 15, 10), ("dream_mpc_i3", 45, 10), ("naive_grad", 150, 0),
    ("mppi", 9216, 24 * 2), ("cem", 9216, 0), ("policy_only", 0, 0)])
def test_counters_equal_the_configured_budget(name, optimisation, proposal):
    model = _model().float()
    cfg = _configs()[name]
    planner = P.make_planner(model, cfg, 2, torch.Generator().manual_seed(0))
    planner.reset(3)
    z = torch.softmax(torch.randn(3, 16), -1)
    for _ in range(2):   # the second decision exercises warm starts / reuse
        action, info = planner.act(z)
        assert info["optimisation_evaluations"] == optimisation == cfg.optimisation_evaluations()
        assert info["proposal_evaluations"] == proposal
        assert action.shape == (3, 2) and (action.abs() <= 1).all()


def test_planning_leaves_the_model_unchanged():
    model = _model().float()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    planner = P.make_planner(model, _configs()["dream_mpc_i3"], 2, torch.Generator().manual_seed(0))
    planner.reset(2)
    planner.act(torch.softmax(torch.randn(2, 16), -1))
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())


def test_reuse_blends_the_shifted_previous_plan():
    model = _model().float()
    cfg = replace(_configs()["dream_mpc"], reuse=1.0)       # β = 1: the candidates are ā exactly
    planner = P.make_planner(model, cfg, 2, torch.Generator().manual_seed(0))
    planner.reset(1)
    previous = torch.tensor([[[0.1, 0.2]], [[0.3, 0.4]], [[0.5, 0.6]]])   # (H, B, A)
    planner.prev_plan = previous
    init = planner._initial(torch.softmax(torch.randn(5, 16), -1), 1).view(3, 1, 5, 2)
    for n in range(5):
        assert torch.allclose(init[0, 0, n], previous[1, 0]) and torch.allclose(init[1, 0, n], previous[2, 0])
    # the last step is each candidate's own policy action, not the stale plan
    assert not torch.allclose(init[2, 0, 0], previous[2, 0])


def test_gradient_step_improves_the_chosen_plan_on_a_concave_problem():
    system = MB.LinearQuadraticLatent(latent_dim=4, act_dim=2, discount=0.95, seed=3)
    cfg = replace(_configs(0.95)["dream_mpc"], step_size=0.02, reuse=0.0)
    z = torch.as_tensor(np.random.default_rng(0).standard_normal((16, 4)) * 0.3, dtype=torch.float32)
    base = MB.plan_once(system, replace(cfg, iterations=1), z, 2, seed=0)["J"]
    more = MB.plan_once(system, replace(cfg, iterations=20), z, 2, seed=0)["J"]
    assert np.mean(more) > np.mean(base)


@pytest.mark.parametrize("unit", [None, 3])
def test_lq_quadratic_form_matches_the_rollout_objective(unit):
    system = MB.LinearQuadraticLatent(latent_dim=5, act_dim=3, discount=0.9, seed=1, unit_curvature_horizon=unit)
    cfg = replace(_configs(0.9)["dream_mpc"], uncertainty=0.0)
    rng = np.random.default_rng(2)
    z0, a = rng.standard_normal((6, 5)), rng.uniform(-1, 1, (6, 3 * 3))
    Mq, g, c = system.quadratic(z0, 3)
    closed = c + (g * a).sum(1) - 0.5 * np.einsum("si,ij,sj->s", a, Mq, a)
    acts = torch.as_tensor(a.reshape(6, 3, 3).transpose(1, 0, 2), dtype=torch.float32)
    J, _ = P.trajectory_objective(system, torch.as_tensor(z0, dtype=torch.float32), acts, cfg, 0.0)
    assert np.allclose(J.numpy(), closed, rtol=1e-4, atol=1e-4)
    if unit:
        assert np.linalg.eigvalsh(Mq).max() == pytest.approx(1.0)


def test_lq_optimum_is_the_unconstrained_solution_when_the_box_is_inactive():
    system = MB.LinearQuadraticLatent(latent_dim=4, act_dim=2, discount=0.9, seed=5)
    z0 = np.random.default_rng(0).standard_normal((3, 4)) * 0.01     # tiny states: box inactive
    Mq, g, c = system.quadratic(z0, 3)
    a_star = np.linalg.solve(Mq, g.T).T
    assert np.abs(a_star).max() < 1
    closed = c + 0.5 * (g * a_star).sum(1)
    assert np.allclose(system.optimum(z0, 3), closed, rtol=1e-6, atol=1e-10)


def test_sampling_planners_never_beat_the_exact_optimum():
    system = MB.LinearQuadraticLatent(latent_dim=4, act_dim=4, discount=0.95, seed=2)
    z0 = np.random.default_rng(1).standard_normal((8, 4))
    j_opt = system.optimum(z0, 3)
    for name in ("mppi", "cem", "dream_mpc"):
        J = MB.plan_once(system, _configs(0.95)[name], torch.as_tensor(z0, dtype=torch.float32), 4, seed=0)["J"]
        assert (J <= j_opt + 1e-3 * np.abs(j_opt).clip(min=1)).all()


def test_policy_objective_uses_its_full_horizon_rollout():
    system = MB.LinearQuadraticLatent(latent_dim=4, act_dim=2, discount=0.95, seed=4)
    cfg = _configs(0.95)["policy_only"]
    z = torch.as_tensor(np.random.default_rng(3).standard_normal((5, 4)) * 0.3, dtype=torch.float32)
    J = MB.plan_once(system, cfg, z, 2, seed=0)["J"]
    zz, expected = z.clone(), torch.zeros(5)
    for t in range(3):                       # mean-action rollout of the prior, then terminal value
        a = system.pi(zz)[0]
        expected += 0.95 ** t * system.reward(zz, a).squeeze(-1)
        zz = system.next(zz, a)
    expected += 0.95 ** 3 * system.q_all(zz, None).squeeze(-1).squeeze(0)
    assert np.allclose(J, expected.numpy(), rtol=1e-5, atol=1e-6)
