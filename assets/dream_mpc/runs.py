"""Dream-MPC experiment loops: what each asset computes — no Dagster import, torch imported lazily.

Each function is one asset's work (or a step the asset and the probe CLI share), given the
typed parameters, `seed_for(*keys)` / `rng(*keys)` from the compute resource (seeds derived in
one place), the device, and a `log` function for progress lines. Wall-clock measurements
(training seconds, evaluation wall time) are logged or returned apart from the values that
DVC tracks, so those stay byte-identical on a rerun.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd

from assets.common.parallel import longest_first, spawn_imap
from assets.common.progress import Progress
from assets.dream_mpc import checks
from assets.dream_mpc.configs import (
    BUDGET_NAMES,
    action_repeat,
    checkpoint_name,
    evaluation_grid,
    model_config,
    train_config,
)
from assets.dream_mpc.params import SLUG, DreamMPCParams, SurveyParams

Log = Callable[[str], None]
SeedFor = Callable[..., int]
Workers = Callable[[int], int]     # jobs -> worker processes (compute.workers with params `workers`)
SURVEY_COLUMNS = ["task", "seed", "action_repeat", "decisions", "policy_eval_return", "random_eval_return",
                  "gate_policy_return", "gate_random_return", "gate_diff_low",
                  "consistency_relative", "reward_mse_normalised", "q_ensemble_std", "heldout_fit",
                  "q_ensemble_sane", "policy_beats_random", "passes_all_gates", "gate_notes"]


# ------------------------------------------------------------------------------ catalog
def env_catalog(params: DreamMPCParams) -> dict:
    """Catalog rows of the profile's tasks (dims read from the simulator) and the versions."""
    import dm_control
    import mujoco

    from assets.dream_mpc import envs

    specs = [envs.task_spec(t, params.time_limit_steps, action_repeat(params.action_repeat, t)).to_dict()
             for t in params.tasks]
    versions = {"mujoco": mujoco.__version__, "dm_control": getattr(dm_control, "__version__", "1.0.50")}
    return {"tasks": specs, "versions": versions}


# ------------------------------------------------------------------------------ training
def training_job(spec: dict, seed: int, params: DreamMPCParams, seed_for: SeedFor, device: str) -> dict:
    """train_online's keyword arguments for one (task, seed) run (the replay buffer and the probe)."""
    from assets.dream_mpc.envs import TaskSpec

    task = TaskSpec(**spec)
    if params.training.decisions % task.decisions_per_episode:
        raise ValueError(f"training decisions {params.training.decisions} are not whole episodes of "
                         f"{task.decisions_per_episode} decisions on {task.task}")
    return dict(spec=task, model_cfg=model_config(spec, params),
                cfg=train_config(params.training, task.decisions_per_episode, task.task),
                seed=seed_for("train", task.task, int(seed)), eval_seeds=[int(s) for s in params.training.eval_seeds],
                device=device)


def train_runs(jobs: list[dict], workers: int, threads: int, log: Log) -> Iterator[dict]:
    """train_online for every job, in job order: in this process (workers 1) or spawned."""
    from assets.dream_mpc import training as T

    if workers == 1:
        return (T.train_online(**kw, log=log) for kw in jobs)
    return spawn_imap(T.train_job, [{**kw, "torch_threads": threads} for kw in jobs], workers)


def timing_line(task: str, seed: int, out: dict) -> str:
    t = out["timing"]
    return (f"{task} seed {seed}: {t['updates']} updates in {t['seconds']:.0f} s "
            f"({t['env_steps_per_s']:.0f} env steps/s)")


