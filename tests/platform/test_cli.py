"""The documented command lines work: `dagster asset materialize --select 'group:oscs'` (a
string selection, which dvc's antlr pin would break) and `python -m jobs.run`."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from resources.profiles import REPO_ROOT


def _env(tmp_path: Path) -> dict:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO_ROOT / ".dagster" / "dagster.yaml", home / "dagster.yaml")
    return {**os.environ, "DAGSTER_HOME": str(home), "PAPERLAB_PROFILE": "smoke",
            "PAPERLAB_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(REPO_ROOT)}


def test_dagster_cli_materializes_a_group_by_string_selection(tmp_path):
    dagster = Path(sys.executable).parent / "dagster"
    run = subprocess.run([str(dagster), "asset", "materialize", "-m", "jobs.definitions",
                          "--select", "group:oscs",
                          # in-process keeps the test fast; the selection parsing is what matters
                          "--config-json", '{"execution": {"config": {"in_process": {}}}}'],
                         cwd=REPO_ROOT, env=_env(tmp_path),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "data" / "reports" / "oscs" / "REPORT.md").exists()


def test_jobs_run_rejects_unknown_targets(tmp_path):
    run = subprocess.run([sys.executable, "-m", "jobs.run", "nope"], cwd=REPO_ROOT, env=_env(tmp_path),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "unknown target" in run.stderr


def test_jobs_run_uses_the_repository_instance_when_dagster_home_is_unset(monkeypatch, capsys):
    from jobs.run import DAGSTER_HOME_DEFAULT, ensure_dagster_home

    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    assert ensure_dagster_home() == DAGSTER_HOME_DEFAULT and DAGSTER_HOME_DEFAULT.is_absolute()
    assert os.environ["DAGSTER_HOME"] == str(DAGSTER_HOME_DEFAULT)
    assert "DAGSTER_HOME is unset: using" in capsys.readouterr().err
    monkeypatch.setenv("DAGSTER_HOME", "relative/home")
    with pytest.raises(SystemExit, match="absolute"):
        ensure_dagster_home()


def test_reproduce_runs_only_changed_papers_and_names_the_rest(data_dir, monkeypatch, capsys):
    """The orchestration of `make reproduce` (DVC and Dagster replaced by recorders)."""
    import jobs.reproduce as reproduce
    import jobs.run as run
    from jobs import dvc_stages, results
    from resources.warehouse import append_job_record

    calls = []
    monkeypatch.setattr(results, "main", lambda argv: calls.append(("results",)) or 0)
    monkeypatch.setenv("DAGSTER_HOME", str(data_dir))
    monkeypatch.setattr(dvc_stages, "main", lambda argv: 0)
    statuses = []     # `dvc status` takes ≈ 20 s for 19 stages: once per run, not once per paper

    def changed_stages(papers):
        statuses.append(tuple(papers))
        return {"brew"} & set(papers)

    monkeypatch.setattr(reproduce, "changed_stages", changed_stages)
    monkeypatch.setattr(reproduce, "repro", lambda slug, force: calls.append(("repro", slug, force)) or True)
    monkeypatch.setattr(run, "execute", lambda target, profile, dask=None: calls.append(("run", target)) or True)
    append_job_record("brew", {"run_id": "r", "profile": "cpu", "wall_seconds": 125.0, "status": "success"})

    assert reproduce.main(["--papers", "oscs", "brew", "--profile", "cpu"]) == 0
    out = capsys.readouterr().out
    assert calls == [("repro", "brew", False), ("run", "warehouse"), ("results",)]
    assert "1 of 2 papers to run at the cpu profile; up to date: oscs" in out
    assert "brew — started; last run took 2 min 05 s" in out and "up to date oscs" in out
    assert statuses == [("oscs", "brew")]

    calls.clear()
    assert reproduce.main(["--papers", "oscs", "--force", "--profile", "cpu"]) == 0
    assert calls == [("repro", "oscs", True), ("run", "warehouse"), ("results",)]

    calls.clear()   # another profile than DVC's: every selected paper, uncached, through jobs.run; no record
    assert reproduce.main(["--papers", "oscs", "--profile", "smoke"]) == 0
    assert calls == [("run", "oscs"), ("run", "warehouse")]
    with pytest.raises(SystemExit):
        reproduce.main(["--papers", "nope"])


def test_cpu_meter_counts_grandchild_processes():
    """Dagster's step processes are grandchildren (forkserver): the meter must see their CPU."""
    from jobs.run import CpuMeter

    burn = "import time\nwhile time.process_time() < 0.6: pass"
    with CpuMeter(interval=0.05) as meter:   # sh → python: a grandchild of this process
        subprocess.run(["sh", "-c", f"{sys.executable} -c '{burn}'; sleep 0.2"], check=True, timeout=60)
    assert 0.45 <= meter.cpu_seconds < 10, meter.cpu_seconds
    assert all(x >= 0 for x in (*meter.load_start, *meter.load_end))
