"""`make reproduce`: every paper at the cpu profile, recomputing only what changed.

    python -m jobs.reproduce                       # the papers whose code, params or inputs changed
    python -m jobs.reproduce --papers oscs brew    # a subset (make reproduce PAPERS="oscs brew")
    python -m jobs.reproduce --force               # recompute them anyway (FORCE=1)
    python -m jobs.reproduce --profile smoke       # another profile: no caching, every paper runs

The mechanism is DVC's: dvc.yaml (generated, jobs.dvc_stages) has one stage per paper whose
dependencies are its folder, the shared files it imports, its params section and its
external inputs; `dvc status` names the stages that changed and `dvc repro` runs each one
(the paper's Dagster job, recorded in the instance, so it shows in the UI) and records its
outputs in dvc.lock. We chose DVC over Dagster code versions because the outputs are already
DVC-versioned: one lock file says both "this is up to date" and "these are the bytes", and a
clone with the DVC cache (dvc pull) is up to date without running anything. After the papers,
the warehouse is reloaded (seconds) and the scorecard printed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from jobs.papers import PAPERS
from resources.profiles import PROFILES, REPO_ROOT, default_profile, load_all_params


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


def dvc_command() -> list[str]:
    """The dvc executable: beside this interpreter (.venv/bin/dvc, linked from .venv-dvc)."""
    local = Path(sys.executable).parent / "dvc"
    found = str(local) if local.exists() else shutil.which("dvc")
    if not found:
        raise SystemExit("dvc not found: run `make venv` (dvc lives in .venv-dvc, linked into .venv/bin)")
    return [found]


def _env() -> dict:
    # the stage command `python -m jobs.run` must be this interpreter, from the repository
    bindir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
            "PYTHONPATH": str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def changed_stages(papers: list[str]) -> set[str]:
    """The papers whose DVC stage is not up to date (code, params, inputs or outputs)."""
    run = subprocess.run([*dvc_command(), "status", "--json", *papers], cwd=REPO_ROOT, env=_env(),
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"dvc status failed:\n{run.stderr[-3000:]}")
    status = json.loads(run.stdout or "{}")
    return {name.split(":")[-1] for name in status} & set(papers)


def repro(slug: str, force: bool) -> bool:
    cmd = [*dvc_command(), "repro", "--single-item", *(["--force"] if force else []), slug]
    return subprocess.run(cmd, cwd=REPO_ROOT, env=_env()).returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.reproduce", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", nargs="*", default=None, help=f"subset of: {', '.join(PAPERS)}")
    parser.add_argument("--force", action="store_true", help="recompute even when up to date")
    parser.add_argument("--profile", default=None, choices=PROFILES)
    args = parser.parse_args(argv)
    papers = [p for p in PAPERS if not args.papers or p in args.papers]
    unknown = sorted(set(args.papers or []) - set(PAPERS))
    if unknown:
        parser.error(f"unknown papers {unknown}; registered: {', '.join(PAPERS)}")
    profile = args.profile or default_profile()
    os.chdir(REPO_ROOT)

    from jobs import dvc_stages
    from jobs.run import ensure_dagster_home, execute, print_scorecard
    from resources.warehouse import last_duration

    ensure_dagster_home()
    dvc_profile = str(load_all_params().get("dvc_profile", "cpu"))
    cached = profile == dvc_profile
    start = time.monotonic()
    if cached:
        dvc_stages.main([])                     # dvc.yaml follows the registry and the imports
        for slug in papers:
            dvc_stages.write_inputs_fingerprint(slug)
        changed = set(papers) if args.force else changed_stages(papers)     # one `dvc status` for all
        todo = [p for p in papers if p in changed]
        fresh = [p for p in papers if p not in todo]
        print(f"paperlab: {len(todo)} of {len(papers)} papers to run at the {profile} profile"
              + (f"; up to date: {', '.join(fresh)}" if fresh else ""), flush=True)
    else:
        todo, fresh = papers, []
        print(f"paperlab: profile {profile} is not DVC's ({dvc_profile}): running every selected paper, "
              "uncached", flush=True)

    failed = []
    for index, slug in enumerate(todo, 1):
        estimate = last_duration(slug, profile)
        print(f"\n▶ [{index}/{len(todo)}] {slug} — started; last run took {_duration(estimate)}", flush=True)
        t0 = time.monotonic()
        ok = repro(slug, args.force) if cached else execute(slug, profile)
        print(f"{'✔' if ok else '✘'} [{index}/{len(todo)}] {slug} — {'done' if ok else 'FAILED'} in "
              f"{_duration(time.monotonic() - t0)} (total {_duration(time.monotonic() - start)})", flush=True)
        if not ok:
            failed.append(slug)

    print("\n▶ warehouse and scorecard", flush=True)
    ok = execute("warehouse", profile)
    print_scorecard()
    if cached and ok:
        from jobs import results

        print("\n▶ results record (results/) and the verdicts that changed", flush=True)
        ok = results.main([]) == 0
    print(f"paperlab: ran {', '.join(todo) or 'nothing'}; up to date {', '.join(fresh) or 'none'}; "
          f"failed {', '.join(failed) or 'none'} — {_duration(time.monotonic() - start)}", flush=True)
    return 0 if ok and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
