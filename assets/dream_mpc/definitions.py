"""Dream-MPC as Dagster assets — wiring only (runs.py, checks.py, report.py and the method
modules do the work).

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    env_catalog ─> replay_buffer ─> world_model ─> planner_configs ─> eval_episodes ─┐
                   (online TD-MPC2-lite run      (held-out gates)                   ├─> benchmark_report ─> claims
                    per task × seed; snapshots                  planner_microbench ─┤
                    at 25/50/100 % of budget)                         task_survey ─┘

task_survey (report only, never gated on): tasks a profile measures but does not claim on —
the same training, held-out measurements and gate predicates per task × seed (runs.probe_run,
also behind `python -m assets.dream_mpc.probe`), so the report shows, from this run, why a
spec task is not in the claims at this budget.

Dimensions (instead of Dagster partitions, so one run gates everything): task × seed in the
replay buffer, task × seed × budget (weak/medium/strong) in the world-model checkpoints, and
task × seed × budget × planner in the evaluation table.
"""

import dagster as dg
import pandas as pd

from assets.common.paper import Paper
from assets.common.report import markdown_table
from assets.dream_mpc import checks, report, runs
from assets.dream_mpc.params import DreamMPCParams
from resources.artifacts import ArtifactsResource, data_ref, save_state_dict, write_parquet
from resources.compute import ComputeResource

paper = Paper("dream_mpc", params=DreamMPCParams)


def _seed_for(compute: ComputeResource):
    return lambda *keys: compute.seed_for(paper.slug, *keys)


def _torch(compute: ComputeResource, p: DreamMPCParams, *keys):
    """torch configured by the shared policy: determinism, seed, at most params torch_threads."""
    return compute.torch(compute.seed_for(paper.slug, *keys), threads=p.torch_threads)


def _device_note(compute: ComputeResource) -> dict:
    return {"device": compute.resolved_device(), **compute.describe()}


@paper.asset(kinds={"python"}, description="dm_control state tasks of this profile: obs/action dims read from "
             "the simulator, time limit, action repeat, decisions per episode, score normaliser.")
def env_catalog(context: dg.AssetExecutionContext, compute: ComputeResource) -> dict:
    value = runs.env_catalog(paper.params(compute))
    specs = value["tasks"]
    context.log.info(f"catalog: {[(s['task'], s['obs_dim'], s['act_dim']) for s in specs]}; {value['versions']}")
    context.add_output_metadata({"tasks": dg.MetadataValue.md(markdown_table(pd.DataFrame(specs))),
                                 **compute.provenance(paper.slug)})
    return value


@paper.asset(gpu=True, description="Transitions (s, a, r, s′, done, episode) of the online TD-MPC2-lite run per "
             "task × seed (split seed/train/heldout). The collecting agent's snapshots at 25/50/100 % of the "
             "budget are written as checkpoints (registered by world_model).")
