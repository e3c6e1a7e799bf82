"""dream_mpc device check (issue 49): cpu/device parity of the gpu profile's TD-MPC2-lite world model
(encoder, dynamics, reward, 5 Q heads + EMA target, policy prior) and of the Dream-MPC planning
gradient, then a timed slice of model training and planning on the device and the projected
gpu-profile time.

1. parity — for every gpu task, model.WorldModel at the gpu profile's sizes (configs.model_config: latent
   512, mlp 512, encoder 256, Mish, obs / action dims read from the simulator), seeded on the CPU and
   copied to `--device`, on PARITY_BATCH real (H+1)-step segments (training.SegmentSampler over one
   episode of uniform random actions in envs.TaskEnv). Dropout off on both copies (the Q ensemble's
   `dropout`; the device's random stream cannot match the CPU's). TF32 off.
   - update (model.Learner.update, the paper's TD-MPC2 step: losses, backward, clip, Adam, policy step,
     EMA target) from the fresh model: its random draws (2 target heads, the policy's samples) cannot
     match across devices, but the zero-initialised last layer of the target Q heads makes the TD target
     the same for any draw (checked: the target heads' logits are exactly 0 on the batch), so the consistency, reward
     and value losses, the clipped world-model gradient and the world-model Adam step must agree; the
     losses after the step are the consistency and reward losses of a second update on the same batch
     (they depend only on the stepped encoder, dynamics and reward head). The policy step uses the
     device's own samples: its loss is reported, its weights must stay finite.
   - forward, after WARM_UPDATES CPU updates (Learner.update at lr WARM_LR on the batch's segments with
     rewards drawn U(0, 1): every head then predicts a non-constant function; with the random-action
     rewards pendulum-swingup's are all 0, its J is flat and ∇_a J ~1e-10 is rounding noise): encode,
     next, reward logits, online and target Q logits of all heads, the policy's mean action.
   - planning: the Dream-MPC objective J and its uncertainty u (planners.trajectory_objective, the
     paper's λ, terminal mean of the ensemble) of the policy's mean rollout (planners.policy_rollout,
     sample=False) and ∇_a J, the gradient its planner ascends.
   Exit 1 past the tolerances below.
2. timed slice — per task on the device: Learner.update at the profile's batch (SegmentSampler.sample
   included); the acting decisions of training.train_online (the pipeline's loop: MPPI collection at the
   profile's samples × iterations + planner noise, env step, updates_per_decision updates) as the
   difference of two short runs (S seed decisions, then S + DECISIONS; no snapshots, no held-out episodes);
   an env step (CPU, dm_control). On the first task: one batched decision (encode + act) of every
   evaluation planner (planners.make_planner of runs.planner_configs) at its evaluation batch.
   Projection: per task × seed, the seed phase (random decisions, pretraining updates: configs.seed_phase),
   the acting decisions and the held-out episodes (at an acting decision's cost: an upper bound); the
   evaluation grid (configs.evaluation_grid: strong × planners_strong, weak / medium × the prior sweep)
   at decisions_per_episode batched decisions per cell and its env steps.

    .venv/bin/python benchmarks/dream_mpc_device_check.py --device cuda --out /tmp/dream_mpc_device.json
    .venv/bin/python benchmarks/dream_mpc_device_check.py --device cpu --tiny     # exercises the code (tests)

--tiny: the smoke profile's model, tasks and episodes with the gpu profile's training options (MPPI
collection, planner noise, Mish), one timed call each; the projection takes the gpu profile's counts and
applies the measured task's seconds to every gpu task. On `--device cpu` parity is exact. The pipeline
trains and plans on compute.resolved_device() (CUDA on a GPU); the simulator steps on the CPU.
"""
from __future__ import annotations

import copy
import dataclasses
import sys
import time
from pathlib import Path