def snapshot_sidecars(spec: dict, seed: int, out: dict, params: DreamMPCParams) -> list[tuple[str, dict, dict]]:
    """(checkpoint name, state_dict, sidecar) per snapshot of one run. The sidecar holds the
    model config, evaluation returns, update counts and the training curve, without wall time
    (a checkpoint is a reproducible output; timing_line logs the seconds)."""
    timing = {k: out["timing"][k] for k in ("decisions", "updates")}
    curve = [{k: v for k, v in c.items() if k != "seconds"} for c in out["curve"]]
    rows = []
    for frac, state in out["snapshots"].items():
        budget = BUDGET_NAMES[frac]
        rows.append((checkpoint_name(spec["task"], seed, budget), state, {
            "task": spec["task"], "seed": seed, "budget": budget, "fraction": frac,
            "model_config": model_config(spec, params).to_dict(), "task_spec": spec,
            "policy_eval_returns": out["evals"][frac], "random_eval_returns": out["evals"]["random"],
            "timing": timing, "curve": curve}))
    return rows


def episodes_frame(episodes: list, task: str, seed: int) -> pd.DataFrame:
    """Transitions (s, a, r, s′, done) of a run's episodes, one row per decision."""
    rows = []
    for index, ep in enumerate(episodes):
        n = len(ep.action)
        for t in range(n):
            rows.append({"task": task, "seed": seed, "episode": index, "split": ep.split, "t": t,
                         "obs": np.asarray(ep.obs[t], dtype=np.float32),
                         "action": np.asarray(ep.action[t], dtype=np.float32),
                         "reward": float(ep.reward[t]), "next_obs": np.asarray(ep.obs[t + 1], dtype=np.float32),
                         "done": t == n - 1, "episode_length": n})
    return pd.DataFrame(rows)


def replay_buffer(catalog: dict, params: DreamMPCParams, seed_for: SeedFor, device: str, workers: Workers,
                  threads: int, save: Callable[[str, dict, dict], Any], log: Log) -> pd.DataFrame:
    """The online TD-MPC2-lite run per task × seed: its transitions (split seed / train /
    heldout); `save(name, state, sidecar)` writes each snapshot's checkpoint; `workers(jobs)`
    is the number of worker processes for that many runs."""
    jobs = [(spec, int(seed)) for spec in catalog["tasks"] for seed in params.seeds]
    kwargs = [training_job(spec, seed, params, seed_for, device) for spec, seed in jobs]
    n_workers = workers(len(jobs))
    log(f"training {len(jobs)} runs (task × seed) on {n_workers} worker process(es), device {device}")
    frames = []
    for (spec, seed), out in zip(jobs, train_runs(kwargs, n_workers, threads, log)):
        log(timing_line(spec["task"], seed, out))
        for name, state, sidecar in snapshot_sidecars(spec, seed, out, params):
            save(name, state, sidecar)
        frames.append(episodes_frame(out["episodes"], spec["task"], seed))
    return pd.concat(frames, ignore_index=True)


# ------------------------------------------------------------------------------ held-out measurements
def load_model(ref: str, spec: dict, device: str = "cpu"):
    """Frozen WorldModel on `device` (compute.resolved_device()) from a checkpoint reference;
    clear errors for a corrupt file or a checkpoint whose dimensions do not match the environment.
    Module-level, so evaluation worker processes can receive it."""
    from assets.dream_mpc import envs, evaluation
    from assets.dream_mpc import model as M
    from resources.artifacts import load_state_dict, resolve_data_ref

    path = resolve_data_ref(ref)
    try:
        state, sidecar = load_state_dict(path)
    except Exception as exc:  # md5 mismatch, truncated file, unreadable sidecar
        raise ValueError(f"corrupt or unreadable checkpoint {ref}: {exc}") from exc
    cfg = M.ModelConfig(**sidecar["model_config"])
    model = M.model_from_state(state, cfg, device)
    evaluation.check_compatible(model, envs.TaskSpec(**spec))
    return model, sidecar