def replay_buffer(context: dg.AssetExecutionContext, env_catalog: dict, compute: ComputeResource,
                  artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    _torch(compute, p, "train")
    note = {**_device_note(compute), **compute.provenance(paper.slug)}

    def save(name: str, state: dict, sidecar: dict) -> None:
        save_state_dict(artifacts.checkpoint_path(paper.slug, name), state, {**sidecar, **note})

    frame = runs.replay_buffer(env_catalog, p, _seed_for(compute), compute.resolved_device(),
                               lambda jobs: compute.workers(jobs, p.workers), compute.torch_threads(p.torch_threads),
                               save, context.log.info)
    context.add_output_metadata({"transitions": len(frame),
                                 "per_split": dg.MetadataValue.json(frame["split"].value_counts().to_dict())})
    return frame


@paper.asset(gpu=True, description="Checkpoints h, d, R, Q[5], π per task × seed × budget (weak/medium/strong = "
             "25/50/100 % of training), reloaded (md5-checked) and measured on the held-out episodes: 1-step "
             "consistency, reward MSE, Q-ensemble spread, policy vs random return.")
def world_model(context: dg.AssetExecutionContext, env_catalog: dict, replay_buffer: pd.DataFrame,
                compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    p = paper.params(compute)
    torch = _torch(compute, p, "world_model")
    value = runs.world_model(env_catalog, replay_buffer, p,
                             lambda name: data_ref(artifacts.checkpoint_path(paper.slug, name)),
                             compute.resolved_device(), torch, context.log.info,
                             lambda *k: compute.seed_for(paper.slug, *k))
    table = pd.DataFrame(value["checkpoints"]).drop(columns=["checkpoint", "md5"])
    context.add_output_metadata({"checkpoints": dg.MetadataValue.md(markdown_table(table)), **_device_note(compute)})
    return value


@paper.asset(kinds={"python"}, description="Planners (a)–(h): policy only, MPPI 512×6×3, CEM, naive gradient "
             "MPC, Dream-MPC (N=5, I=1, H=3, α=0.1, β=0.1, λ=0.01) and its ablations; one parameter set for every "
             "task (no per-task tuning); discount per task from the episode length.")
def planner_configs(context: dg.AssetExecutionContext, env_catalog: dict, world_model: dict,
                    compute: ComputeResource) -> dict:
    value = runs.planner_configs(env_catalog, paper.params(compute))
    first = pd.DataFrame(next(iter(value["per_task"].values())))
    context.add_output_metadata({"planners": dg.MetadataValue.md(markdown_table(
        first[["name", "kind", "horizon", "num_samples", "iterations", "candidates", "step_size", "reuse",
               "uncertainty", "init"]]))})
    return value


@paper.asset(gpu=True, description="Evaluation episodes per task × seed × budget × planner on the frozen models "
             "(paired initial states across planners): return, normalised score, counters, J, u. Per-step rows "
             "are written to eval_steps.parquet; wall time per decision to the run record "
             "data/runs/dream_mpc/timings/eval_episodes.parquet.")
def eval_episodes(context: dg.AssetExecutionContext, env_catalog: dict, world_model: dict,
                  planner_configs: dict, compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    _torch(compute, p, "eval")
    frame, steps, wall = runs.evaluate(env_catalog, world_model, planner_configs, p, _seed_for(compute),
                                       compute.resolved_device(), lambda jobs: compute.workers(jobs, p.workers),
                                       compute.torch_threads(p.torch_threads), context.log.info)
    artifacts.record_timings(paper.slug, "eval_episodes", wall)
    frame["steps_ref"] = data_ref(write_parquet(artifacts.paper_dir(paper.slug) / "eval_steps.parquet", steps))
    return frame


@paper.asset(gpu=True, volatile=True, description="Objective J reached vs optimisation evaluations vs action "
             "dimension: frozen learned models from held-out start states, a synthetic linear-quadratic latent "
             "system with action dims 1–64 (known optimum), and single-state decision latency per planner "
             "(wall clock: a run record).")
def planner_microbench(context: dg.AssetExecutionContext, env_catalog: dict, world_model: dict,
                       replay_buffer: pd.DataFrame, planner_configs: dict, compute: ComputeResource) -> dict:
    p = paper.params(compute)
    torch = _torch(compute, p, "microbench")
    value = runs.planner_microbench(env_catalog, world_model, replay_buffer, planner_configs, p,
                                    lambda *keys: compute.rng(paper.slug, *keys), compute.resolved_device(),
                                    torch, context.log.info)
    latency = pd.DataFrame(value["latency"])
    context.add_output_metadata({"latency_ms": dg.MetadataValue.md(markdown_table(
        latency.assign(ms=latency["median_seconds"] * 1e3)[["task", "planner", "ms", "decisions_per_s"]]))})
    return value


@paper.asset(gpu=True, description="Report only: tasks of params task_survey (spec tasks this profile does not "
             "claim on) trained per seed exactly as replay_buffer does and judged by the same world-model gate "
             "predicates; one row per task × seed with the measurements and each gate's verdict.")
def task_survey(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    config = {f: getattr(compute, f) for f in ("profile", "device", "threads", "deterministic", "base_seed",
                                                "params_overrides")}
    jobs = runs.survey_jobs(p.task_survey, config)            # unknown task ids fail here, before any training
    workers = compute.workers(len(jobs), p.workers)
    context.log.info(f"task survey: {len(jobs)} runs (task × seed) on {workers} worker process(es)")
    frame = runs.task_survey(jobs, workers, context.log.info)
    context.add_output_metadata({"runs": len(frame), "passing": int(frame["passes_all_gates"].sum()),
                                 "table": dg.MetadataValue.md(markdown_table(frame.drop(columns=["gate_notes"])))})
    return frame


@paper.asset(kinds={"duckdb", "markdown"}, description="Dream-MPC vs policy, MPPI, CEM, naive gradient MPC and "
             "ablations over tasks × seeds: normalised IQM/mean/median/optimality gap with bootstrap CIs, paired "
             "differences, the weak/medium/strong trend, micro-benchmark → warehouse, REPORT.md, metrics.json.")
def benchmark_report(context: dg.AssetExecutionContext, eval_episodes: pd.DataFrame, world_model: dict,
                     planner_microbench: dict, env_catalog: dict, task_survey: pd.DataFrame,
                     compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    p = paper.params(compute)
    built = report.build_report(eval_episodes, world_model, planner_microbench, env_catalog, task_survey, p,
                                profile=compute.profile, workers=compute.workers(99, p.workers),
                                claims_seed=compute.seed_for(paper.slug, "claims"),
                                rng=compute.rng(paper.slug, "report"),
                                eval_wall=artifacts.recorded_timings(paper.slug, "eval_episodes"))
    return paper.publish(context, compute, artifacts, built)


PAPER = paper.define(
    assets=[env_catalog, replay_buffer, world_model, planner_configs, eval_episodes, planner_microbench,
            task_survey, benchmark_report],
    checks=[
        paper.gate(env_catalog, "dims_valid", "Tasks resolved by the simulator; positive dims; whole decisions.",
                   checks.catalog_valid),
        paper.gate(replay_buffer, "finite_in_range_complete", "No NaN/inf; |a| ≤ 1; rewards in [0, action repeat]; "
                   "episode lengths as configured; ≥ N transitions (GX + numpy).", checks.buffer_valid,
                   uses_params=True, additional={"env_catalog": env_catalog}),
        paper.gate(world_model, "heldout_fit", "Held-out 1-step consistency and reward MSE under the thresholds "
                   "(for the budgets in gates.fit_budgets: the checkpoints the gated claims evaluate).",
                   checks.world_model_fit, uses_params=True),
        paper.gate(world_model, "q_ensemble_sane", "Q finite; ensemble std in (1e-4, value range).",
                   checks.q_ensemble_sane, uses_params=True),
        paper.gate(world_model, "policy_beats_random", "Strong policy-only return > random-policy return: 90 % "
                   "paired t interval's lower bound on gates.policy_episodes fresh initial states.",
                   checks.policy_beats_random, uses_params=True),
        paper.gate(eval_episodes, "grid_complete_counters_exact", "Full task × seed × budget × planner × episode "
                   "grid; counters = N·I·H; J finite.", checks.grid_complete, uses_params=True,
                   additional={"world_model": world_model, "planner_configs": planner_configs}),
        paper.gate(planner_microbench, "finite_below_optimum", "Synthetic J finite and ≤ the exact optimum.",
                   checks.microbench_valid),
    ],
    claims=["beats_policy", "beats_naive_grad", "ablations"],
    observations=["compute", "compute_wall_time", "mppi_gap_trend"],
)
