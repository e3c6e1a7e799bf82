"""Command line entry: run paper jobs (or everything) at a profile, then print the scorecard.

    python -m jobs.run all --profile cpu          # what `make reproduce` runs
    python -m jobs.run oscs --profile smoke        # one paper (its whole group)
    python -m jobs.run all --dask tcp://host:8786  # on an existing Dask scheduler

Runs go to the Dagster instance in $DAGSTER_HOME (the Makefile sets <repo>/.dagster), so
they show up in the web UI. Exit status is non-zero when a run fails; red claims are
results, not failures.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import dagster as dg

from resources.artifacts import data_root
from resources.profiles import PROFILES, REPO_ROOT, default_profile


def _job_name(target: str) -> str:
    if target == "all":
        return "reproduce_all"
    if target == "warehouse":
        return "warehouse"
    return f"{target}_job"


def run_config(profile: str, dask: str | None) -> dict:
    config: dict = {"resources": {"compute": {"config": {"profile": profile}}},
                    # progress lines (context.log.info) and errors, without per-event DEBUG noise
                    "loggers": {"console": {"config": {"log_level": "INFO"}}}}
    if dask:
        config["execution"] = {"config": {"cluster": {"existing": {"address": dask}}}}
    return config


def _instance() -> dg.DagsterInstance:
    home = os.environ.get("DAGSTER_HOME")
    if home:
        path = Path(home)
        if not path.is_absolute():
            raise SystemExit(f"DAGSTER_HOME must be an absolute path, got {home!r}")
        path.mkdir(parents=True, exist_ok=True)
        return dg.DagsterInstance.get()
    print("DAGSTER_HOME is unset: using an ephemeral instance (runs are not recorded)", file=sys.stderr)
    return dg.DagsterInstance.ephemeral()


def get_job(name: str, dask: bool = False):
    """Module-level (so workers can reconstruct it): a job from the multiprocess or the
    dagster-dask flavour of the definitions."""
    from jobs.definitions import dask_definitions, defs

    return (dask_definitions() if dask else defs).resolve_job_def(name)


def main(argv: list[str] | None = None) -> int:
    from jobs.definitions import PAPERS

    parser = argparse.ArgumentParser(prog="python -m jobs.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", nargs="?", default="all",
                        help=f"'all', 'warehouse' or a paper slug: {', '.join(PAPERS)}")
    parser.add_argument("--profile", default=None, choices=PROFILES,
                        help="run scale (default: $PAPERLAB_PROFILE or cpu)")
    parser.add_argument("--dask", default=None, metavar="ADDRESS",
                        help="run on the dagster-dask executor against this scheduler")
    parser.add_argument("--no-warehouse", action="store_true",
                        help="with a paper slug: do not reload the warehouse / scorecard after")
    args = parser.parse_args(argv)
    if args.target not in ("all", "warehouse", *PAPERS):
        parser.error(f"unknown target {args.target!r}")
    profile = args.profile or default_profile()
    os.chdir(REPO_ROOT)
    instance = _instance()

    targets = [args.target]
    if args.target in PAPERS and not args.no_warehouse:
        targets.append("warehouse")
    ok = True
    for target in targets:
        name = _job_name(target)
        print(f"\n=== paperlab: {name} at the {profile} profile ===", flush=True)
        start = time.monotonic()
        result = dg.execute_job(reconstructable_job(name, dask=bool(args.dask)), instance=instance, run_config=run_config(profile, args.dask),
                                raise_on_error=False)
        took = time.monotonic() - start
        print(f"=== {name}: {'success' if result.success else 'FAILED'} in {took:.0f} s "
              f"(run {result.run_id}) ===", flush=True)
        ok = ok and result.success
    scorecard = data_root() / "reports" / "SCORECARD.md"
    if scorecard.exists():
        print("\n" + scorecard.read_text(encoding="utf-8"))
    return 0 if ok else 1


def reconstructable_job(name: str, dask: bool = False):
    return dg.build_reconstructable_job("jobs.run", "get_job", reconstructable_args=(name, dask),
                                        reconstructor_working_directory=str(REPO_ROOT))


if __name__ == "__main__":
    sys.exit(main())