def heldout_metrics(model, held: pd.DataFrame, spec: dict, torch) -> dict:
    """1-step latent consistency MSE, reward MSE (per control step, i.e. / action_repeat),
    Q ensemble statistics (expected values of the 5 heads) on held-out transitions."""
    from assets.dream_mpc import model as M

    device = M.model_device(model)
    obs = torch.as_tensor(checks.stack(held["obs"]), dtype=torch.float32, device=device)
    nxt = torch.as_tensor(checks.stack(held["next_obs"]), dtype=torch.float32, device=device)
    act = torch.as_tensor(checks.stack(held["action"]), dtype=torch.float32, device=device)
    rew = torch.as_tensor(held["reward"].to_numpy(dtype=np.float32, copy=True), device=device).unsqueeze(-1)
    ar = float(spec["action_repeat"])
    with torch.no_grad():
        z, z_next = model.encode(obs), model.encode(nxt)
        before = model.dynamics_evaluations
        pred = model.next(z, act)
        model.dynamics_evaluations = before
        r_hat = model.reward(z, act)
        q = model.q_all(z, act).squeeze(-1)                               # (K, B)
    latent_var = float(z_next.var(0).sum())
    return {"consistency_mse": float(((pred - z_next) ** 2).sum(-1).mean()),
            "consistency_relative": float(((pred - z_next) ** 2).sum(-1).mean()) / max(latent_var, 1e-12),
            "reward_mse_normalised": float((((r_hat - rew) / ar) ** 2).mean()),
            "q_finite": bool(torch.isfinite(q).all()),
            "q_ensemble_std": float(q.std(0, unbiased=False).mean()),
            "q_mean": float(q.mean()),
            "value_range": float(M.symexp(torch.tensor(model.cfg.vmax)) - M.symexp(torch.tensor(model.cfg.vmin))),
            "heldout_transitions": int(len(held))}


def heldout_slice(replay: pd.DataFrame, task: str, seed: int) -> pd.DataFrame:
    return replay[(replay["task"] == task) & (replay["seed"] == seed) & (replay["split"] == "heldout")]


def gate_returns(model, spec: dict, params: DreamMPCParams, seed_for: SeedFor) -> dict:
    """policy_beats_random's measurement (training.policy_vs_random) on params.gates.policy_episodes
    fresh initial states; {} when that is 0 (the gate then reads training's eval returns)."""
    from assets.dream_mpc import envs
    from assets.dream_mpc import training as T

    g = params.gates
    if not g.policy_episodes:
        return {}
    seeds = [int(g.policy_episode_seed) + 1 + i for i in range(int(g.policy_episodes))]
    return T.policy_vs_random(model, envs.TaskSpec(**spec), seeds, seed_for("gate-random", spec["task"]))


def world_model(catalog: dict, replay: pd.DataFrame, params: DreamMPCParams, checkpoint_ref: Callable[[str], str],
                device: str, torch, log: Log, seed_for: SeedFor) -> dict:
    """Every checkpoint (task × seed × budget) reloaded and measured on its run's held-out
    episodes, with the policy / random evaluation returns (training's eval episodes; for the
    strong checkpoint also gate_returns); the strong runs' training curves."""
    entries, curves = [], []
    for spec in catalog["tasks"]:
        task = spec["task"]
        for seed in map(int, params.seeds):
            held = heldout_slice(replay, task, seed)
            if held.empty:
                raise ValueError(f"no held-out transitions for {task} seed {seed}")
            for budget in BUDGET_NAMES.values():
                ref = checkpoint_ref(checkpoint_name(task, seed, budget))
                model, sidecar = load_model(ref, spec, device)
                metrics = heldout_metrics(model, held, spec, torch)
                policy_return = float(np.mean(sidecar["policy_eval_returns"]))
                random_return = float(np.mean(sidecar["random_eval_returns"]))
                gate = gate_returns(model, spec, params, seed_for) if budget == "strong" else {}
                entries.append({"task": task, "seed": seed, "budget": budget, "fraction": sidecar["fraction"],
                                "checkpoint": ref, "md5": sidecar["md5"], "parameters": model.parameter_count(),
                                **metrics, "policy_eval_return": policy_return, "random_eval_return": random_return,
                                **gate})
                if budget == "strong":
                    curves += [{**c, "task": task, "seed": seed} for c in sidecar["curve"]]
                log(f"{task} seed {seed} {budget}: consistency {metrics['consistency_mse']:.2e}, "
                    f"reward MSE {metrics['reward_mse_normalised']:.4f}, policy {policy_return:.1f} "
                    f"vs random {random_return:.1f}"
                    + (f"; on {gate['gate_episodes']} fresh states {checks.gate_returns_text(gate)}" if gate else ""))
    return {"checkpoints": entries, "curves": curves}