FORWARD_TOL = 1e-3      # max |Δ output| / max |output| (float32, LayerNorm + SimNorm MLPs)
GRAD_TOL = 1e-2         # max |Δ g| / max |g| of the clipped world-model gradient
STEP_TOL = 1e-2         # ‖Δθ_cpu − Δθ_dev‖ / ‖Δθ_cpu‖ of the world-model Adam step
LOSS_TOL = 1e-4         # relative |Δ| of each loss, before and after the step
PLAN_TOL = 1e-3         # relative |Δ J| and max |Δ ∇_a J| / max |∇_a J|
U_TOL = 1e-2            # relative |Δ u|: u is the std of 5 nearly equal Q values (it cancels)
PARITY_BATCH = 64
WARM_UPDATES = 2
WARM_LR = 3e-3
UPDATES = 5             # timed updates per task
DECISIONS = 10          # timed acting decisions of train_online per task
PLAN_CALLS = 3          # timed batched decisions per evaluation planner


def profile(tiny: bool):
    """(gpu profile, the profile this run uses): --tiny is the smoke profile with the gpu profile's
    training options (MPPI collection, planner noise) and activation."""
    from assets.common.params import parse
    from assets.dream_mpc.params import DreamMPCParams
    from resources.profiles import load_params

    gpu = parse(DreamMPCParams, load_params("dream_mpc", "gpu"), "dream_mpc.gpu")
    if not tiny:
        return gpu, gpu
    smoke = parse(DreamMPCParams, load_params("dream_mpc", "smoke"), "dream_mpc.smoke")
    return gpu, dataclasses.replace(
        smoke, model=dataclasses.replace(smoke.model, activation=gpu.model.activation),
        training=dataclasses.replace(smoke.training, collect_with=gpu.training.collect_with,
                                     planner_noise=gpu.training.planner_noise))


