"""Does a task pass dream_mpc's blocking world-model gates at a profile's budget?

    python -m assets.dream_mpc.probe reacher-easy --seed 0 --profile cpu [--action-repeat 4]

Trains one (task, seed) run exactly as the replay_buffer asset does (same seed derivation,
training config, action repeat from params unless overridden), measures the strong checkpoint
on its held-out episodes as the world_model asset does, and applies the same three gate
functions (held-out fit, Q ensemble, policy vs random). Prints progress and one JSON line:
the measurements and each gate's verdict. Nothing is written to data/. The task_survey asset
runs it for the tasks a profile measures but does not claim on (params `task_survey`).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np


def probe(task: str, seed: int, profile: str = "cpu", action_repeat: int | None = None,
          compute_config: dict | None = None) -> dict:
    """Train (task, seed) at `profile` and judge its strong checkpoint by the world-model gates.
    `compute_config` (the compute resource's fields) overrides the default resource, so the
    task_survey asset probes with the run's device, base seed and determinism."""
    from assets.dream_mpc import definitions as D
    from assets.dream_mpc import envs
    from assets.dream_mpc import training as T
    from resources.compute import ComputeResource

    compute = ComputeResource(**{"profile": profile, **(compute_config or {})})
    params = D._params(compute)
    torch = D._torch(compute, "train")
    tp = params["training"]
    repeat = int(action_repeat) if action_repeat else D.action_repeat(params, task)
    spec = envs.task_spec(task, int(params["time_limit_steps"]), repeat)
    cfg = D.train_config(tp, spec.decisions_per_episode)
    start = time.monotonic()
    out = T.train_online(spec, D._model_config(spec.to_dict(), params), cfg,
                         seed=compute.seed_for(D.SLUG, "train", task, seed),
                         eval_seeds=[int(s) for s in tp["eval_seeds"]], device=compute.resolved_device())
    frame = D._episodes_frame(out["episodes"], task, seed)
    metrics = D.heldout_metrics(out["model"].freeze(), frame[frame["split"] == "heldout"], spec.to_dict(), torch)
    entry = {"task": task, "seed": seed, "budget": "strong", **metrics,
             "policy_eval_return": float(np.mean(out["evals"][1.0])),
             "random_eval_return": float(np.mean(out["evals"]["random"]))}
    gates = {name: fn({"checkpoints": [entry]}, compute) for name, fn in
             (("heldout_fit", D._world_model_fit), ("q_ensemble_sane", D._q_ensemble_sane),
              ("policy_beats_random", D._policy_beats_random))}
    return {**entry, "action_repeat": repeat, "decisions": cfg.decisions, "profile": profile,
            "seconds": round(time.monotonic() - start, 1),
            "policy_return_by_fraction": {str(k): float(np.mean(v)) for k, v in out["evals"].items() if k != "random"},
            "training_episode_returns": [round(c["value"], 1) for c in out["curve"] if c["kind"] == "episode_return"],
            "gates": {k: {"passed": bool(r.passed), "description": r.description} for k, r in gates.items()},
            "passes_all_gates": all(r.passed for r in gates.values())}


def probe_job(job: dict) -> dict:
    """probe(**job) for a spawned worker process (assets.common.parallel.spawn_imap)."""
    return probe(**job)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--action-repeat", type=int, default=None)
    args = parser.parse_args(argv)
    print(json.dumps(probe(args.task, args.seed, args.profile, args.action_repeat)), flush=True)


if __name__ == "__main__":
    main()