# ------------------------------------------------------------------------------ planners
def planner_configs(catalog: dict, params: DreamMPCParams) -> dict:
    """Planners (a)–(h) per task: one parameter set, the task's discount, params overrides."""
    from assets.dream_mpc import model as M
    from assets.dream_mpc import planners as P

    per_task = {}
    for spec in catalog["tasks"]:
        discount = M.discount_from_episode_length(int(spec["decisions_per_episode"]))
        per_task[spec["task"]] = [c.to_dict() for c in P.default_planners(discount, params.model.horizon)]
    for configs in per_task.values():
        for c in configs:
            c.update(dict(params.planner_overrides.get(c["name"], {})))
    return {"per_task": per_task, "calibration": "none: the paper's single parameter set is used for every "
                                                 "task (no α/λ sweep, which the spec marks optional)"}


# ------------------------------------------------------------------------------ evaluation
def cell_cost(planner: dict) -> float:
    """Relative cost of an evaluation cell (for the start order only): dynamics evaluations
    per decision of its optimisation, at least 1 (the policy-only cell)."""
    from assets.dream_mpc import planners as P

    return float(max(1, P.PlannerConfig(**planner).optimisation_evaluations()))


def evaluate(catalog: dict, world_model: dict, planner_configs: dict, params: DreamMPCParams, seed_for: SeedFor,
             device: str, workers: Workers, threads: int, log: Log
             ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Every evaluation cell (checkpoint × planner × episode seeds) on the frozen models.

    Returns (episodes, steps, wall): one row per episode (return, score, counter summaries),
    one per episode and decision (counters, J, u), and the wall time per decision of every
    episode (batched wall time / batch size; a run record, not part of the other two)."""
    from assets.dream_mpc import evaluation
    from assets.dream_mpc import planners as P

    specs = {s["task"]: s for s in catalog["tasks"]}
    grid = evaluation_grid(world_model, planner_configs, params.evaluation)
    cells = [{"loader": load_model, "ref": entry["checkpoint"], "spec": specs[entry["task"]], "planner": cfg,
              "episode_seeds": episode_seeds, "device": device, "torch_threads": threads,
              "generator_seed": seed_for("plan", entry["task"], entry["seed"], entry["budget"], cfg["name"])}
             for entry, cfg, episode_seeds in grid]
    n_workers = workers(len(cells))
    log(f"{len(cells)} evaluation cells on {n_workers} worker process(es), device {device}")
    progress = Progress(log, len(cells), "evaluation")
    frames, step_frames, walls = [], [], []
    # sampling planners (9,216 evaluations per decision) cost ~20x a gradient cell: start them
    # first so that no long cell runs alone at the end; the tables keep the grid order
    costs = [cell_cost(cfg) for _, cfg, _ in grid]
    done: dict[int, tuple[pd.DataFrame, pd.DataFrame]] = {}
    for index, result in longest_first(evaluation.evaluate_cell, cells, n_workers, costs):
        done[index] = result
        entry, cfg_dict, _ = grid[index]
        progress.step(f"{entry['task']} seed {entry['seed']} {entry['budget']} {cfg_dict['name']}: score "
                      f"{result[0]['normalised_score'].mean():.3f}, "
                      f"{result[0]['seconds_per_decision'].mean() * 1e3:.1f} ms/decision")
    for index, (entry, cfg_dict, _) in enumerate(grid):
        episodes, steps = done[index]
        cfg = P.PlannerConfig(**cfg_dict)
        dims = {"task": entry["task"], "seed": entry["seed"], "budget": entry["budget"], "planner": cfg.name}
        summary = steps.groupby("episode_seed").agg(
            opt_evals_min=("optimisation_evaluations", "min"), opt_evals_max=("optimisation_evaluations", "max"),
            proposal_evals=("proposal_evaluations", "mean"), objective_mean=("objective", "mean"),
            objective_nan=("objective", lambda x: int(np.isnan(x).sum())), uncertainty_mean=("uncertainty", "mean"))
        walls.append(episodes[["episode_seed", "seconds_per_decision"]].assign(**dims))
        frames.append(episodes.drop(columns="seconds_per_decision").merge(summary.reset_index(), on="episode_seed")
                      .assign(**dims))
        step_frames.append(steps.drop(columns="wall_s").assign(**dims))
    order = ["task", "seed", "budget", "planner", "episode_seed"]
    frame = pd.concat(frames, ignore_index=True)
    wall = pd.concat(walls, ignore_index=True)
    return (frame[order + [c for c in frame.columns if c not in order]],
            pd.concat(step_frames, ignore_index=True), wall[order + ["seconds_per_decision"]])


# ------------------------------------------------------------------------------ microbench
def planner_microbench(catalog: dict, world_model: dict, replay: pd.DataFrame, planner_configs: dict,
                       params: DreamMPCParams, rng: Callable[..., np.random.Generator], device: str, torch,
                       log: Log) -> dict:
    """J reached vs optimisation evaluations on the frozen strong models of the first seed
    (held-out start states) and on the synthetic LQ system, and single-state decision latency."""
    from assets.dream_mpc import microbench
    from assets.dream_mpc import planners as P

    mb = params.microbench
    specs = {s["task"]: s for s in catalog["tasks"]}
    start = time.monotonic()
    frozen, latency = [], []
    for entry in world_model["checkpoints"]:
        if entry["budget"] != "strong" or entry["seed"] != int(params.seeds[0]):
            continue
        model, _ = load_model(entry["checkpoint"], specs[entry["task"]], device)
        held = heldout_slice(replay, entry["task"], entry["seed"])
        rows = rng("microbench", entry["task"]).choice(len(held), size=min(mb.start_states, len(held)), replace=False)
        with torch.no_grad():
            z = model.encode(torch.as_tensor(checks.stack(held["obs"].iloc[rows]), dtype=torch.float32,
                                             device=device))
        base = [P.PlannerConfig(**c) for c in planner_configs["per_task"][entry["task"]]]
        act_dim = int(specs[entry["task"]]["act_dim"])
        frozen.append(microbench.frozen_model_benchmark(model, base, z, act_dim, seed=mb.seed)
                      .assign(task=entry["task"]))
        latency.append(microbench.decision_latency(model, base, z, act_dim, seed=mb.seed,
                                                   repeats=mb.latency_repeats).assign(task=entry["task"]))
        log(f"frozen-model microbench {entry['task']} done ({time.monotonic() - start:.0f} s)")
    first = next(iter(planner_configs["per_task"].values()))
    synthetic = microbench.synthetic_benchmark([P.PlannerConfig(**c) for c in first], list(mb.action_dims),
                                               states=mb.synthetic_states, seed=mb.seed,
                                               horizon=params.model.horizon, discount=mb.discount)
    log(f"synthetic microbench done ({time.monotonic() - start:.0f} s)")
    return {"frozen": pd.concat(frozen, ignore_index=True).to_dict("records"),
            "synthetic": synthetic.to_dict("records"),
            "latency": pd.concat(latency, ignore_index=True).to_dict("records")}


# ------------------------------------------------------------------------------ probe / task survey
def probe_run(task: str, seed: int, compute: Any, repeat: int | None = None, log: Log = print) -> dict:
    """Train (task, seed) exactly as replay_buffer does at the compute resource's profile,
    measure the strong checkpoint on its held-out episodes as world_model does, and judge it
    by the three world-model gate predicates. `repeat` overrides params action_repeat."""
    from assets.dream_mpc import envs
    from assets.dream_mpc import training as T
    from assets.dream_mpc.params import load

    params = load(compute)
    torch = compute.torch(compute.seed_for(SLUG, "train"), threads=params.torch_threads)
    repeat = int(repeat) if repeat else action_repeat(params.action_repeat, task)
    spec = envs.task_spec(task, params.time_limit_steps, repeat).to_dict()
    job = training_job(spec, seed, params, lambda *k: compute.seed_for(SLUG, *k), compute.resolved_device())
    start = time.monotonic()
    out = T.train_online(**job, log=log)
    frame = episodes_frame(out["episodes"], task, seed)
    model = out["model"].freeze()
    metrics = heldout_metrics(model, frame[frame["split"] == "heldout"], spec, torch)
    entry = {"task": task, "seed": seed, "budget": "strong", **metrics,
             "policy_eval_return": float(np.mean(out["evals"][1.0])),
             "random_eval_return": float(np.mean(out["evals"]["random"])),
             **gate_returns(model, spec, params, lambda *k: compute.seed_for(SLUG, *k))}
    gates = {name: fn({"checkpoints": [entry]}, params) for name, fn in checks.WORLD_MODEL_PREDICATES.items()}
    return {**entry, "action_repeat": repeat, "decisions": job["cfg"].decisions, "profile": compute.profile,
            "seconds": round(time.monotonic() - start, 1),
            "policy_return_by_fraction": {str(k): float(np.mean(v)) for k, v in out["evals"].items() if k != "random"},
            "training_episode_returns": [round(c["value"], 1) for c in out["curve"] if c["kind"] == "episode_return"],
            "gates": {k: {"passed": f.passed, "description": f.message()} for k, f in gates.items()},
            "passes_all_gates": all(f.passed for f in gates.values())}


def probe_job(job: dict) -> dict:
    """probe_run for one job {task, seed, compute_config[, action_repeat]} (a spawned worker
    builds its own compute resource from the fields of the run's)."""
    from resources.compute import ComputeResource

    compute = ComputeResource(**job["compute_config"])
    return probe_run(job["task"], int(job["seed"]), compute, job.get("action_repeat"))


def survey_jobs(survey: SurveyParams, compute_config: dict) -> list[dict]:
    """One probe job per task × seed of a survey (params task_survey, or the probe CLI's);
    unknown task ids fail here, before any training."""
    from assets.dream_mpc import envs

    jobs = [{"task": str(t), "seed": int(s), "compute_config": compute_config}
            for t in survey.tasks for s in survey.seeds]
    for job in jobs:
        envs.resolve_task(job["task"])
    return jobs


def task_survey(jobs: list[dict], workers: int, log: Log) -> pd.DataFrame:
    """Report only: one row per surveyed task × seed with the measurements and each gate's
    verdict (training seconds are logged, not stored)."""
    results = map(probe_job, jobs) if workers == 1 else spawn_imap(probe_job, jobs, workers)
    rows = []
    for i, out in enumerate(results, 1):
        gates = out["gates"]
        rows.append({**{k: out[k] for k in SURVEY_COLUMNS if k in out},
                     **{name: g["passed"] for name, g in gates.items()},
                     "gate_notes": "; ".join(g["description"] for g in gates.values() if not g["passed"])})
        fresh = (f" (on the gate's {out['gate_episodes']} fresh states {checks.gate_returns_text(out)})"
                 if "gate_episodes" in out else "")
        log(f"[{i}/{len(jobs)}] {out['task']} seed {out['seed']}: policy {out['policy_eval_return']:.1f} "
            f"vs random {out['random_eval_return']:.1f} on training's eval episodes{fresh}, "
            f"gates {'pass' if out['passes_all_gates'] else 'FAIL'} ({out['seconds']:.0f} s)")
    return pd.DataFrame(rows, columns=SURVEY_COLUMNS)
