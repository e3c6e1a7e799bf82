"""Dream-MPC data-quality predicates: pure functions returning the problems found (empty = pass).

definitions.py turns each into a blocking Dagster check (Paper.gate); the probe CLI and the
task survey apply the three world-model predicates to their own checkpoints; tests call them
directly on corrupted inputs. No Dagster import, no torch at import time.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.findings import Finding, finding
from assets.dream_mpc.configs import evaluation_grid
from assets.dream_mpc.params import DreamMPCParams
from resources.quality import expect, validate_frame

SPLITS = ["seed", "train", "heldout"]


def stack(column: pd.Series) -> np.ndarray:
    """A column of equal-length vectors as a (rows, dim) float64 array."""
    return np.stack([np.asarray(v, dtype=np.float64) for v in column])


def catalog_valid(value: dict) -> Finding:
    problems = []
    for s in value["tasks"]:
        if s["obs_dim"] <= 0 or s["act_dim"] <= 0:
            problems.append(f"{s['task']}: obs dim {s['obs_dim']}, action dim {s['act_dim']}")
        if s["time_limit_steps"] % s["action_repeat"] or s["decisions_per_episode"] < 1:
            problems.append(f"{s['task']}: time limit {s['time_limit_steps']} vs action repeat {s['action_repeat']}")
    if not value["tasks"]:
        problems.append("no tasks")
    return finding(problems, ok=f"{len(value['tasks'])} tasks with positive dims and whole-decision episodes")


def buffer_valid(frame: pd.DataFrame, env_catalog: dict, params: DreamMPCParams) -> Finding:
    """No NaN/inf, |a| ≤ 1, rewards in [0, action_repeat] (dm_control reward ≤ 1 per control step),
    episode lengths as configured, enough transitions, obs/action dims as in the catalog."""
    problems = []
    for spec in env_catalog["tasks"]:
        sub = frame[frame["task"] == spec["task"]]
        if sub.empty:
            problems.append(f"{spec['task']}: no transitions")
            continue
        obs, nxt, act = stack(sub["obs"]), stack(sub["next_obs"]), stack(sub["action"])
        rew = sub["reward"].to_numpy(dtype=float)
        for name, arr in (("obs", obs), ("next_obs", nxt), ("action", act), ("reward", rew)):
            bad = ~np.isfinite(arr).reshape(len(sub), -1).all(1)
            if bad.any():
                first = sub[bad].iloc[0]
                problems.append(f"{spec['task']}: {int(bad.sum())} transitions with non-finite {name} "
                                f"(first: seed {first['seed']}, episode {first['episode']}, t {first['t']})")
        if obs.shape[1] != spec["obs_dim"] or act.shape[1] != spec["act_dim"]:
            problems.append(f"{spec['task']}: obs/action dims {obs.shape[1]}/{act.shape[1]} != catalog "
                            f"{spec['obs_dim']}/{spec['act_dim']}")
        if np.nanmax(np.abs(act)) > 1 + 1e-6:
            problems.append(f"{spec['task']}: |action| up to {np.nanmax(np.abs(act)):.3f} > 1")
        if np.nanmin(rew) < 0 or np.nanmax(rew) > spec["action_repeat"] + 1e-6:
            problems.append(f"{spec['task']}: rewards in [{np.nanmin(rew):.3f}, {np.nanmax(rew):.3f}] outside "
                            f"[0, {spec['action_repeat']}] (action repeat × [0, 1])")
        lengths = sub.groupby(["seed", "episode"]).size()
        wrong = lengths[lengths != spec["decisions_per_episode"]]
        if len(wrong):
            problems.append(f"{spec['task']}: {len(wrong)} episodes not of length {spec['decisions_per_episode']} "
                            f"(e.g. {wrong.head(3).to_dict()})")
    minimum = params.training.min_transitions
    per_run = frame.groupby(["task", "seed"]).size()
    if (per_run < minimum).any():
        problems.append(f"runs with fewer than {minimum} transitions: {per_run[per_run < minimum].to_dict()}")
    gx = validate_frame(frame[["task", "split", "reward", "done"]], [
        expect("ExpectColumnValuesToNotBeNull", column="reward"),
        expect("ExpectColumnValuesToBeInSet", column="split", value_set=SPLITS),
        expect("ExpectColumnValuesToBeInSet", column="task", value_set=[s["task"] for s in env_catalog["tasks"]]),
        expect("ExpectColumnValuesToBeInSet", column="done", value_set=[True, False]),
    ], name="dream_mpc_replay_buffer")
    if not gx.success:
        problems.append(gx.summary())
    return finding(problems, ok=f"{len(frame)} transitions finite, |a| ≤ 1, rewards in range, "
                   "episode lengths as configured")


def _name(e: dict) -> str:
    return f"{e['task']}/seed {e['seed']}/{e['budget']}"


def world_model_fit(value: dict, params: DreamMPCParams) -> Finding:
    """Held-out 1-step consistency (relative to the latent variance) and reward MSE under the
    thresholds, for the checkpoints of gates.fit_budgets."""
    g = params.gates
    budgets = list(g.fit_budgets)
    problems = []
    for e in value["checkpoints"]:
        if e["budget"] not in budgets:
            continue
        if not (e["consistency_relative"] < g.max_consistency_relative):
            problems.append(f"{_name(e)}: held-out 1-step consistency MSE {e['consistency_mse']:.3g} is "
                            f"{e['consistency_relative']:.3f} of the latent variance "
                            f"(max {g.max_consistency_relative})")
        if not (e["reward_mse_normalised"] < g.max_reward_mse):
            problems.append(f"{_name(e)}: held-out reward MSE {e['reward_mse_normalised']:.4f} ≥ {g.max_reward_mse}")
    return finding(problems, ok=f"the {budgets} checkpoints fit the held-out episodes (consistency < "
                   f"{g.max_consistency_relative} of latent variance, reward MSE < {g.max_reward_mse})")


def q_ensemble_sane(value: dict, params: DreamMPCParams) -> Finding:
    """Q finite; ensemble std below the value range and (where enforced) above a collapse bound."""
    low = params.gates.min_q_ensemble_std
    problems = []
    for e in value["checkpoints"]:
        if not e["q_finite"]:
            problems.append(f"{_name(e)}: non-finite Q")
        elif not e["q_ensemble_std"] < e["value_range"]:
            problems.append(f"{_name(e)}: Q-ensemble std {e['q_ensemble_std']:.2e} ≥ value range "
                            f"{e['value_range']:.3g}")
        elif low is not None and not e["q_ensemble_std"] > float(low):
            problems.append(f"{_name(e)}: Q-ensemble std {e['q_ensemble_std']:.2e} ≤ {low} (collapsed)")
    note = "" if low is not None else " (collapse bound not enforced at this profile: wiring only)"
    return finding(problems, ok="Q finite; ensemble neither collapsed nor exploded" + note)


def gate_returns_text(e: dict) -> str:
    """runs.gate_returns' measurement of one checkpoint, as the gate and the logs print it."""
    return (f"{e['gate_policy_return']:.1f} vs {e['gate_random_return']:.1f}, Δ {e['gate_diff']:+.1f} "
            f"[90% CI {e['gate_diff_low']:+.1f}, {e['gate_diff_high']:+.1f}]")


