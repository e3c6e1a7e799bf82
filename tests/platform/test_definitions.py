"""Definitions: load, registry, blocking gates, unique keys, string selections, schedules."""
from __future__ import annotations

import dagster as dg
import pytest

from jobs.definitions import PAPERS, defs, paper_modules


@pytest.fixture(scope="module")
def graph():
    return defs.resolve_asset_graph()


def test_every_registered_paper_is_a_group(graph):
    groups = {graph.get(k).group_name for k in graph.get_all_asset_keys()}
    assert set(PAPERS) | {"platform"} == groups


@pytest.mark.parametrize("slug", list(PAPERS))
def test_paper_exports_and_blocking_gate(slug):
    module = paper_modules()[slug]
    assert module.REPORT_KEY in {a.key for a in module.assets}
    specs = [s for c in module.asset_checks for s in c.check_specs]
    assert any(s.blocking for s in specs), f"{slug} has no blocking check"
    claim_checks = {s.name for s in specs if s.name.startswith("claim_")}
    assert claim_checks == {f"claim_{c}" for c in module.CLAIM_IDS}
    for asset in module.assets:
        assert asset.key.path[0] == slug and asset.group_names_by_key[asset.key] == slug


def test_asset_keys_unique_across_papers():
    keys = [a.key for m in paper_modules().values() for a in m.assets]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("slug", list(PAPERS))
def test_string_selection_parses(slug, graph):
    """Guards the antlr pin: dvc's antlr 4.9 breaks every string selection in Dagster."""
    selected = dg.AssetSelection.from_string(f"group:{slug}").resolve(graph)
    assert selected == {a.key for a in paper_modules()[slug].assets}


@pytest.mark.parametrize("slug", list(PAPERS))
def test_paper_job_selects_whole_group_and_checks(slug):
    job = defs.resolve_job_def(f"{slug}_job")
    module = paper_modules()[slug]
    assert set(job.asset_layer.selected_asset_keys) == {a.key for a in module.assets}
    selected_checks = set(job.asset_layer.asset_graph.asset_check_keys)  # the job's own graph
    assert {k for c in module.asset_checks for k in c.check_keys} <= selected_checks


def test_reproduce_all_ends_with_warehouse_and_scorecard():
    job = defs.resolve_job_def("reproduce_all")
    keys = {k.to_user_string() for k in job.asset_layer.selected_asset_keys}
    assert {"platform/warehouse", "platform/scorecard"} <= keys
    for slug in PAPERS:
        assert paper_modules()[slug].REPORT_KEY.to_user_string() in keys


def test_schedules_evaluate_and_start_stopped():
    schedules = list(defs.schedules)
    assert {s.name for s in schedules} == {f"{slug}_weekly" for slug in PAPERS}
    for schedule in schedules:
        assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
        context = dg.build_schedule_context(scheduled_execution_time=None)
        requests = list(schedule.evaluate_tick(context).run_requests or [])
        assert len(requests) == 1


def test_gpu_tags_route_to_gpu_pool():
    from assets.common.tags import gpu_asset_kwargs

    @dg.asset(**gpu_asset_kwargs())
    def trains_on_gpu():
        return 1

    assert trains_on_gpu.op.pool == "gpu"
    tags = trains_on_gpu.op.tags
    assert "GPU" in tags["dagster-dask/resource_requirements"]
    assert "nvidia.com/gpu" in tags["dagster-k8s/config"]
    for module in paper_modules().values():
        for asset in module.assets:
            if "dagster-dask/resource_requirements" in asset.op.tags:
                assert asset.op.pool == "gpu", f"{asset.key} asks for a GPU outside the gpu pool"


def test_instance_config_limits_pools_to_one():
    import yaml

    from resources.profiles import REPO_ROOT

    config = yaml.safe_load((REPO_ROOT / ".dagster" / "dagster.yaml").read_text())
    assert config["concurrency"]["pools"]["default_limit"] == 1
    assert config["telemetry"]["enabled"] is False


def test_dvc_stages_cover_every_paper():
    import yaml

    from resources.profiles import REPO_ROOT

    dvc = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())
    assert dvc["vars"][0]["papers"] == list(PAPERS)
    assert {"paper", "warehouse"} == set(dvc["stages"])
