"""SELLF (long-term fairness with selective labels) as Dagster assets — wiring only
(env.py, fairness.py, static.py, agents.py, runs.py, checks.py, report.py do the work).

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    env_spec ─> applicant_pool ─> behavior_logs_full (evaluator only) ─> behavior_logs_observed (leakage gate)
                      │                          └──────────────┬───────────────┘
                      │                                fairness_estimates (identity gate)
                      └──────────> agent_checkpoint <──────────┘
                                         └─> selected_config ─> eval_rollouts ─> benchmark_report ─> claims
"""

import dagster as dg
import pandas as pd

from assets.common.paper import Paper
from assets.common.parallel import spawn_imap
from assets.common.progress import Progress
from assets.common.worker import cpu_workers
from assets.fair_selective import checks, runs, static
from assets.fair_selective import report as report_mod
from assets.fair_selective.params import FairSelectiveParams
from resources.artifacts import ArtifactsResource, load_checkpoint, save_checkpoint
from resources.compute import ComputeResource

paper = Paper("fair_selective", params=FairSelectiveParams)


@paper.asset(kinds={"pandas"}, description="Per env (lending: DelayedImpact + yu2022_hard group 1; hiring: our "
             "education × experience design) the state table: group, features, P(state | group), P(y=1 | state), "
             "cost, shares, exact myopic TPR gap, sha256 of the generating constants.")
def env_spec(context: dg.AssetExecutionContext, compute: ComputeResource) -> pd.DataFrame:
    table = runs.env_spec_table(paper.params(compute))
    gaps = table.groupby("env")["myopic_tpr_gap"].first().round(4).to_dict()
    context.add_output_metadata({"myopic_tpr_gap": dg.MetadataValue.json(gaps)})
    return table


@paper.asset(kinds={"pandas"}, description="N applicants per env × seed (state id, group, latent success "
             "probability).")