def policy_beats_random(value: dict, params: DreamMPCParams) -> Finding:
    """The strong checkpoint's policy-only return exceeds the random policy's by the margin.
    With params gates.policy_episodes > 0 (runs.gate_returns measured): the lower bound of the
    90 % paired t interval of policy − random on those fresh initial states must exceed it; the
    point estimate on training's few eval episodes (the rule before) is shown beside it, with the
    checkpoints it alone would fail. Otherwise that point estimate is judged."""
    margin = params.gates.policy_margin_over_random
    strong = [e for e in value["checkpoints"] if e["budget"] == "strong"]

    def label(e: dict) -> str:
        return f"{e['task']}/seed {e['seed']}"

    point = ", ".join(f"{label(e)}: {e['policy_eval_return']:.1f} vs {e['random_eval_return']:.1f}" for e in strong)
    point_fails = [label(e) for e in strong
                   if not e["policy_eval_return"] > e["random_eval_return"] + float(margin or 0.0)]
    interval = params.gates.policy_episodes > 0
    if interval:
        missing = [label(e) for e in strong if "gate_diff_low" not in e]
        if missing:
            return finding([f"no paired policy-vs-random measurement for {missing}"])
        text = ("; ".join(f"{label(e)}: {gate_returns_text(e)}" for e in strong)
                + f" (on {params.gates.policy_episodes} fresh initial states; on training's eval episodes: {point})")
        fails = [label(e) for e in strong if not e["gate_diff_low"] > float(margin or 0.0)]
    else:
        text, fails = point, point_fails
    if margin is None:
        return finding(ok=f"not enforced at this profile (wiring only); policy vs random: {text}")
    rule = f"> {margin}" + (" (90% CI lower bound)" if interval else "")
    if fails:
        return finding([f"strong policy does not beat the random policy by {rule} on {fails}; " + text])
    note = f" (the point estimate on training's eval episodes alone would fail {point_fails})" \
        if interval and point_fails else ""
    return finding(ok=f"strong policy beats random everywhere by {rule}{note}; " + text)


