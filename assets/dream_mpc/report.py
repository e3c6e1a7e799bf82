"""Dream-MPC benchmark report content: pure pandas/matplotlib, no Dagster.

`build_report` turns the evaluation episodes, checkpoints, micro-benchmark and task survey
into a Report (claims, tables, figures, tidy rows); definitions.py publishes it. Wall-clock
numbers (decision latency, batched evaluation time, the compute claim) go to the run record
(Report.timings / timing_body → data/runs/dream_mpc/TIMINGS.md), never into REPORT.md.
"""
from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from assets.common.report import Report, markdown_table
from assets.dream_mpc import benchmark, plots
from assets.dream_mpc.configs import reward_balance
from assets.dream_mpc.params import DreamMPCParams, TrainingParams

METRIC_COLUMNS = ["asset", "partition", "seed", "dataset", "method", "metric", "value"]


def collector_text(training: TrainingParams) -> str:
    if training.collect_with == "mppi":
        noise = " plus TD-MPC2's exploration noise std₀·ε" if training.planner_noise else ""
        return (f"data collected by MPPI through the current model ({training.collect_mppi_samples} samples × "
                f"{training.collect_mppi_iterations} iterations{noise}; TD-MPC2: 512 × 6)")
    return "data collected by the policy prior's sampled action (TD-MPC2 collects with MPPI)"


def balance_text(training: TrainingParams, tasks: list[str]) -> str:
    shares = {t: reward_balance(training.reward_balance, t) for t in tasks}
    used = {t: v for t, v in shares.items() if v}
    if not used:
        return ""
    return (" (reward-balanced replay: " + ", ".join(f"{t} {v:.0%}" for t, v in used.items())
            + " of each batch drawn from segments with a non-zero reward; TD-MPC2 samples uniformly)")


def aggregate_table(aggregates: pd.DataFrame) -> pd.DataFrame:
    """planner × aggregate cells "value [low, high]"."""
    cells = aggregates.assign(cell=lambda d: d.apply(
        lambda r: f"{r['value']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]", axis=1))
    table = cells.pivot(index="planner", columns="aggregate", values="cell")
    order = [p for p in plots.PLANNER_ORDER if p in table.index]
    return table.reindex(order)[["iqm", "mean", "median", "optimality_gap"]].reset_index()