def applicant_pool(context: dg.AssetExecutionContext, env_spec: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    return runs.applicant_pools(paper.params(compute), env_spec, lambda *k: compute.rng(paper.slug, *k))


@paper.asset(kinds={"pandas"}, description="Static study, EVALUATOR ONLY: M logged decisions of ε-greedy "
             "threshold policies per env × seed × policy, with the true label of every row.")
def behavior_logs_full(context: dg.AssetExecutionContext, env_spec: pd.DataFrame, applicant_pool: pd.DataFrame,
                       compute: ComputeResource) -> pd.DataFrame:
    return runs.behaviour_logs(paper.params(compute), env_spec, applicant_pool,
                               lambda *k: compute.rng(paper.slug, *k))


@paper.asset(kinds={"pandas"}, description="The same decisions with label = NULL where action = 0: the only "
             "log learners may read.")
def behavior_logs_observed(context: dg.AssetExecutionContext, behavior_logs_full: pd.DataFrame) -> pd.DataFrame:
    return static.observe(behavior_logs_full)


@paper.asset(kinds={"pandas"}, description="Per env × seed × policy × batch × measure: Δ_true, Δ_acc, Δ_imp "
             "(unweighted), Δ_IW, b_g, e_g, D̂₂, the overlap bound, the certificate and the identity residual.")
def fairness_estimates(context: dg.AssetExecutionContext, env_spec: pd.DataFrame, behavior_logs_full: pd.DataFrame,
                       behavior_logs_observed: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    return runs.fairness_estimates(paper.params(compute), env_spec, behavior_logs_full, behavior_logs_observed)


@paper.asset(kinds={"torch"}, deps=[fairness_estimates], description="PPO, oracle A-PPO, naive-accepted A-PPO, "
             "naive-imputation and SELLF per agent × β1 × env × seed (CPU torch: tiny MLPs): state_dicts (policy, "
             "predictor, past-policy history, memory counts) + sidecars, and the training curve.")
def agent_checkpoint(context: dg.AssetExecutionContext, env_spec: pd.DataFrame, applicant_pool: pd.DataFrame,
                     compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    jobs = runs.training_jobs(p, env_spec, applicant_pool, lambda *k: compute.seed_for(paper.slug, *k))
    progress = Progress(context.log.info, len(jobs), "training")
    rows, timings = [], []
    for job, out in zip(jobs, spawn_imap(runs.train_job, jobs, cpu_workers(len(jobs), p.workers))):
        name = f"{job['env']}_{job['kind']}_b{job['beta1']:g}_{job['beta2']:g}_s{job['seed']}"
        ref = save_checkpoint(artifacts.checkpoint_path(paper.slug, name), out["state"],
                              provenance=compute.provenance(paper.slug), config=job["cfg"].as_dict(),
                              seed=job["train_seed"], device="cpu", env=job["env"], bound_stats=out["bound_stats"])
        rows.append(runs.checkpoint_row(job, out, ref))
        timings.append({"asset": "agent_checkpoint", "partition": "", "seed": job["seed"], "dataset": job["env"],
                        "method": f"{job['kind']}_b{job['beta1']:g}_{job['beta2']:g}", "metric": "train_seconds",
                        "value": float(out["seconds"])})
        progress.step(f"{name}: train |Δ| {rows[-1]['train_delta_true']:.3f} ({out['seconds']:.0f} s)")
    artifacts.record_timings(paper.slug, "training", pd.DataFrame(timings))
    return pd.DataFrame(rows)


@paper.asset(kinds={"pandas"}, description="Decision rule: per env × agent the β1 chosen by the spec's "
             "observable-only rule (round Δ_obs, ≤ ω → 0, min, then max resource) and its candidates.")
def selected_config(context: dg.AssetExecutionContext, agent_checkpoint: pd.DataFrame,
                    compute: ComputeResource) -> pd.DataFrame:
    return runs.select_configs(agent_checkpoint, paper.params(compute).omega)


@paper.asset(kinds={"pandas"}, description="Per selected agent × env × seed: sampled-action evaluation episodes "
             "(every k-th step and each last step: ep, t, group, action, label, pred, resource, Δ_true, Δ_obs, "
             "Δ_imp, bias bound, certified).")
def eval_rollouts(context: dg.AssetExecutionContext, agent_checkpoint: pd.DataFrame, selected_config: pd.DataFrame,
                  applicant_pool: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    jobs = []
    for sel in selected_config.itertuples():
        ckpts = agent_checkpoint[(agent_checkpoint["env"] == sel.env) & (agent_checkpoint["agent"] == sel.agent)
                                 & (agent_checkpoint["beta1"] == sel.beta1) & (agent_checkpoint["beta2"] == sel.beta2)]
        for row in ckpts.itertuples():
            state, sidecar = load_checkpoint({"checkpoint": row.checkpoint, "md5": row.md5})
            jobs.append(runs.eval_job_spec(p, row, state, sidecar, runs.pool_of(applicant_pool, row.env, row.seed),
                                           compute.seed_for(paper.slug, "eval", row.seed)))
    frames = list(spawn_imap(runs.eval_job, jobs, cpu_workers(len(jobs), p.workers)))
    return pd.concat(frames, ignore_index=True)


@paper.asset(kinds={"duckdb", "markdown"}, description="Agents × env: true |Δ| ± std, observed Δ, profit, "
             "acceptance rates; the static estimator study; claims → warehouse rows, REPORT.md, metrics.json.")
def benchmark_report(context: dg.AssetExecutionContext, fairness_estimates: pd.DataFrame,
                     agent_checkpoint: pd.DataFrame, selected_config: pd.DataFrame, eval_rollouts: pd.DataFrame,
                     compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    built = report_mod.build_report(fairness_estimates, agent_checkpoint, selected_config, eval_rollouts,
                                    paper.params(compute))
    timings = artifacts.recorded_timings(paper.slug, "training")
    if timings is not None:
        built.timings = timings
        built.timing_body = report_mod.timing_body(timings)
    return paper.publish(context, compute, artifacts, built)


PAPER = paper.define(
    assets=[env_spec, applicant_pool, behavior_logs_full, behavior_logs_observed, fairness_estimates,
            agent_checkpoint, selected_config, eval_rollouts, benchmark_report],
    checks=[
        paper.gate(env_spec, "valid_and_unfair", "Σ p = 1 per group, p ∈ [0, 1], shares sum to 1, lending monotone, "
                   "hash present; premise: the myopic 1[p > c] TPR gap ≥ 0.10 (exact).", checks.env_spec_valid),
        paper.gate(applicant_pool, "matches_spec", "No nulls; group share within 3σ; state histogram χ² p > 1e-3.",
                   checks.pool_valid, additional={"env_spec": env_spec}),
        paper.gate(behavior_logs_observed, "no_label_leakage", "count(label not null ∧ action = 0) = 0; two groups; "
                   "probabilities in [0, 1]; a_K > 0 on rejected rows; W ≤ log length; an accepted positive per "
                   "group and batch.", checks.observed_logs_valid, uses_params=True),
        paper.gate(fairness_estimates, "identity_and_ranges", "Identity residual ≤ 1e-9 on every batch; estimates "
                   "finite in [−1, 1].", checks.estimates_valid),
        paper.gate(agent_checkpoint, "finite_with_memory", "Finite parameters; non-empty predictor memory; training "
                   "identity; largest weight in the metadata.", checks.checkpoints_valid),
        paper.gate(agent_checkpoint, "importance_weights_moderate", "Warn: max importance weight > 1e3.",
                   checks.importance_weights_moderate, severity="warn"),
        paper.gate(selected_config, "one_per_agent", "One selected β1 per trained env × agent, from its grid.",
                   checks.selection_valid, additional={"agent_checkpoint": agent_checkpoint}),
        paper.gate(eval_rollouts, "valid_rollouts", "Δ ∈ [0, 1], resource ≥ 0, length ≤ T, actions binary, no "
                   "labels on rejected rows.", checks.rollouts_valid, uses_params=True),
    ],
    claims=["naive_fails", "certificate_valid", "sellf_matches_oracle", "premise"],
    observations=["decomposition", "naive_estimate_blind", "naive_imputation_vs_sellf",
                  "calibration_form_certificate"],
)
