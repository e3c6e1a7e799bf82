"""Scale-out: a paper job runs on the dagster-dask executor against a 2-worker LocalCluster.

The cluster (whose scheduler lives in the client process) runs in a fresh interpreter: inside
the long-lived pytest process, after the paper suites, step hand-offs between the workers
stalled for ~60 s each (measured: 30 steps → 30 min), while the same test alone takes ~30 s.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from resources.profiles import REPO_ROOT

pytestmark = pytest.mark.dask


def run_oscs_on_local_cluster() -> None:
    """Run oscs_job at the smoke profile on a 2-worker LocalCluster; raise unless it succeeds
    and materializes the report (called in a subprocess by the test below)."""
    import dagster as dg
    import distributed

    from jobs.run import reconstructable_job, run_config

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, dg.instance_for_test() as instance:
        result = dg.execute_job(reconstructable_job("oscs_job", dask=True), instance=instance,
                                run_config=run_config("smoke", cluster.scheduler_address))
        assert result.success, "oscs_job failed on the Dask cluster"
        materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert "oscs/benchmark_report" in materialized, sorted(materialized)


def test_oscs_job_on_local_dask_cluster(data_dir):
    pytest.importorskip("distributed")
    # workers are spawned from this environment, so they see PAPERLAB_DATA_DIR and PYTHONPATH
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", "from tests.platform.test_dask import run_oscs_on_local_cluster as r; r()"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (data_dir / "reports" / "oscs" / "REPORT.md").exists()
