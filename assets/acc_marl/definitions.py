"""ACC-MARL (automata-conditioned cooperative MARL) as Dagster assets — wiring only
(dfa.py, layouts.py, env.py, model.py, ppo.py, runs.py, checks.py, benchmark.py, report.py do the work).

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    layouts ─> dfa_pool ─> policy (layout × variant × seed) ─> eval ─────────────┐
                   │                 ├──> assignment_study ────────────────────┤
                   │                 ├──> coordination_traces ─────────────────┤
                   │                 └──> budget_curve (snapshots, report-only)┼─> benchmark_report ─> claims
                   └──> progression_benchmark (wall clock, run record) ────────┘
"""

import dagster as dg
import pandas as pd

from assets.acc_marl import checks, runs
from assets.acc_marl import report as report_mod
from assets.acc_marl.params import AccMarlParams
from assets.common.paper import Paper
from assets.common.parallel import longest_first
from assets.common.progress import Progress
from resources.artifacts import ArtifactsResource, save_checkpoint
from resources.compute import ComputeResource

paper = Paper("acc_marl", params=AccMarlParams)


@paper.asset(kinds={"pandas"}, description="Buttons-2 and Rooms-2 (9×9, 2 agents; MIT reference configs re-entered "
             "as data): text, size, button pairs, tokens, observation channels, tokens unreachable with doors open.")