def gpu_catalog(gpu) -> list[dict]:
    """The gpu tasks' catalog rows the counts need (task, decisions_per_episode = time limit / repeat, as
    envs.task_spec), without loading the simulator."""
    from assets.dream_mpc.configs import action_repeat

    return [{"task": t, "decisions_per_episode": gpu.time_limit_steps // action_repeat(gpu.action_repeat, t)}
            for t in gpu.tasks]


def evaluation_cells(gpu) -> list[tuple[str, str, int]]:
    """(task, planner, episodes) of every evaluation cell of the gpu profile (configs.evaluation_grid over
    every task × seed × budget checkpoint and runs.planner_configs)."""
    from assets.dream_mpc import runs
    from assets.dream_mpc.configs import evaluation_grid
    from assets.dream_mpc.params import BUDGETS

    catalog = {"tasks": gpu_catalog(gpu)}
    world = {"checkpoints": [{"task": t, "seed": int(s), "budget": b, "checkpoint": ""}
                             for t in gpu.tasks for s in gpu.seeds for b in BUDGETS]}
    return [(entry["task"], cfg["name"], len(seeds))
            for entry, cfg, seeds in evaluation_grid(world, runs.planner_configs(catalog, gpu), gpu.evaluation)]


def projection(device_check, gpu, timed: dict, plan_s: dict, tiny: bool) -> dict:
    """Σ over gpu tasks × seeds of the training phases, plus the evaluation grid (module docstring)."""
    from assets.dream_mpc.configs import seed_phase

    first = next(iter(timed))
    tr, seeds = gpu.training, len(gpu.seeds)
    parts = []
    dpe = {row["task"]: row["decisions_per_episode"] for row in gpu_catalog(gpu)}
    cells = evaluation_cells(gpu)
    for task in gpu.tasks:
        t = timed.get(task, timed[first])
        seed_decisions, pretrain = seed_phase(tr, dpe[task])
        parts += [(f"{task}: random seed decision (env step)", t["seconds_per_env_step"], seeds * seed_decisions),
                  (f"{task}: pretraining update (batch {tr.batch_size})", t["seconds_per_update"], seeds * pretrain),
                  (f"{task}: acting decision (MPPI {tr.collect_mppi_samples}×{tr.collect_mppi_iterations} collection, "
                   f"env step, {tr.updates_per_decision} update)", t["seconds_per_decision"],
                   seeds * (tr.decisions - seed_decisions)),
                  (f"{task}: held-out episode decision (at an acting decision's cost)", t["seconds_per_decision"],
                   seeds * tr.heldout_episodes * dpe[task]),
                  (f"{task}: evaluation env steps", t["seconds_per_env_step"],
                   sum(n * dpe[task] for tk, _, n in cells if tk == task))]
    for name in dict.fromkeys(name for _, name, _ in cells):
        parts.append((f"evaluation: {name} batched decision", plan_s[name],
                      sum(dpe[tk] for tk, nm, _ in cells if nm == name)))
    return device_check.projection(
        parts, note="measured at --tiny sizes on the smoke tasks (their seconds stand for every gpu task); " * tiny
        + "leaves out the snapshot and gate evaluations of the policy prior (evaluate_policy, policy_vs_random), "
          "the held-out world-model measurements, the planner microbench (frozen-model and synthetic "
          "benchmarks, latency), bootstrap CIs and checkpoint writes; the evaluation planners are timed on "
          f"the first task ({first}) and their decisions counted batched over a cell's episodes; the pipeline "
          "trains and plans on the device (compute.resolved_device()), the simulator steps on the CPU")


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parents[1]
    sys.path[:0] = [str(root), str(root / "benchmarks")]
    from assets.common import device_check

    args = device_check.arguments(argv)
    torch = device_check.prepare(args.device)
    if torch is None:
        return device_check.NO_DEVICE

    import _torch_parity as T
    import numpy as np

    from assets.dream_mpc import configs, envs, runs
    from assets.dream_mpc import model as M
    from assets.dream_mpc import planners as P
    from assets.dream_mpc import training as TR

    gpu, p = profile(args.tiny)
    dev = args.device
    catalog = runs.env_catalog(p)["tasks"]
    out: dict = {"device": dev, "tiny": args.tiny, "model": dataclasses.asdict(p.model), "tasks": catalog}

    def rel(x, y) -> float:
        return float((x - y).abs().max()) / max(float(x.abs().max()), 1e-30) if x.numel() else 0.0

    def build(cfg):
        torch.manual_seed(0)
        model = M.WorldModel(cfg)
        model.q_heads.dropout = model.target_q_heads.dropout = 0.0
        T.no_dropout(model)
        return model

    def random_episode(spec, seed: int) -> TR.Episode:
        env, rng = envs.TaskEnv(spec.task, spec.time_limit_steps, spec.action_repeat, seed), np.random.default_rng(seed)
        ep, done = TR.Episode(), False
        ep.obs.append(env.reset())
        while not done:
            a = rng.uniform(-1, 1, spec.act_dim).astype(np.float32)
            obs, reward, done = env.step(a)
            ep.action.append(a)
            ep.reward.append(reward)
            ep.obs.append(obs)
        return ep

    def update(model, d: str, batch):
        """Learner.update on `d` from `model`: losses, clipped world-model gradient and step, policy step."""
        m = copy.deepcopy(model).to(d)
        learner = M.Learner(m, M.make_generator(0, d))
        wm = [q for g in learner.optim.param_groups for q in g["params"]]
        pi = [q for g in learner.pi_optim.param_groups for q in g["params"]]
        before = [torch.cat([q.detach().reshape(-1) for q in group]).cpu().clone() for group in (wm, pi)]
        b = T.move(batch, d)
        losses = learner.update(*b)
        grad = torch.cat([q.grad.reshape(-1) for q in wm if q.grad is not None]).cpu()
        after = [torch.cat([q.detach().reshape(-1) for q in group]).cpu() for group in (wm, pi)]
        again = learner.update(*b)                       # its consistency / reward losses: after the step
        return losses, grad, after[0] - before[0], after[1] - before[1], again

    def planning(model, d: str, z0, cfg):
        m = copy.deepcopy(model).to(d).freeze()
        gen = M.make_generator(0, d)
        z = z0.to(d)
        with torch.no_grad():
            actions = P.policy_rollout(m, z, cfg.horizon, gen, sample=False)
        actions = actions.detach().requires_grad_(True)
        J, u = P.trajectory_objective(m, z, actions, cfg, cfg.uncertainty, gen)
        (g,) = torch.autograd.grad(J.sum(), actions)
        return J.detach().cpu(), u.detach().cpu(), g.cpu()

    # ---------------------------------------------------------------- 1. parity
    parity, ok = {}, True
    sync = device_check.synchronizer(dev)
    timed: dict = {}
    plan_s: dict = {}
    for row in catalog:
        spec = envs.TaskSpec(**row)
        cfg = configs.model_config(row, p)
        sampler = TR.SegmentSampler(cfg.horizon, np.random.default_rng(0))
        sampler.episodes = [random_episode(spec, 0)]
        batch = sampler.sample(PARITY_BATCH)
        fresh = build(cfg)
        r: dict = {"n_parameters": fresh.parameter_count()}
        with torch.no_grad():          # the TD target's draws do not matter: every target head's logits are 0
            obs = batch[0][1:].reshape(-1, spec.obs_dim)
            r["fresh_target_q_logits_max_abs"] = float(fresh.q_logits(
                fresh.encode(obs), torch.rand(len(obs), spec.act_dim) * 2 - 1, target=True).abs().max())
        cpu, other = update(fresh, "cpu", batch), update(fresh, dev, batch)
        keys = ("consistency", "reward_loss", "value_loss")
        r["loss_rel_diff"] = max(abs(cpu[0][k] - other[0][k]) / max(abs(cpu[0][k]), 1e-30) for k in keys)
        r["grad_max_abs"] = float(cpu[1].abs().max())
        r["grad_max_rel"] = rel(cpu[1], other[1])
        r["step_l2_rel_diff"] = float((cpu[2] - other[2]).norm()) / max(float(cpu[2].norm()), 1e-30)
        r["after_step_loss_rel_diff"] = max(abs(cpu[4][k] - other[4][k]) / max(abs(cpu[4][k]), 1e-30)
                                            for k in ("consistency", "reward_loss"))
        r["pi_loss"] = {"cpu": cpu[0]["pi_loss"], "device": other[0]["pi_loss"]}     # own samples: reported
        r["policy_step_finite"] = bool(torch.isfinite(other[3]).all() and other[3].abs().max() > 0)

        warm = build(dataclasses.replace(cfg, lr=WARM_LR))  # non-constant heads for the forward / planning parity
        learner, rewards = M.Learner(warm, M.make_generator(1)), torch.Generator().manual_seed(2)
        for _ in range(WARM_UPDATES):
            o, act, rew = sampler.sample(PARITY_BATCH)
            learner.update(o, act, torch.rand(rew.shape, generator=rewards))
        warm.train()
        outs = []
        for d in ("cpu", dev):
            m = copy.deepcopy(warm).to(d)
            o, a = batch[0][0].to(d), batch[1][0].to(d)
            with torch.no_grad():
                z = m.encode(o)
                outs.append([t.cpu() for t in (z, m.next(z, a), m.reward_logits(z, a), m.q_logits(z, a),
                                               m.q_logits(z, a, target=True), m.pi(z, M.make_generator(0, d))[0])])
        r["forward_max_rel"] = max(rel(x, y) for x, y in zip(*outs, strict=True))
        dream = next(c for c in P.default_planners(cfg.discount, cfg.horizon) if c.name == "dream_mpc")
        z0 = outs[0][0]
        plans = [planning(warm, d, z0, dream) for d in ("cpu", dev)]
        r["objective_max_rel"] = rel(plans[0][0], plans[1][0])
        r["uncertainty_max_rel"] = rel(plans[0][1], plans[1][1])
        r["action_grad_max_rel"] = rel(plans[0][2], plans[1][2])
        r["action_grad_max_abs"] = float(plans[0][2].abs().max())
        r["ok"] = bool(r["fresh_target_q_logits_max_abs"] == 0.0 and r["loss_rel_diff"] <= LOSS_TOL
                       and r["grad_max_abs"] > 0 and r["grad_max_rel"] <= GRAD_TOL and r["step_l2_rel_diff"] <= STEP_TOL
                       and r["after_step_loss_rel_diff"] <= LOSS_TOL and r["policy_step_finite"]
                       and r["forward_max_rel"] <= FORWARD_TOL and r["action_grad_max_abs"] > 0
                       and max(r["objective_max_rel"], r["action_grad_max_rel"]) <= PLAN_TOL
                       and r["uncertainty_max_rel"] <= U_TOL)
        parity[spec.task] = r
        ok &= r["ok"]

        # ------------------------------------------------------------ 2. timed slice (this task)
        n_updates, n_decisions = (1, 1) if args.tiny else (UPDATES, DECISIONS)
        model = build(cfg).to(dev)
        learner = M.Learner(model, M.make_generator(0, dev))
        update_s = T.seconds_per_call(lambda learner=learner, sampler=sampler: learner.update(
            *sampler.sample(p.training.batch_size, dev)), n_updates, sync)
        job = runs.training_job(row, 0, p, lambda *k: 0, dev)
        seed_decisions = cfg.horizon + 2

        def online(decisions: int, job=job, seed_decisions=seed_decisions) -> float:
            cfg_ = dataclasses.replace(job["cfg"], decisions=decisions, seed_decisions=seed_decisions,
                                       pretrain_updates=1, snapshot_fractions=(), heldout_episodes=0)
            res = TR.train_online(**{**job, "cfg": cfg_, "eval_seeds": job["eval_seeds"][:1]}, log=lambda s: None)
            return res["timing"]["seconds"]

        if not timed:
            online(seed_decisions + 1)                    # warm-up (MPPI kernels)
        decision_s = max(online(seed_decisions + n_decisions) - online(seed_decisions), 0.0) / n_decisions
        env, rng = envs.TaskEnv(spec.task, spec.time_limit_steps, spec.action_repeat, 1), np.random.default_rng(1)
        env.reset()
        start, n_env = time.perf_counter(), 0
        for _ in range(5 if args.tiny else 50):
            n_env += 1
            if env.step(rng.uniform(-1, 1, spec.act_dim))[2]:
                env.reset()
        env_step_s = (time.perf_counter() - start) / n_env
        timed[spec.task] = {"seconds_per_update": update_s, "seconds_per_decision": decision_s,
                            "seconds_per_env_step": env_step_s, "updates": n_updates, "decisions": n_decisions}

        if len(timed) == 1:                               # the evaluation planners, on the first task
            frozen = copy.deepcopy(warm).to(dev).freeze()
            states = batch[0][0].to(dev)
            for c in runs.planner_configs({"tasks": [row]}, p)["per_task"][spec.task]:
                if c["name"] not in {*p.evaluation.planners_strong, *p.evaluation.planners_prior_sweep}:
                    continue
                pc = P.PlannerConfig(**c)
                B = p.evaluation.episodes_sampling if pc.kind in ("mppi", "cem") else p.evaluation.episodes
                planner = P.make_planner(frozen, pc, spec.act_dim, M.make_generator(0, dev))
                planner.reset(B)

                def decide(planner=planner, o=states[:B], frozen=frozen):
                    with torch.no_grad():
                        z = frozen.encode(o)
                    return planner.act(z)[0].cpu()           # run_episodes' decision (the copy synchronises)

                plan_s[pc.name] = T.seconds_per_call(decide, 1 if args.tiny else PLAN_CALLS, sync)
    out["parity"] = parity
    out["parity_ok"] = bool(ok)
    out["timed"] = {"per_task": timed, **{f"planner_{k}_seconds_per_decision": x for k, x in plan_s.items()},
                    "batch_size": p.training.batch_size,
                    "collect_mppi": [p.training.collect_mppi_samples, p.training.collect_mppi_iterations]}
    out["projection"] = projection(device_check, gpu, timed, plan_s, args.tiny)
    return device_check.finish(out, ok, args.out)


if __name__ == "__main__":
    sys.exit(main())