# the world-model gates by check name (definitions.py, the probe and the task survey)
WORLD_MODEL_PREDICATES = {"heldout_fit": world_model_fit, "q_ensemble_sane": q_ensemble_sane,
                          "policy_beats_random": policy_beats_random}


def grid_complete(frame: pd.DataFrame, world_model: dict, planner_configs: dict,
                  params: DreamMPCParams) -> Finding:
    """Every cell of task × seed × budget × planner × episode present; counters equal the
    configured N·I·H (or samples·iterations·H) on every step; no NaN objective."""
    from assets.dream_mpc.planners import PlannerConfig

    expected = {(e["task"], e["seed"], e["budget"], c["name"], s)
                for e, c, seeds in evaluation_grid(world_model, planner_configs, params.evaluation) for s in seeds}
    seen = set(map(tuple, frame[["task", "seed", "budget", "planner", "episode_seed"]].itertuples(index=False)))
    problems = []
    if expected - seen:
        problems.append(f"{len(expected - seen)} missing cells, e.g. {sorted(expected - seen)[:3]}")
    configured = {c["name"]: PlannerConfig(**c).optimisation_evaluations()
                  for c in next(iter(planner_configs["per_task"].values()))}
    for planner, g in frame.groupby("planner"):
        n = configured.get(planner)
        if n is None or not ((g["opt_evals_min"] == n).all() and (g["opt_evals_max"] == n).all()):
            problems.append(f"{planner}: counters {g['opt_evals_min'].min():.0f}..{g['opt_evals_max'].max():.0f} "
                            f"!= configured {n}")
    planned = frame[frame["planner"] != "policy_only"]
    if planned["objective_nan"].sum():
        problems.append(f"{int(planned['objective_nan'].sum())} decisions with NaN objective J")
    if not np.isfinite(frame["normalised_score"]).all():
        problems.append("non-finite scores")
    return finding(problems, ok=f"{len(expected)} cells present, counters exact, J finite", cells=len(expected))


def microbench_valid(value: dict) -> Finding:
    """J finite on the synthetic system, and no planner above the exact optimum J*."""
    synth = pd.DataFrame(value["synthetic"])
    problems = []
    if not np.isfinite(synth["J"]).all():
        problems.append("non-finite J on the synthetic system")
    over = synth[synth["J"] > synth["J_opt"] + 1e-3 * synth["J_opt"].abs().clip(lower=1)]
    if len(over):
        problems.append(f"{len(over)} planners exceed the known optimum J* (objective or optimum wrong)")
    return finding(problems, ok="J finite; no planner beats the exact optimum")
