"""Definitions: load, registry, blocking gates, unique keys, string selections."""
from __future__ import annotations

import dagster as dg
import pytest

from jobs.definitions import defs
from jobs.papers import PAPERS, load_paper, load_papers


@pytest.fixture(scope="module")
def graph():
    return defs.resolve_asset_graph()


def test_every_registered_paper_is_a_group(graph):
    groups = {graph.get(k).group_name for k in graph.get_all_asset_keys()}
    assert set(PAPERS) | {"platform"} == groups


@pytest.mark.parametrize("slug", list(PAPERS))
def test_paper_exports_and_blocking_gate(slug):
    paper = load_paper(slug)
    assert paper.slug == slug and paper.report_key in paper.keys
    specs = [s for c in paper.asset_checks for s in c.check_specs]
    assert any(s.blocking for s in specs), f"{slug} has no blocking check"
    claim_checks = {s.name for s in specs if s.name.startswith("claim_")}
    assert claim_checks == {f"claim_{c}" for c in paper.claim_ids}
    for asset in paper.assets:
        for key in asset.keys:                          # a multi-asset (viar's ar_models) has several
            assert key.path[0] == slug and asset.group_names_by_key[key] == slug
        # op names are global in the all-papers job: a multi-asset names its op <slug>__<name> itself
        assert asset.op.name.startswith(f"{slug}__"), f"{slug}: op {asset.op.name!r} lacks the {slug}__ prefix"


def test_asset_keys_unique_across_papers():
    keys = [k for p in load_papers().values() for k in p.keys]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("slug", list(PAPERS))
def test_string_selection_parses(slug, graph):
    """Guards the antlr pin: dvc's antlr 4.9 breaks every string selection in Dagster."""
    selected = dg.AssetSelection.from_string(f"group:{slug}").resolve(graph)
    assert selected == load_paper(slug).keys


@pytest.mark.parametrize("slug", list(PAPERS))
def test_paper_job_selects_whole_group_and_checks(slug):
    job = defs.resolve_job_def(f"{slug}_job")
    paper = load_paper(slug)
    assert set(job.asset_layer.selected_asset_keys) == paper.keys
    selected_checks = set(job.asset_layer.asset_graph.asset_check_keys)  # the job's own graph
    assert {k for c in paper.asset_checks for k in c.check_keys} <= selected_checks


def test_reproduce_all_ends_with_warehouse_and_scorecard():
    job = defs.resolve_job_def("reproduce_all")
    keys = {k.to_user_string() for k in job.asset_layer.selected_asset_keys}
    assert {"platform/warehouse", "platform/scorecard"} <= keys
    for slug in PAPERS:
        assert load_paper(slug).report_key.to_user_string() in keys


def test_gpu_tags_route_to_gpu_pool():
    from assets.common.tags import gpu_asset_kwargs

    @dg.asset(**gpu_asset_kwargs())
    def trains_on_gpu():
        return 1

    assert trains_on_gpu.op.pool == "gpu"
    tags = trains_on_gpu.op.tags
    assert "GPU" in tags["dagster-dask/resource_requirements"]
    assert "nvidia.com/gpu" in tags["dagster-k8s/config"]
    for paper in load_papers().values():
        for asset in paper.assets:
            if "dagster-dask/resource_requirements" in asset.op.tags:
                keys = sorted(k.to_user_string() for k in asset.keys)
                assert asset.op.pool == "gpu", f"{keys} ask for a GPU outside the gpu pool"


def test_instance_config_limits_pools_to_one():
    import yaml

    from resources.profiles import REPO_ROOT

    config = yaml.safe_load((REPO_ROOT / ".dagster" / "dagster.yaml").read_text())
    assert config["concurrency"]["pools"]["default_limit"] == 1
    assert config["telemetry"]["enabled"] is False


def test_dvc_yaml_is_generated_from_the_registry():
    """dvc.yaml is jobs.dvc_stages' output: one stage per paper, deps from its imports."""
    import yaml

    from jobs import dvc_stages

    assert dvc_stages.main(["--check"]) == 0, "dvc.yaml is stale: run python -m jobs.dvc_stages"
    stages = yaml.safe_load(dvc_stages.DVC_YAML.read_text())["stages"]
    assert list(stages) == list(PAPERS)
    assert "assets/common/ngram.py" in stages["oscs"]["deps"]          # oscs scores with the n-gram LM
    assert "assets/common/ngram.py" not in stages["diffusion_w2"]["deps"]
    assert "data/inputs/pac_labels.json" in stages["pac_labels"]["deps"]
