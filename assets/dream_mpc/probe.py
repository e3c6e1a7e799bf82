"""Does a task pass dream_mpc's blocking world-model gates at a profile's budget?

    python -m assets.dream_mpc.probe reacher-easy --seed 0 --profile cpu [--action-repeat 4]
    python -m assets.dream_mpc.probe pendulum-swingup reacher-easy --seeds 0 1 2 --workers 2

Trains one (task, seed) run exactly as the replay_buffer asset does (same seed derivation,
training config, action repeat from params unless overridden), measures the strong checkpoint
on its held-out episodes as the world_model asset does, and applies the same three gate
predicates (held-out fit, Q ensemble, policy vs random). Prints progress and one JSON line:
the measurements and each gate's verdict. With several tasks or seeds it runs them as the
task_survey asset does (runs.task_survey, on --workers processes) and prints the survey's
readings and table instead: the cpu profile's survey of the spec tasks it does not claim on is
this opt-in command (second form above; ≈ 8 min on 2 cores). Nothing is written to data/.
Pure code: no Dagster definitions are imported.
"""
from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from assets.dream_mpc.params import SurveyParams

if TYPE_CHECKING:
    import pandas as pd


def probe(task: str, seed: int, profile: str = "cpu", action_repeat: int | None = None,
          compute_config: dict | None = None) -> dict:
    """Train (task, seed) at `profile` and judge its strong checkpoint by the world-model gates.
    `compute_config` (fields of the compute resource) overrides the default resource."""
    from assets.dream_mpc.runs import probe_job

    return probe_job({"task": task, "seed": int(seed), "action_repeat": action_repeat,
                      "compute_config": {"profile": profile, **(compute_config or {})}})


def survey(tasks: list[str], seeds: list[int], profile: str = "cpu", workers: int = 1,
           log=print) -> pd.DataFrame:
    """The task_survey asset's table for tasks × seeds at `profile`, outside Dagster."""
    from assets.dream_mpc import runs
    from resources.compute import ComputeResource

    jobs = runs.survey_jobs(SurveyParams(tuple(tasks), tuple(seeds)), {"profile": profile})
    return runs.task_survey(jobs, ComputeResource(profile=profile).workers(len(jobs), workers), log)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="+", metavar="task")
    parser.add_argument("--seed", "--seeds", dest="seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--action-repeat", type=int, default=None)
    parser.add_argument("--workers", type=int, default=1, help="processes for several task × seed runs")
    args = parser.parse_args(argv)
    if len(args.tasks) == 1 and len(args.seeds) == 1:
        print(json.dumps(probe(args.tasks[0], args.seeds[0], args.profile, args.action_repeat)), flush=True)
        return
    if args.action_repeat is not None:
        parser.error("--action-repeat applies to one task and seed (a survey uses the profile's repeats)")
    from assets.dream_mpc.benchmark import survey_lines

    print("\n".join(survey_lines(survey(args.tasks, args.seeds, args.profile, args.workers))), flush=True)


if __name__ == "__main__":
    main()
