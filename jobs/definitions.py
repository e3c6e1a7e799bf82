"""All of paperlab as one Dagster code location (workspace.yaml loads this module).

The registry is jobs/papers.py (plain data); each registered module exports PAPER, built
with assets/common/paper.py. This module is wiring only: groups, jobs, schedules, resources.
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

# Weekly, staggered by paper; created STOPPED: turn on in the UI (Automation tab).
SCHEDULE_CRON = "0 3 * * 0"

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


def paper_schedule(slug: str, job: dg.UnresolvedAssetJobDefinition) -> dg.ScheduleDefinition:
    return dg.ScheduleDefinition(name=f"{slug}_weekly", job=job, cron_schedule=SCHEDULE_CRON,
                                 default_status=dg.DefaultScheduleStatus.STOPPED,
                                 description=f"Weekly re-materialization of {slug} (cpu profile).")


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
    """Every paper, the platform assets, jobs and schedules, run with `executor` by default
    (multiprocess; `dask_definitions()` builds the same graph on the dagster-dask executor)."""
    from dagster_dask import dask_executor

    assets, checks, jobs, schedules, report_keys = [], [], [], [], []
    for slug, paper in load_papers().items():
        assets += paper.assets
        checks += paper.asset_checks
        report_keys.append(paper.report_key)
        job = paper_job(slug)
        jobs.append(job)
        schedules.append(paper_schedule(slug, job))
    platform_assets, platform_checks = build_platform_assets(report_keys)
    assets += platform_assets
    checks += platform_checks
    jobs += [reproduce_all_job(),
             reproduce_all_job(dask_executor, name="reproduce_all_dask"),
             dg.define_asset_job("warehouse", selection=dg.AssetSelection.groups(PLATFORM_GROUP),
                                 description="Reload the warehouse and rebuild the scorecard.")]
    return dg.Definitions(assets=assets, asset_checks=checks, jobs=jobs, schedules=schedules,
                          resources=resources(), executor=executor)


@functools.lru_cache(maxsize=1)
def dask_definitions() -> dg.Definitions:
    """The same graph with every job on the dagster-dask executor (run config:
    execution.config.cluster.existing.address = the scheduler)."""
    from dagster_dask import dask_executor

    return build_definitions(dask_executor)


defs = build_definitions()
