"""Does a task pass dream_mpc's blocking world-model gates at a profile's budget?

    python -m assets.dream_mpc.probe reacher-easy --seed 0 --profile cpu [--action-repeat 4]

Trains one (task, seed) run exactly as the replay_buffer asset does (same seed derivation,
training config, action repeat from params unless overridden), measures the strong checkpoint
on its held-out episodes as the world_model asset does, and applies the same three gate
predicates (held-out fit, Q ensemble, policy vs random). Prints progress and one JSON line:
the measurements and each gate's verdict. Nothing is written to data/. The task_survey asset
runs the same steps (runs.probe_run) for the tasks a profile measures but does not claim on.
Pure code: no Dagster definitions are imported.
"""
from __future__ import annotations

import argparse
import json


def probe(task: str, seed: int, profile: str = "cpu", action_repeat: int | None = None,
          compute_config: dict | None = None) -> dict:
    """Train (task, seed) at `profile` and judge its strong checkpoint by the world-model gates.
    `compute_config` (fields of the compute resource) overrides the default resource."""
    from assets.dream_mpc.runs import probe_job

    return probe_job({"task": task, "seed": int(seed), "action_repeat": action_repeat,
                      "compute_config": {"profile": profile, **(compute_config or {})}})


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
