"""All of paperlab as one Dagster code location (workspace.yaml loads this module).

PAPERS is the explicit registry: slug -> the module whose `assets`, `asset_checks` and
`REPORT_KEY` make up that paper's asset group. Adding a paper = one line here.
"""
from __future__ import annotations

import functools
import importlib
from types import ModuleType

import dagster as dg

from jobs.platform import PLATFORM_GROUP, build_platform_assets
from resources.artifacts import ArtifactsResource, PaperlabIOManager
from resources.compute import ComputeResource
from resources.profiles import default_profile
from resources.warehouse import WarehouseResource

PAPERS: dict[str, str] = {
    "oscs": "assets.oscs.definitions",
    "pac_labels": "assets.pac_labels.definitions",
    "brew": "assets.brew.definitions",
    "logit_distill": "assets.logit_distill.definitions",
    "spgcl": "assets.spgcl.definitions",
    "diffusion_w2": "assets.diffusion_w2.definitions",
    "viar": "assets.viar.definitions",
    "dream_mpc": "assets.dream_mpc.definitions",
}

# Weekly, staggered by paper; created STOPPED: turn on in the UI (Automation tab).
SCHEDULE_CRON = "0 3 * * 0"

# Multiprocess by default (max_concurrent defaults to the CPU count: 2 here), switchable to
# in-process from run config: execution: {config: {in_process: {}}}.
EXECUTOR = dg.multi_or_in_process_executor


def paper_modules() -> dict[str, ModuleType]:
    return {slug: importlib.import_module(module) for slug, module in PAPERS.items()}


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

    modules = paper_modules()
    assets, checks, jobs, schedules, report_keys = [], [], [], [], []
    for slug, module in modules.items():
        assets += module.assets
        checks += module.asset_checks
        report_keys.append(module.REPORT_KEY)
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