def layouts(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    return runs.layouts_table(paper.params(compute))


@paper.asset(kinds={"pandas"}, description="Canonical minimal DFAs over 10 tokens: RAD training set, R/RA/RAD test "
             "(in-distribution, languages ∉ train) and OOD (more states) sets, scenario tasks, the trivial DFA, and "
             "every progression (closed: next_id[id, token]).")
def dfa_pool(context: dg.AssetExecutionContext, layouts: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    pool = runs.build_pool(paper.params(compute), layouts, lambda *k: compute.rng(paper.slug, "pool", *k))
    context.add_output_metadata({"dfas": int(pool["id"].nunique())})
    return pool


@paper.asset(gpu=True, kinds={"torch"}, description="Shared-parameter PPO policies per layout × variant (pbrs = "
             "ACC-MARL, no_pbrs, gru on the initial DFA) × seed: state_dict + sidecar, training log.")
def policy(context: dg.AssetExecutionContext, layouts: pd.DataFrame, dfa_pool: pd.DataFrame,
           compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    jobs = runs.training_jobs(p, layouts, dfa_pool, lambda *k: compute.seed_for(paper.slug, *k),
                              compute.resolved_device())
    progress = Progress(context.log.info, len(jobs), "training")
    rows, timings = [None] * len(jobs), [None] * len(jobs)
    workers = compute.workers(len(jobs), p.workers)
    for i, out in longest_first(runs.train_job, jobs, workers, [runs.train_cost(j) for j in jobs]):
        job = jobs[i]
        name = f"{job['layout']}_{job['variant']}_s{job['seed']}"
        meta = dict(provenance=compute.provenance(paper.slug), config=job["cfg"].as_dict(), seed=job["train_seed"],
                    device=job["device"], layout=job["layout"], variant=job["variant"])
        ref = save_checkpoint(artifacts.checkpoint_path(paper.slug, name), out["state"], **meta)
        per_iteration = job["cfg"].n_envs * job["cfg"].n_steps
        snapshots = [{"iteration": it, "steps": it * per_iteration,
                      **save_checkpoint(artifacts.checkpoint_path(paper.slug, f"{name}_it{it}"), state,
                                        iteration=it, **meta)}
                     for it, state in sorted(out["snapshots"].items())]
        rows[i] = runs.policy_row(job, out, ref, snapshots)
        timings[i] = {"asset": "policy", "partition": "", "seed": job["seed"], "dataset": job["layout"],
                      "method": job["variant"], "metric": "train_seconds", "value": float(out["seconds"])}
        progress.step(f"{name}: final success {rows[i]['final_success']:.2f} ({out['seconds']:.0f} s)")
    artifacts.record_timings(paper.slug, "training", pd.DataFrame(timings))
    return pd.DataFrame(rows)


def _rollouts(make_jobs, run_job, layouts: pd.DataFrame, dfa_pool: pd.DataFrame, policy: pd.DataFrame,
              compute: ComputeResource, cost=lambda job: 1.0) -> pd.DataFrame:
    """Per-episode rows of the rollout jobs `make_jobs` builds for the trained policies, on the
    workers (longest first by `cost`), in job order."""
    p = paper.params(compute)
    jobs = make_jobs(p, layouts, dfa_pool, policy, lambda *k: compute.seed_for(paper.slug, *k))
    frames = dict(longest_first(run_job, jobs, compute.workers(len(jobs), p.workers), [cost(j) for j in jobs]))
    return pd.concat([frames[i] for i in range(len(jobs))], ignore_index=True)


@paper.asset(kinds={"pandas"}, description="Per-episode test rollouts: sampler × {in, OOD} × {random, value} "
             "assignment for ACC-MARL; RAD in-distribution for no_pbrs and gru; the random policy on every "
             "sampler × split.")
def eval(context: dg.AssetExecutionContext, layouts: pd.DataFrame, dfa_pool: pd.DataFrame, policy: pd.DataFrame,
         compute: ComputeResource) -> pd.DataFrame:
    return _rollouts(runs.eval_jobs, runs.eval_job, layouts, dfa_pool, policy, compute, runs.eval_cost)


@paper.asset(kinds={"pandas"}, description="Value-argmax assignment vs a Monte-Carlo oracle (instances × rollouts "
             "per permutation) for every ACC-MARL policy.")
def assignment_study(context: dg.AssetExecutionContext, layouts: pd.DataFrame, dfa_pool: pd.DataFrame,
                     policy: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    return _rollouts(runs.assignment_jobs, runs.assignment_job, layouts, dfa_pool, policy, compute)


@paper.asset(kinds={"pandas"}, description="Curated scenarios (hold-the-door, helper, short-circuit in Rooms-2): "
             "per-episode success and door-crossing / button-holding events from the recorded traces.")
def coordination_traces(context: dg.AssetExecutionContext, layouts: pd.DataFrame, dfa_pool: pd.DataFrame,
                        policy: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    return _rollouts(runs.trace_jobs, runs.trace_job, layouts, dfa_pool, policy, compute)


@paper.asset(kinds={"pandas"}, description="Budget curve (report-only): ACC-MARL's snapshots (params budget.fractions "
             "of its PPO iterations) on the premise's cell, RAD in-distribution with random assignment, on the eval's "
             "task tuples: per-episode success by iteration and env steps.")
def budget_curve(context: dg.AssetExecutionContext, layouts: pd.DataFrame, dfa_pool: pd.DataFrame,
                 policy: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    return _rollouts(runs.budget_jobs, runs.budget_job, layouts, dfa_pool, policy, compute)


@paper.asset(volatile=True, kinds={"pandas"}, description="Wall clock (run record): env steps/s with table "
             "progression vs a per-env loop minimising on the fly (same trajectories), value-assignment ms/episode.")
def progression_benchmark(context: dg.AssetExecutionContext, layouts: pd.DataFrame, dfa_pool: pd.DataFrame,
                          compute: ComputeResource) -> pd.DataFrame:
    return runs.progression_benchmark(paper.params(compute), layouts, dfa_pool, compute.seed_for(paper.slug, "perf"))


@paper.asset(kinds={"duckdb", "markdown"}, description="Success per layout × variant × sampler × split × "
             "assignment, the assignment study, scenario events; claims → warehouse rows, REPORT.md, metrics.json.")
def benchmark_report(context: dg.AssetExecutionContext, layouts: pd.DataFrame, dfa_pool: pd.DataFrame,
                     policy: pd.DataFrame, eval: pd.DataFrame, assignment_study: pd.DataFrame,
                     coordination_traces: pd.DataFrame, budget_curve: pd.DataFrame,
                     progression_benchmark: pd.DataFrame, compute: ComputeResource,
                     artifacts: ArtifactsResource) -> dict:
    built = report_mod.build_report(layouts, dfa_pool, policy, eval, assignment_study, coordination_traces,
                                    progression_benchmark, paper.params(compute), budget_curve)
    timings = artifacts.recorded_timings(paper.slug, "training")
    if timings is not None:
        bench = progression_benchmark
        perf = bench.assign(asset="progression_benchmark", partition="", seed=-1, dataset=bench["layout"],
                            method=bench["metric"])
        built.timings = pd.concat([timings, perf[timings.columns]], ignore_index=True)
        built.timing_body = report_mod.timing_body(built.timings)
    return paper.publish(context, compute, artifacts, built)


PAPER = paper.define(
    assets=[layouts, dfa_pool, policy, eval, assignment_study, coordination_traces, budget_curve,
            progression_benchmark, benchmark_report],
    checks=[
        paper.gate(layouts, "playable", "Rectangular, known cells, every door has a button, agents on free cells; "
                   "every token reachable on the torus with the doors open.", checks.layouts_valid),
        paper.gate(dfa_pool, "minimal_disjoint_closed", "DFAs minimal and canonical; roots satisfiable in every "
                   "layout; in-dist ≤ max size, OOD above it; test ∩ train = ∅ (hash); next_id closed.",
                   checks.pool_valid, additional={"layouts": layouts}, uses_params=True),
        paper.gate(policy, "finite_and_exploring", "Finite weights and training log; final entropy > 0.",
                   checks.policy_valid),
        paper.gate(eval, "complete_and_conjunctive", "Every policy × cell has its episodes; success only when "
                   "every agent's DFA accepts. Reports (not blocking) trained − random success in-distribution "
                   "per layout, the premise of claims 1–4.", checks.eval_valid, uses_params=True),
    ],
    claims=["pbrs_beats_sparse", "progression_beats_gru", "value_assignment", "ood_graceful",
            "hold_the_door"],
    observations=["success_by_sampler", "coordination_events", "budget_curve", "progression_speed"],
)
