"""Shared fixtures: every test writes under a temporary data directory, never data/."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A fresh PAPERLAB_DATA_DIR for one test (the IO manager, reports, warehouse use it)."""
    path = tmp_path / "data"
    path.mkdir()
    monkeypatch.setenv("PAPERLAB_DATA_DIR", str(path))
    return path


@pytest.fixture
def smoke_resources(data_dir):
    """The project's resources at the smoke profile, writing under data_dir."""
    from jobs.definitions import resources
    from resources.compute import ComputeResource

    res = resources()
    res["compute"] = ComputeResource(profile="smoke")
    return res


def materialize_paper(module, resources, raise_on_error: bool = False):
    """Materialize one paper's whole group (assets + checks) in process."""
    import dagster as dg

    return dg.materialize([*module.assets, *module.asset_checks], resources=resources,
                          raise_on_error=raise_on_error)


def outcomes(result) -> dict:
    """{"assets": materialized asset keys (str), "checks": {check name: passed}}."""
    assets = {m.asset_key.to_user_string() for m in result.get_asset_materialization_events()
              for m in [m.event_specific_data.materialization]}
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    return {"assets": assets, "checks": checks}


def assert_group_complete(module, result) -> dict:
    """The smoke contract of a paper group: the run succeeded, every asset materialized,
    every blocking check ran and passed, and there is one claim check per claim id.
    Returns outcomes(result) for further assertions."""
    seen = outcomes(result)
    assert result.success
    assert seen["assets"] == {a.key.to_user_string() for a in module.assets}
    blocking = {spec.name for c in module.asset_checks for spec in c.check_specs if spec.blocking}
    assert blocking and all(seen["checks"][name] for name in blocking), \
        {n: seen["checks"].get(n) for n in blocking}
    assert {f"claim_{cid}" for cid in module.CLAIM_IDS} <= set(seen["checks"])
    return seen
