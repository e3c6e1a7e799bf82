"""All of paperlab as one Dagster code location (workspace.yaml loads this module).

The registry is jobs/papers.py (plain data); each registered module exports PAPER, built
with assets/common/paper.py. This module is wiring only: groups, jobs, automation (weekly ticks), resources.
"""
from __future__ import annotations

import functools

import dagster as dg

from jobs.papers import PAPERS, load_papers
from jobs.platform import PLATFORM_GROUP, build_platform_assets
from resources.artifacts import ArtifactsResource, PaperlabIOManager
from resources.compute import ComputeResource
from resources.profiles import default_profile
from resources.warehouse import WarehouseResource

__all__ = ["PAPERS", "defs", "build_definitions", "dask_definitions", "resources"]

# Weekly; created STOPPED: turn on in the UI (Automation tab).
SCHEDULE_CRON = "0 3 * * 0"


def stale_on_cron(cron: str = SCHEDULE_CRON) -> dg.AutomationCondition:
    """Once per cron tick, request an asset only when it is stale: never materialized, its
    code_version (the hash of its DVC stage's files and params section) changed, or an upstream
    asset was updated, each since the asset was last requested. A tick that finds nothing stale is
    spent: a change after it waits for the next tick. Nothing runs while the asset or an upstream
    asset is in progress, or when an upstream blocking check failed. So a weekly tick on an
    unchanged paper launches nothing, and a tick after a params change recomputes that paper."""
    tick = dg.AutomationCondition.cron_tick_passed(cron)   # true on the first evaluation after a tick
    stale = (dg.AutomationCondition.missing()
             | dg.AutomationCondition.code_version_changed().since_last_handled()
             | dg.AutomationCondition.any_deps_updated().since_last_handled())
    blocked = (dg.AutomationCondition.in_progress() | dg.AutomationCondition.any_deps_in_progress()
               | ~dg.AutomationCondition.all_deps_blocking_checks_passed())
    return (tick & stale & ~blocked).with_label(f"stale at the tick of {cron}")


def with_automation(assets: list, condition: dg.AutomationCondition) -> list:
    """The same asset definitions, each spec carrying `condition`."""
    return list(dg.map_asset_specs(lambda spec: spec.replace_attributes(automation_condition=condition),
                                   assets))

# Multiprocess by default (max_concurrent defaults to the CPU count: 2 here), switchable to
# in-process from run config: execution: {config: {in_process: {}}}.
EXECUTOR = dg.multi_or_in_process_executor


def paper_job(slug: str, executor_def: dg.ExecutorDefinition | None = None) -> dg.UnresolvedAssetJobDefinition:
    """The whole group of one paper: upstream, checks and downstream in one run, so that a
    blocking check gates everything after it."""
    return dg.define_asset_job(f"{slug}_job", selection=dg.AssetSelection.groups(slug),
                               executor_def=executor_def,
                               description=f"Materialize every asset and check of {slug}.",
                               tags={"paperlab/paper": slug})


def paper_automation(slug: str) -> dg.AutomationConditionSensorDefinition:
    """The weekly tick of one paper: evaluates `stale_on_cron` on the paper's group, so only
    its stale assets (and what depends on them) run. Created STOPPED."""
    return dg.AutomationConditionSensorDefinition(
        f"{slug}_weekly", target=dg.AssetSelection.groups(slug),
        default_status=dg.DefaultSensorStatus.STOPPED,
        description=f"Weekly: re-materializes {slug}'s assets that are missing, whose code or params "
                    "changed, or whose upstream changed (cpu profile).")


def reproduce_all_job(executor_def: dg.ExecutorDefinition | None = None,
                      name: str = "reproduce_all") -> dg.UnresolvedAssetJobDefinition:
    groups = [*PAPERS, PLATFORM_GROUP]
    return dg.define_asset_job(name, selection=dg.AssetSelection.groups(*groups),
                               executor_def=executor_def,
                               description="Every paper, then the warehouse, then the scorecard.")


def resources() -> dict:
    return {
        "compute": ComputeResource(profile=default_profile()),
        "artifacts": ArtifactsResource(),
        "warehouse": WarehouseResource(),
        "io_manager": PaperlabIOManager(),
    }


def build_definitions(executor: dg.ExecutorDefinition = EXECUTOR) -> dg.Definitions:
    """Every paper, the platform assets, jobs and weekly sensors, run with `executor` by default
    (multiprocess; `dask_definitions()` builds the same graph on the dagster-dask executor)."""
    from dagster_dask import dask_executor

    assets, checks, jobs, sensors, report_keys = [], [], [], [], []
    for slug, paper in load_papers().items():
        assets += with_automation(paper.assets, stale_on_cron())
        checks += paper.asset_checks
        report_keys.append(paper.report_key)
        jobs.append(paper_job(slug))
        sensors.append(paper_automation(slug))
    platform_assets, platform_checks = build_platform_assets(report_keys)
    assets += platform_assets
    checks += platform_checks
    jobs += [reproduce_all_job(),
             reproduce_all_job(dask_executor, name="reproduce_all_dask"),
             dg.define_asset_job("warehouse", selection=dg.AssetSelection.groups(PLATFORM_GROUP),
                                 description="Reload the warehouse and rebuild the scorecard.")]
    return dg.Definitions(assets=assets, asset_checks=checks, jobs=jobs, sensors=sensors,
                          resources=resources(), executor=executor)


@functools.lru_cache(maxsize=1)
def dask_definitions() -> dg.Definitions:
    """The same graph with every job on the dagster-dask executor (run config:
    execution.config.cluster.existing.address = the scheduler)."""
    from dagster_dask import dask_executor

    return build_definitions(dask_executor)


defs = build_definitions()