def jsonable(value):
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return None if not np.isfinite(value) else float(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def stable_numbers(numbers: dict) -> dict:
    """The claim numbers without the wall-clock ones (metrics.json is DVC-tracked)."""
    out = copy.deepcopy(numbers)
    out["compute"] = {"counts_exact": numbers["compute"]["counts_exact"]}
    return out


def scale_text(params: DreamMPCParams, env_catalog: dict) -> str:
    tp, ep, m = params.training, params.evaluation, params.model
    repeats = ", ".join(f"{s['task']} {s['action_repeat']}" for s in env_catalog["tasks"])
    steps = ", ".join(f"{tp.decisions * s['action_repeat']}" for s in env_catalog["tasks"])
    return (f"Tasks {list(params.tasks)} (dm_control, state observations, MuJoCo "
            f"{env_catalog['versions']['mujoco']}), training seeds {list(params.seeds)}, episodes of "
            f"{params.time_limit_steps} control steps with action repeat {repeats} (normalised score = return / "
            f"{params.time_limit_steps}). Online TD-MPC2-lite: {tp.decisions} decisions per run ({steps} env steps), "
            f"{tp.seed_episodes} episode(s) of random actions and as many pretraining updates as random decisions, "
            f"then {tp.updates_per_decision} update(s) per decision, batch {tp.batch_size}"
            f"{balance_text(tp, [*params.tasks, *params.task_survey.tasks])}, "
            f"{collector_text(tp)}; "
            f"model latent {m.latent_dim}, mlp {m.mlp_dim}, {m.activation} activations. Evaluation: {ep.episodes} "
            f"episodes per cell ({ep.episodes_sampling} for MPPI/CEM), paired initial states across planners. The "
            f"paper trains 1 M steps on 24 harder tasks; our priors are far weaker, so the numbers test the "
            f"mechanism at small scale, not the paper's absolute scores.")


def deviations_text(params: DreamMPCParams, env_catalog: dict, workers: int) -> str:
    tp = params.training
    repeats = ", ".join(f"{s['task']} {s['action_repeat']}" for s in env_catalog["tasks"])
    return (f"Episodes of {params.time_limit_steps} control steps with "
            f"action repeat {repeats} (TD-MPC2: 1000 and 2); {tp.decisions} training decisions per run "
            f"({collector_text(tp)}); {params.model.activation} activations (TD-MPC2: Mish; SiLU is ≈8x cheaper on "
            f"CPU); batch {tp.batch_size} (TD-MPC2: 256); evaluation episodes as above; {workers} worker "
            f"process(es) for independent training runs and evaluation cells (results do not depend on the process).")


def timing_section(latency: pd.DataFrame, wall: pd.DataFrame | None) -> str:
    """TIMINGS.md body: batch-1 decision latency and the batched evaluation wall time."""
    latency_tbl = (latency.assign(ms=latency["median_seconds"] * 1e3)
                   .pivot(index="planner", columns="task", values="ms").reset_index())
    lines = ["## Decision wall time", "",
             "Single-state decision latency (ms, median; the compute claim's wall-time part):", "",
             markdown_table(latency_tbl), ""]
    if wall is not None and len(wall):
        batched = (wall.groupby("planner")["seconds_per_decision"].mean().mul(1e3)
                   .rename("batched_ms_per_decision").reset_index())
        lines += ["Evaluation episodes, batched wall time per decision (ms, batch time / episodes in the batch):",
                  "", markdown_table(batched), ""]
    return "\n".join(lines)


def timing_rows(latency: pd.DataFrame, wall: pd.DataFrame | None) -> pd.DataFrame:
    rows = [latency.assign(asset="dream_mpc/planner_microbench", partition="batch=1", seed=-1,
                           dataset=lambda d: d["task"], method=lambda d: d["planner"], metric="seconds_per_decision",
                           value=lambda d: d["median_seconds"])[METRIC_COLUMNS]]
    if wall is not None and len(wall):
        per_run = wall.groupby(["task", "seed", "budget", "planner"], as_index=False)["seconds_per_decision"].mean()
        rows.append(per_run.assign(asset="dream_mpc/eval_episodes", partition=lambda d: d["budget"],
                                   dataset=lambda d: d["task"], method=lambda d: d["planner"],
                                   metric="batched_seconds_per_decision",
                                   value=lambda d: d["seconds_per_decision"])[METRIC_COLUMNS])
    frame = pd.concat(rows, ignore_index=True)
    frame["seed"] = frame["seed"].astype(int)
    return frame


def build_report(eval_episodes: pd.DataFrame, world_model: dict, planner_microbench: dict, env_catalog: dict,
                 task_survey: pd.DataFrame, params: DreamMPCParams, *, profile: str, workers: int,
                 claims_seed: int, rng: np.random.Generator, eval_wall: pd.DataFrame | None = None) -> Report:
    """The Report of one run. `claims_seed` seeds the claims' paired bootstrap, `rng` the
    aggregates' bootstrap; `eval_wall` (the evaluation's wall times, a run record) is optional."""
    n_boot = params.report.bootstrap
    latency = pd.DataFrame(planner_microbench["latency"])
    latency_mean = latency.groupby("planner", as_index=False)["median_seconds"].mean()
    claims, numbers = benchmark.evaluate_claims(eval_episodes, latency_mean, n_boot, seed=claims_seed)
    runs = benchmark.run_scores(eval_episodes)
    aggregates = benchmark.aggregate_with_ci(runs, n_boot, rng)
    synthetic = pd.DataFrame(planner_microbench["synthetic"])
    frozen = pd.DataFrame(planner_microbench["frozen"])
    checkpoints = pd.DataFrame(world_model["checkpoints"])
    curves = pd.DataFrame(world_model["curves"])

    per_task = (eval_episodes.groupby(["budget", "task", "planner"])["normalised_score"]
                .agg(["mean", "std", "count"]).reset_index())
    strong_table = per_task[per_task["budget"] == "strong"].pivot(index="planner", columns="task", values="mean")
    strong_table = strong_table.reindex([p for p in plots.PLANNER_ORDER if p in strong_table.index]).reset_index()
    trend = (eval_episodes[eval_episodes["planner"].isin(["policy_only", "dream_mpc", "mppi"])]
             .groupby(["budget", "planner", "task"])["normalised_score"].mean().groupby(["budget", "planner"]).mean()
             .unstack("planner").reindex(benchmark.BUDGET_ORDER).reset_index())
    compute_tbl = eval_episodes.groupby("planner")[["opt_evals_max", "proposal_evals"]].max().reset_index()
    synth_tbl = synthetic.pivot_table(index=["planner", "optimisation_evaluations"], columns="action_dim",
                                      values="gap_closed").reset_index()
    if len(task_survey):
        survey = [*benchmark.survey_lines(task_survey), ""]
    elif unclaimed := [t for t in benchmark.SPEC_TASKS if t not in params.tasks]:
        survey = ["No survey in this run (params task_survey is empty at this profile). Its opt-in command, the "
                  "same training and gate predicates outside Dagster: `python -m assets.dream_mpc.probe "
                  f"{' '.join(unclaimed)} --seeds 0 1 2 --workers 2`; the last measurement is in "
                  "assets/dream_mpc/NOTES.md.", ""]
    else:
        survey = ["Every spec task is in the claims at this profile: nothing to survey.", ""]
    body = [
        "## Scale of this run", "", scale_text(params, env_catalog), "",
        "## Normalised score per task (strong checkpoint, mean over seeds × episodes)", "",
        markdown_table(strong_table), "",
        "## Reading the claims", "",
        "Every comparative claim is judged by a paired 90 % hierarchical-bootstrap CI over seeds (seeds "
        "resampled, then episodes within each seed; per-episode differences of two planners on the same initial "
        "state; with several tasks, the per-(seed, episode) mean over tasks, so tasks weigh the same): it holds "
        "only when the whole interval lies on the claimed side of its margin. The means below are descriptive.", "",
        *benchmark.claim_readings(eval_episodes), "",
        "## Aggregates over runs (strong checkpoint; 95 % stratified bootstrap CIs)", "",
        markdown_table(aggregate_table(aggregates[aggregates["budget"] == "strong"])), "",
        "## Prior quality: weak / medium / strong checkpoints (25 / 50 / 100 % of training)", "",
        markdown_table(trend), "",
        "## Compute accounting", "",
        "opt_evals_max: dynamics evaluations of the optimisation loop per decision (counter in d); "
        "proposal_evals: the initial policy rollouts (extra, not in the paper's 15).", "",
        markdown_table(compute_tbl), "",
        "Wall time per decision (single-state latency, batched evaluation) and the compute claim, which "
        "is judged on it, are wall-clock measurements: see the run record data/runs/dream_mpc/TIMINGS.md.", "",
        "## Planner micro-benchmark: synthetic linear-quadratic latent system", "",
        "Fraction of the policy-prior → optimum gap closed in one decision (J* exact), per action dimension.", "",
        markdown_table(synth_tbl), "",
        "## World-model checkpoints (held-out gates)", "",
        markdown_table(checkpoints.drop(columns=["checkpoint", "md5"])), "",
        "## Task survey: spec tasks not claimed on (report only)", "", *survey,
        f"## Scale deviations ({profile} profile)", "", deviations_text(params, env_catalog, workers), ""]
    metric_rows = pd.concat([
        runs.assign(asset="dream_mpc/eval_episodes", partition=lambda d: d["budget"],
                    dataset=lambda d: d["task"], method=lambda d: d["planner"], metric="normalised_score",
                    value=lambda d: d["normalised_score"]),
        aggregates.assign(asset="dream_mpc/benchmark_report", partition=lambda d: d["budget"], seed=-1,
                          dataset="all_tasks", method=lambda d: d["planner"], metric=lambda d: d["aggregate"]),
        synthetic.assign(asset="dream_mpc/planner_microbench",
                         partition=lambda d: "action_dim=" + d["action_dim"].astype(str),
                         seed=params.microbench.seed, dataset="synthetic_lq", method=lambda d: d["planner"],
                         metric="gap_closed", value=lambda d: d["gap_closed"]),
        task_survey.melt(id_vars=["task", "seed"], var_name="metric", value_vars=[
            "policy_eval_return", "random_eval_return", "consistency_relative", "reward_mse_normalised",
            "q_ensemble_std", "passes_all_gates"]).assign(
            asset="dream_mpc/task_survey", partition="strong", dataset=lambda d: d["task"], method="td_mpc2_lite",
            value=lambda d: d["value"].astype(float)),
    ], ignore_index=True)[METRIC_COLUMNS]
    metric_rows["seed"] = metric_rows["seed"].astype(int)
    figures = {"aggregates": plots.aggregate_bars(aggregates), "per_task": plots.per_task_scores(eval_episodes),
               "prior_quality": plots.prior_quality_trend(eval_episodes),
               "learning_curves": plots.learning_curves(curves),
               "microbench": plots.microbench(synthetic, frozen)}
    dvc_metrics = {"strong_mean_score": {p: float(v) for p, v in benchmark.planner_means(eval_episodes,
                                                                                        "strong").items()},
                   "numbers": jsonable(stable_numbers(numbers))}
    timed = copy.deepcopy(numbers)
    if eval_wall is not None and len(eval_wall):
        timed["compute"]["batched_seconds_per_decision"] = {
            k: float(v) for k, v in eval_wall.groupby("planner")["seconds_per_decision"].mean().items()}
    return Report(claims=claims, body="\n".join(body), figures=figures, metrics=metric_rows,
                  dvc_metrics=dvc_metrics, timings=timing_rows(latency, eval_wall),
                  timing_body=timing_section(latency, eval_wall), payload={"numbers": jsonable(timed)})
