"""Command line entry: run paper jobs (or everything) at a profile, then print the scorecard.

    python -m jobs.run oscs --profile smoke        # one paper (its whole group), then warehouse
    python -m jobs.run all --profile cpu           # every paper in one Dagster run, no caching
    python -m jobs.run all --dask tcp://host:8786  # on an existing Dagster-dask scheduler
    python -m jobs.run warehouse                   # reload the warehouse, rebuild the scorecard

`make reproduce` uses jobs.reproduce instead, which runs only the papers that changed.
Runs go to the Dagster instance in $DAGSTER_HOME; when it is unset, the repository's .dagster
(an absolute path) is used and the command says so, so runs show up in the web UI from any
shell. Each paper run appends its wall time, its CPU seconds (this process and every step
process under it) and the load average to data/runs/<slug>/jobs.jsonl (the warehouse's `runs`
table): on a shared machine, CPU seconds say what a run costs when the wall time cannot.
Exit status is non-zero when a run fails; red claims are results, not failures.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import threading
import time
from pathlib import Path

from jobs.papers import PAPERS
from resources.profiles import PROFILES, REPO_ROOT, default_profile

DAGSTER_HOME_DEFAULT = REPO_ROOT / ".dagster"
# Step processes fork from a server that imported the code location once: a spawned step
# process would spend ~6 s importing every paper before doing anything.
FORKSERVER = {"config": {"multiprocess": {"start_method": {"forkserver": {"preload_modules": ["jobs.definitions"]}}}}}


def machine() -> dict:
    """This machine as the run record names it: cores and CPU model."""
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"cores": os.cpu_count(), "cpu_model": model or platform.processor() or platform.machine()}


class CpuMeter:
    """CPU seconds (user + system) of this process and all its descendants during a `with` block.

    Dagster's step processes are grandchildren (forked from a forkserver), which
    getrusage(RUSAGE_CHILDREN) and /usr/bin/time never see; this samples the process tree every
    `interval` seconds and keeps each process's last reading, so a process that ends between two
    samples loses at most `interval` seconds of CPU (an undercount, never an overcount).
    """

    def __init__(self, interval: float = 1.0):
        self.interval = interval
        self.seen: dict[tuple[int, float], float] = {}
        self._stop = threading.Event()
        self.load_start = self.load_end = (0.0, 0.0, 0.0)

    def _sample(self) -> None:
        import psutil

        me = psutil.Process()
        for proc in [me, *me.children(recursive=True)]:
            try:
                with proc.oneshot():
                    t = proc.cpu_times()
                    self.seen[(proc.pid, proc.create_time())] = t.user + t.system
            except psutil.Error:  # ended meanwhile
                continue

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> CpuMeter:
        self.load_start = os.getloadavg()
        self._sample()
        self._base = sum(self.seen.values())
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        self.load_end = os.getloadavg()

    @property
    def cpu_seconds(self) -> float:
        return sum(self.seen.values()) - self._base


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
    else:
        config["execution"] = FORKSERVER
    return config


def ensure_dagster_home() -> Path:
    """$DAGSTER_HOME when set (must be absolute), else <repo>/.dagster (said on stderr).
    Sets the variable for this process and its children (executor subprocesses, dvc)."""
    home = os.environ.get("DAGSTER_HOME")
    if home:
        path = Path(home)
        if not path.is_absolute():
            raise SystemExit(f"DAGSTER_HOME must be an absolute path, got {home!r}")
    else:
        path = DAGSTER_HOME_DEFAULT
        print(f"DAGSTER_HOME is unset: using {path}", file=sys.stderr)
        os.environ["DAGSTER_HOME"] = str(path)
    path.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    return path


def get_job(name: str, dask: bool = False):
    """Module-level (so workers can reconstruct it): a job from the multiprocess or the
    dagster-dask flavour of the definitions."""
    from jobs.definitions import dask_definitions, defs

    return (dask_definitions() if dask else defs).resolve_job_def(name)


def reconstructable_job(name: str, dask: bool = False):
    import dagster as dg

    return dg.build_reconstructable_job("jobs.run", "get_job", reconstructable_args=(name, dask),
                                        reconstructor_working_directory=str(REPO_ROOT))


def execute(target: str, profile: str, dask: str | None = None) -> bool:
    """Run one target's job on the instance; record a paper run's wall time. True on success."""
    import dagster as dg

    from resources.warehouse import append_job_record

    name = _job_name(target)
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    start = time.monotonic()
    with CpuMeter() as meter, dg.DagsterInstance.get() as instance:
        result = dg.execute_job(reconstructable_job(name, dask=bool(dask)), instance=instance,
                                run_config=run_config(profile, dask), raise_on_error=False)
    took = time.monotonic() - start
    status = "success" if result.success else "failure"
    if target in PAPERS:
        append_job_record(target, {"run_id": result.run_id, "profile": profile, "wall_seconds": round(took, 1),
                                   "cpu_seconds": round(meter.cpu_seconds, 1),
                                   "load_start": round(meter.load_start[0], 2),
                                   "load_end": round(meter.load_end[0], 2),
                                   "status": status, "started_at": started, **machine()})
    print(f"=== {name}: {'success' if result.success else 'FAILED'} in {took:.0f} s, "
          f"{meter.cpu_seconds:.0f} CPU s, load {meter.load_start[0]:.1f} → {meter.load_end[0]:.1f} "
          f"(run {result.run_id}) ===", flush=True)
    return result.success


def print_scorecard() -> None:
    from resources.artifacts import data_root

    scorecard = data_root() / "reports" / "SCORECARD.md"
    if scorecard.exists():
        print("\n" + scorecard.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
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
    ensure_dagster_home()

    targets = [args.target]
    if args.target in PAPERS and not args.no_warehouse:
        targets.append("warehouse")
    ok = True
    for target in targets:
        print(f"\n=== paperlab: {_job_name(target)} at the {profile} profile ===", flush=True)
        ok = execute(target, profile, args.dask) and ok
    if "warehouse" in targets or args.target == "all":
        print_scorecard()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
