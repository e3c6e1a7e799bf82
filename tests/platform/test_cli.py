"""The documented command lines work: `dagster asset materialize --select 'group:oscs'` (a
string selection, which dvc's antlr pin would break) and `python -m jobs.run`."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

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
