"""The gpu-profile code path at tiny sizes: training, replay sampling, planners and evaluation
place every tensor on the requested device (compute.resolved_device(): "cuda" on a GPU).

No GPU is lent here, so the device path runs on "cpu" (and on "cuda" too when present):
the same code the gpu profile runs, with the gpu block's settings and only the sizes
shrunk. Mixing devices (a CPU generator or a CPU-created tensor meeting a CUDA model) raises
in torch, and every test below also checks numbers, so these tests can fail."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from assets.dream_mpc import configs, envs, evaluation
from assets.dream_mpc import model as M
from assets.dream_mpc import planners as P
from assets.dream_mpc import training as T
from assets.dream_mpc.params import DreamMPCParams, load
from resources.compute import ComputeResource

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _gpu_block() -> DreamMPCParams:
    return load(ComputeResource(profile="gpu"))


def _tiny_model_config(spec: envs.TaskSpec, gpu: DreamMPCParams) -> M.ModelConfig:
    """The gpu block's model settings with the widths shrunk (activation, ensemble, horizon kept)."""
    return configs.model_config(spec.to_dict(), replace(gpu, model=replace(gpu.model, latent_dim=16, mlp_dim=16,
                                                                             enc_dim=16)))


def test_gpu_block_builds_at_full_size():
    """The gpu block resolves to TD-MPC2's sizes and every object it configures can be built."""
    gpu = _gpu_block()
    assert gpu.model.latent_dim == 512
    spec = envs.task_spec(gpu.tasks[0], gpu.time_limit_steps, configs.action_repeat(gpu.action_repeat, gpu.tasks[0]))
    cfg = configs.model_config(spec.to_dict(), gpu)
    model = M.WorldModel(cfg)
    L, Hd, E, A, O, K, nb = cfg.latent_dim, cfg.mlp_dim, cfg.enc_dim, cfg.act_dim, cfg.obs_dim, cfg.num_q, cfg.num_bins
    def normed(i, o):                                             # Linear + LayerNorm affine
        return i * o + o + 2 * o

    expected = (normed(O, E) + normed(E, L)                       # encoder (SimNorm output layer)
                + normed(L + A, Hd) + normed(Hd, Hd) + normed(Hd, L)  # dynamics
                + normed(L + A, Hd) + normed(Hd, Hd) + Hd * nb + nb   # reward head
                + K * (normed(L + A, Hd) + normed(Hd, Hd) + Hd * nb + nb)  # Q ensemble
                + normed(L, Hd) + normed(Hd, Hd) + Hd * 2 * A + 2 * A)     # policy
    assert model.parameter_count() == expected
    assert cfg.activation == "mish" and cfg.num_q == 5 and cfg.horizon == 3
    assert gpu.training.collect_with == "mppi" and gpu.training.batch_size == 256
    names = {c.name for c in P.default_planners(cfg.discount, cfg.horizon)}
    assert set(gpu.evaluation.planners_strong) <= names
    assert gpu.training.decisions % spec.decisions_per_episode == 0


@pytest.mark.parametrize("device", DEVICES)
def test_training_and_planning_run_on_the_device_and_are_seed_deterministic(device):
    """train_online (MPPI collection as in the gpu block) and every planner on `device`;
    two runs with the same seed give identical weights and returns (all draws come from the
    device generator, none from an unseeded source)."""
    gpu = _gpu_block()
    spec = envs.task_spec("cartpole-swingup", 16, 4)                    # 4 decisions per episode
    cfg = T.TrainConfig(decisions=12, seed_decisions=4, pretrain_updates=2, batch_size=8,
                        collect_with=gpu.training.collect_with, collect_mppi_samples=16,
                        collect_mppi_iterations=2, heldout_episodes=1, eval_episodes=1, curve_every=4)
    mcfg = _tiny_model_config(spec, gpu)

    def run():
        return T.train_online(spec, mcfg, cfg, seed=3, eval_seeds=[11], log=lambda s: None, device=device)

    first, second = run(), run()
    assert M.model_device(first["model"]).type == device
    assert all(v.device.type == "cpu" for v in first["snapshots"][1.0].values())   # checkpoints are portable
    for k, v in first["snapshots"][1.0].items():
        assert torch.equal(v, second["snapshots"][1.0][k]), k
    assert first["evals"] == second["evals"] and first["timing"]["updates"] == 2 + 8

    sampler = T.SegmentSampler(mcfg.horizon, np.random.default_rng(0))
    sampler.episodes = [e for e in first["episodes"] if e.split != "heldout"]
    obs, act, rew = sampler.sample(5, device)
    assert {obs.device.type, act.device.type, rew.device.type} == {device}
    assert obs.shape == (mcfg.horizon + 1, 5, spec.obs_dim) and rew.shape == (mcfg.horizon, 5, 1)
    # a segment is consecutive: obs[t+1] of a sampled segment is the stored next observation
    flat = {tuple(np.round(o, 5)) for e in sampler.episodes for o in e.obs}
    assert all(tuple(np.round(o, 5)) in flat for o in obs.cpu().numpy().reshape(-1, spec.obs_dim))

    model = M.model_from_state(first["snapshots"][1.0], mcfg, device)
    assert M.model_device(model).type == device and not model.training
    for pc in P.default_planners(mcfg.discount, mcfg.horizon):
        if pc.kind in ("mppi", "cem"):
            pc = replace(pc, num_samples=32, iterations=2, num_elites=8, num_pi_trajs=4 if pc.kind == "mppi" else 0)
        episodes, steps = evaluation.run_episodes(model, spec, pc, [21, 22], generator_seed=5)
        again, _ = evaluation.run_episodes(model, spec, pc, [21, 22], generator_seed=5)
        assert (steps["optimisation_evaluations"] == pc.optimisation_evaluations()).all(), pc.name
        assert np.array_equal(episodes["return"].to_numpy(), again["return"].to_numpy()), pc.name
        assert np.isfinite(episodes["return"]).all() and (episodes["return"] >= 0).all()


