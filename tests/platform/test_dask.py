"""Scale-out: a paper job runs on the dagster-dask executor against a 2-worker LocalCluster."""
from __future__ import annotations

import os

import dagster as dg
import pytest

from jobs.run import reconstructable_job, run_config
from resources.profiles import REPO_ROOT

pytestmark = pytest.mark.dask


def test_oscs_job_on_local_dask_cluster(data_dir, monkeypatch):
    distributed = pytest.importorskip("distributed")
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # workers are spawned after the env is set, so they see PAPERLAB_DATA_DIR and PYTHONPATH
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, dg.instance_for_test() as instance:
        result = dg.execute_job(reconstructable_job("oscs_job", dask=True), instance=instance,
                                run_config=run_config("smoke", cluster.scheduler_address))
        assert result.success
        materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert "oscs/benchmark_report" in materialized
    assert (data_dir / "reports" / "oscs" / "REPORT.md").exists()