@pytest.mark.parametrize("device", DEVICES)
def test_learner_update_on_the_device_matches_the_cpu_update(device):
    """One TD-MPC2 update on `device` gives the same losses as on the CPU from the same
    weights and batch (float64, same generator seed): the device path computes the same loss."""
    cfg = M.ModelConfig(obs_dim=3, act_dim=2, latent_dim=16, mlp_dim=16, enc_dim=16, activation="mish")
    torch.manual_seed(0)
    base = M.WorldModel(cfg).double()
    batch = (torch.randn(4, 6, 3, dtype=torch.float64), torch.rand(3, 6, 2, dtype=torch.float64) * 2 - 1,
             torch.rand(3, 6, 1, dtype=torch.float64))
    results = {}
    for dev in ("cpu", device):
        model = M.WorldModel(cfg).double()
        model.load_state_dict(base.state_dict())
        model.to(dev)
        learner = M.Learner(model, M.make_generator(7, "cpu" if dev == "cpu" else dev))
        results[dev] = learner.update(*(t.to(dev) for t in batch))
    if device == "cpu":   # same device: the update is a pure function of weights, batch and seed
        assert results["cpu"] == results[device]
    else:                 # different RNG streams per device type: the value and reward losses
        for k in ("consistency", "reward_loss"):     # do not depend on random draws
            assert results["cpu"][k] == pytest.approx(results[device][k], rel=1e-6), k
    assert all(np.isfinite(v) for v in results[device].values())


def test_reward_balanced_sampling_draws_the_rare_rewarded_segments():
    ep = T.Episode(obs=[np.full(2, t, dtype=np.float32) for t in range(101)],
                   action=[np.zeros(1, dtype=np.float32)] * 100, reward=[0.0] * 100)
    ep.reward[60] = 1.0                     # one rewarded step: 3 of the 98 segments of H = 3 hold it
    uniform = T.SegmentSampler(3, np.random.default_rng(0))
    balanced = T.SegmentSampler(3, np.random.default_rng(0), reward_fraction=0.5)
    uniform.episodes = balanced.episodes = [ep]
    assert balanced.rewarded_starts([ep]).tolist() == [58, 59, 60]
    share = {}
    for name, sampler in (("uniform", uniform), ("balanced", balanced)):
        _, _, rew = sampler.sample(256)
        share[name] = float((rew.squeeze(-1).sum(0) > 0).float().mean())
    assert share["uniform"] < 0.15 and share["balanced"] >= 0.5
    with pytest.raises(ValueError, match="reward_fraction"):
        T.SegmentSampler(3, np.random.default_rng(0), reward_fraction=1.5)


def test_reward_balance_is_set_per_task_and_reaches_the_sampler():
    assert configs.reward_balance(0.25, "cartpole-swingup") == 0.25
    per_task = {"reacher-easy": 0.5}
    assert configs.reward_balance(per_task, "reacher-easy") == 0.5
    assert configs.reward_balance(per_task, "cartpole-swingup") == 0.0          # no default: uniform
    assert configs.reward_balance({**per_task, "default": 0.1}, "cartpole-swingup") == 0.1
    cpu = load(ComputeResource(profile="cpu"))
    for task in (*cpu.tasks, *cpu.task_survey.tasks):
        cfg = configs.train_config(cpu.training, 125, task)
        assert cfg.reward_fraction == configs.reward_balance(cpu.training.reward_balance, task)
