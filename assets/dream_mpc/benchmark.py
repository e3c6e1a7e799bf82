"""Statistics and claims of the Dream-MPC benchmark (pure pandas/numpy, no Dagster).

Input: the evaluation-episode table, one row per (task, seed, budget, planner, episode_seed)
with `normalised_score` (= return / time-limit control steps, 1 is the maximum) and the
per-episode counter summaries. Episodes with the same (task, seed, budget, episode_seed) start
from the same simulator state for every planner, so planner differences are paired.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from assets.common.bootstrap import BootCI, hierarchical_bootstrap
from assets.common.claims import (
    Claim,
    Premise,
    Verdict,
    all_of,
    judged,
    observation,
    sanity,
    seeds_label,
    verdict,
)
from assets.common.report import markdown_table

PAIR_KEYS = ["task", "seed", "budget", "episode_seed"]
BUDGET_ORDER = ["weak", "medium", "strong"]

# claim thresholds (the spec's pass criteria; the same at every profile)
SPEC_TASKS = ("pendulum-swingup", "cartpole-swingup", "reacher-easy")   # the spec's nightly tasks
TASK_SHARE = (2, 3)               # beats_policy: per-task count ≥ ⌈2/3 · tasks⌉ reported (not the rule)
CI_LEVEL = 0.90                   # paired CIs of every comparative claim
NAIVE_MARGIN = 0.05               # beats_naive_grad: Dream-MPC ≥ naive grad-MPC + 0.05
MAX_DREAM_EVALS = 15              # ... with ≤ 15 optimisation evaluations
MIN_NAIVE_EVALS = 60              # ... against ≥ 60
ABLATION_TOLERANCE = 0.02         # ablations: full ≥ ablated − 0.02
EXACT_EVALS = (("dream_mpc", 15), ("mppi", 9216))   # compute: N·I·H and MPPI's 512·6·3


def boot_verdict(ci: BootCI, **kwargs) -> Verdict:
    """The one rule on a paired hierarchical-bootstrap CI."""
    return verdict(ci.mean, ci.low, ci.high, **kwargs)


def iqm(x: np.ndarray) -> float:
    """Interquartile mean: mean of the middle 50 % (25 % trimmed from each end)."""
    return float(stats.trim_mean(np.asarray(x, dtype=float), 0.25))


def optimality_gap(x: np.ndarray, target: float = 1.0) -> float:
    """Mean shortfall below `target` (rliable): mean(max(0, target − x))."""
    return float(np.mean(np.maximum(0.0, target - np.asarray(x, dtype=float))))


AGGREGATES = {"iqm": iqm, "mean": lambda x: float(np.mean(x)), "median": lambda x: float(np.median(x)),
              "optimality_gap": optimality_gap}


def run_scores(episodes: pd.DataFrame) -> pd.DataFrame:
    """Mean normalised score per run (task, seed, budget, planner) over its episodes."""
    return (episodes.groupby(["task", "seed", "budget", "planner"], as_index=False)["normalised_score"].mean())


def aggregate_with_ci(runs: pd.DataFrame, n_boot: int, rng: np.random.Generator,
                      ci: float = 0.95) -> pd.DataFrame:
    """IQM / mean / median / optimality gap over runs per (budget, planner) with stratified
    bootstrap CIs (runs resampled with replacement within each task, rliable style)."""
    rows = []
    for (budget, planner), g in runs.groupby(["budget", "planner"]):
        by_task = [t["normalised_score"].to_numpy() for _, t in g.groupby("task")]
        pooled = np.concatenate(by_task)
        boots = {k: [] for k in AGGREGATES}
        for _ in range(n_boot):
            sample = np.concatenate([t[rng.integers(0, len(t), len(t))] for t in by_task])
            for k, f in AGGREGATES.items():
                boots[k].append(f(sample))
        for k, f in AGGREGATES.items():
            lo, hi = np.quantile(boots[k], [(1 - ci) / 2, (1 + ci) / 2])
            rows.append({"budget": budget, "planner": planner, "aggregate": k, "value": f(pooled),
                         "ci_low": float(lo), "ci_high": float(hi), "runs": int(len(pooled))})
    return pd.DataFrame(rows)


def paired_differences(episodes: pd.DataFrame, planner: str, baseline: str, budget: str) -> pd.DataFrame:
    """Rows (task, seed, episode_seed, diff = score(planner) − score(baseline)) on shared starts."""
    sub = episodes[episodes["budget"] == budget]
    a = sub[sub["planner"] == planner].set_index(PAIR_KEYS)["normalised_score"]
    b = sub[sub["planner"] == baseline].set_index(PAIR_KEYS)["normalised_score"]
    joined = pd.concat({"a": a, "b": b}, axis=1).dropna()
    if joined.empty:
        raise ValueError(f"no paired episodes of {planner!r} and {baseline!r} at budget {budget!r}")
    return joined.assign(diff=joined["a"] - joined["b"]).reset_index()


def planner_means(episodes: pd.DataFrame, budget: str) -> pd.Series:
    """Mean normalised score per planner over tasks × seeds × episodes (tasks equally weighted)."""
    sub = episodes[episodes["budget"] == budget]
    return sub.groupby(["planner", "task"])["normalised_score"].mean().groupby("planner").mean()


def paired_array(episodes: pd.DataFrame, planner: str, baseline: str, budget: str,
                 task: str | None = None) -> tuple[np.ndarray, list[int]]:
    """(seeds, episodes) array of per-episode paired differences score(planner) − score(baseline)
    and the seeds of its rows.

    One task: row s holds seed s's episodes in episode-seed order (the same initial states for
    both planners). All tasks (task None): the element-wise mean over tasks of the per-task
    arrays, so every task weighs the same and the seed stays the unit of resampling; the
    tasks must share their seeds and their number of paired episodes per seed.
    """
    diffs = paired_differences(episodes, planner, baseline, budget)
    tasks = [task] if task is not None else sorted(diffs["task"].unique())
    arrays, seeds = [], None
    for t in tasks:
        d = diffs[diffs["task"] == t].sort_values(["seed", "episode_seed"])
        if d.empty:
            raise ValueError(f"no paired episodes of {planner!r} and {baseline!r} on {t!r} at budget {budget!r}")
        per_seed = [g["diff"].to_numpy() for _, g in d.groupby("seed", sort=True)]
        if len({len(x) for x in per_seed}) != 1:
            raise ValueError(f"{t} {budget} {planner} − {baseline}: seeds have different numbers of paired "
                             f"episodes {[len(x) for x in per_seed]}")
        task_seeds = sorted(int(s) for s in d["seed"].unique())
        if seeds is not None and task_seeds != seeds:
            raise ValueError(f"tasks have different seeds ({seeds} vs {task_seeds} on {t}): no common pairing")
        if arrays and arrays[0].shape != (len(per_seed), len(per_seed[0])):
            raise ValueError(f"tasks have different numbers of paired episodes per seed ({t})")
        seeds = task_seeds
        arrays.append(np.stack(per_seed))
    return np.mean(arrays, axis=0), seeds


def paired_ci(episodes: pd.DataFrame, planner: str, baseline: str, budget: str, n_boot: int, seed: int,
              task: str | None = None) -> BootCI:
    """90 % paired hierarchical-bootstrap CI (seeds, then episodes within a seed) of the mean
    per-episode difference planner − baseline (tasks weighted equally when task is None)."""
    diff, _ = paired_array(episodes, planner, baseline, budget, task)
    return hierarchical_bootstrap(diff, n_boot, seed, level=CI_LEVEL)


def _ci_dict(ci: BootCI) -> dict:
    return {"mean": ci.mean, "ci_low": ci.low, "ci_high": ci.high, "seeds": ci.seeds, "episodes": ci.prompts,
            "level": ci.level}


def _ci_text(ci: BootCI) -> str:
    def f(v: float) -> str:
        return f"{v:+.3f}" if math.isfinite(v) else ("−∞" if v < 0 else "+∞")
    return f"Δ {f(ci.mean)} [{ci.level:.0%} CI {f(ci.low)}, {f(ci.high)}]"


def evaluate_claims(episodes: pd.DataFrame, latency: pd.DataFrame, n_boot: int, seed: int,
                    spec_tasks: tuple[str, ...] = SPEC_TASKS) -> tuple[list[Claim], dict]:
    """The claims (and the report-only MPPI-gap observation) at the profile's scale; returns
    (claims, numbers).

    Every comparative claim is judged by a paired hierarchical-bootstrap 90 % CI over seeds
    (seeds resampled, then episodes within each seed; per-episode differences on the same
    initial states; tasks weighted equally): it holds only when the whole interval lies on
    the claimed side of its margin. One seed gives (−∞, +∞), so it never holds.
    """
    numbers: dict = {}
    claims: list[Claim] = []
    seeds = seeds_label(sorted(int(s) for s in episodes["seed"].unique()))
    tasks = sorted(episodes["task"].unique())
    n_tasks = len(tasks)
    missing = [t for t in spec_tasks if t not in tasks]
    boot_seed = iter(range(int(seed), int(seed) + 1000))

    # 1. Dream-MPC beats its own policy prior (strong checkpoint)
    overall = paired_ci(episodes, "dream_mpc", "policy_only", "strong", n_boot, next(boot_seed))
    per_task = {t: paired_ci(episodes, "dream_mpc", "policy_only", "strong", n_boot, next(boot_seed), task=t)
                for t in tasks}
    need_tasks = math.ceil(TASK_SHARE[0] * n_tasks / TASK_SHARE[1])
    higher = [t for t, ci in per_task.items() if ci.low > 0]
    numbers["dream_minus_policy"] = {**_ci_dict(overall), "per_task": {t: _ci_dict(c) for t, c in per_task.items()},
                                     "tasks_higher": len(higher), "tasks_needed": need_tasks,
                                     "spec_tasks_missing": missing}
    tasks_present = Premise(f"all {len(spec_tasks)} spec tasks passed the blocking gates and are in the claims",
                            f"{n_tasks} task(s)" + (f"; missing {', '.join(missing)}" if missing else ""),
                            not missing)
    claims.append(judged(
        "beats_policy", "Few policy-initialised candidates refined by one gradient step through the "
        "learned model improve on the policy prior (strong checkpoint)",
        "Dream-MPC(TD-MPC2) vs TD-MPC2 policy only: IQM +144.7 %, mean +43.4 % (24 tasks); "
        f"here: Dream-MPC − policy > 0 (paired {CI_LEVEL:.0%} CI, tasks weighted equally)",
        f"{_ci_text(overall)}; per-task CI lower bound > 0 on {len(higher)}/{n_tasks} task(s) (report only)",
        boot_verdict(overall, rule="effect", margin=0.0, premises=tasks_present),
        detail=("paired hierarchical bootstrap over seeds then episodes, tasks weighted equally; per task: "
                + ", ".join(f"{t} {_ci_text(c)}" for t, c in per_task.items())), seeds=seeds))

    # 2. Dream-MPC beats naive gradient MPC with 10x fewer optimisation evaluations
    evals = episodes.groupby("planner")["opt_evals_max"].max()
    naive = paired_ci(episodes, "dream_mpc", "naive_grad", "strong", n_boot, next(boot_seed))
    numbers["dream_minus_naive"] = _ci_dict(naive)
    evals_ok = Premise(f"evaluation counters: Dream-MPC ≤ {MAX_DREAM_EVALS}, naive grad-MPC ≥ {MIN_NAIVE_EVALS} "
                       "per decision", f"{evals['dream_mpc']:.0f} vs {evals['naive_grad']:.0f}",
                       bool(evals["dream_mpc"] <= MAX_DREAM_EVALS and evals["naive_grad"] >= MIN_NAIVE_EVALS))
    claims.append(judged(
        "beats_naive_grad", "Dream-MPC beats naive gradient MPC (zero init, no uncertainty, no reuse, I=10)",
        f"Dream-MPC ≥ naive grad-MPC + {NAIVE_MARGIN} normalised score (paired {CI_LEVEL:.0%} CI), "
        f"with ≤ {MAX_DREAM_EVALS} vs ≥ {MIN_NAIVE_EVALS} optimisation evaluations",
        f"{_ci_text(naive)}; evaluations {evals['dream_mpc']:.0f} vs {evals['naive_grad']:.0f}",
        boot_verdict(naive, rule="effect", margin=NAIVE_MARGIN, premises=evals_ok), seeds=seeds))

    # 3. ablations: the full method is non-inferior to each ablation (margin −0.02)
    abl = {"uncertainty": paired_ci(episodes, "dream_mpc", "dream_mpc_no_uncertainty", "strong", n_boot,
                                    next(boot_seed)),
           "reuse": paired_ci(episodes, "dream_mpc", "dream_mpc_no_reuse", "strong", n_boot, next(boot_seed))}
    i3 = (paired_ci(episodes, "dream_mpc", "dream_mpc_i3", "strong", n_boot, next(boot_seed))
          if "dream_mpc_i3" in set(episodes["planner"]) else None)
    numbers["ablation_deltas"] = {k: _ci_dict(c) for k, c in abl.items()}
    if i3 is not None:
        numbers["ablation_deltas"]["i3"] = _ci_dict(i3)
    claims.append(judged(
        "ablations", "Uncertainty regularisation and amortisation (reuse) each help",
        f"full ≥ (no uncertainty) − {ABLATION_TOLERANCE} and full ≥ (no reuse) − {ABLATION_TOLERANCE} on the mean "
        f"over tasks × seeds (non-inferiority, paired {CI_LEVEL:.0%} CI of full − ablated)",
        f"full − no-uncertainty {_ci_text(abl['uncertainty'])}; full − no-reuse {_ci_text(abl['reuse'])}"
        + (f" (full − I=3 {_ci_text(i3)}, not required)" if i3 is not None else ""),
        all_of([(k, boot_verdict(c, rule="no_worse", margin=ABLATION_TOLERANCE)) for k, c in abl.items()])[0],
        detail="both ablations must hold; the verdict shown is the deciding one", seeds=seeds))

    # 4. compute accounting from the counters (exact) and wall time per decision (batch-1
    #    latency, a wall-clock measurement: the claim is volatile, a run record)
    lat = latency.set_index("planner")["median_seconds"]
    ratio = float(lat["dream_mpc"] / lat["mppi"])
    counts_exact = {p: bool((episodes[episodes["planner"] == p]["opt_evals_min"] == n).all()
                            and (episodes[episodes["planner"] == p]["opt_evals_max"] == n).all())
                    for p, n in EXACT_EVALS}
    numbers["compute"] = {"latency_ratio_dream_over_mppi": ratio, "counts_exact": counts_exact}
    # the counters are enforced by construction (N·I·H, 512·6·3): a sanity row, never counted
    claims.append(sanity(
        "compute", "Dream-MPC needs N·I·H = 15 model evaluations per decision against MPPI's 512·6·3 = 9216",
        "15 vs 9216 evaluations (asserted from counters)", f"counters exact: {counts_exact}",
        ok=all(counts_exact.values()), seeds=seeds))
    # the wall time is one median per planner from one machine (no seeds, no CI): report only
    claims.append(observation(
        "compute_wall_time", "Dream-MPC needs less wall time per decision than MPPI",
        "Dream-MPC wall time per decision < MPPI's",
        f"wall time per decision (batch 1) Dream-MPC {lat['dream_mpc'] * 1e3:.1f} ms "
        f"vs MPPI {lat['mppi'] * 1e3:.1f} ms (ratio {ratio:.3f})",
        detail="one median latency per planner from one machine, no seeds to form a CI: report only",
        volatile=True, seeds=seeds))

    # 5. gap to MPPI vs prior quality: report only (the spec: not gating; the paper loses to
    #    MPPI with TD-MPC2 priors), so an observation that never counts
    gaps = {}
    for budget in BUDGET_ORDER:   # paired: only the episodes MPPI also ran (same initial states)
        sub = episodes[episodes["budget"] == budget]
        if {"dream_mpc", "mppi"} <= set(sub["planner"]):
            gaps[budget] = paired_ci(episodes, "dream_mpc", "mppi", budget, n_boot, next(boot_seed))
    numbers["gap_to_mppi"] = {b: _ci_dict(c) for b, c in gaps.items()}
    trend = "weak" in gaps and "strong" in gaps and gaps["strong"].mean > gaps["weak"].mean
    claims.append(observation(
        "mppi_gap_trend", "The gap Dream-MPC − MPPI grows with the quality of the policy prior "
        "(report only; Dream-MPC > MPPI is not required)",
        "TD-MPC2 priors: Dream-MPC below MPPI (DMC 433 vs 657); BMPC prior: Dream-MPC above (IQM +26.7 %)",
        "gap " + "; ".join(f"{b} {_ci_text(c)}" for b, c in gaps.items())
        + f" — gap(strong) {'>' if trend else '≤'} gap(weak) in the means",
        detail="report only in the spec (not gating, never counted): the expected qualitative trend is "
               "gap(strong) > gap(weak)", seeds=seeds))
    return claims, numbers


def claim_readings(episodes: pd.DataFrame, spec_tasks: int = 3) -> list[str]:
    """Sentences that read the strong-checkpoint scores behind the claims (for REPORT.md).

    Data-conditional, never a fixed verdict: each sentence is emitted only when the measured
    means (normalised score, tasks equally weighted) support it.
    """
    m = planner_means(episodes, "strong")
    n_tasks = int(episodes["task"].nunique())
    lines = []
    if n_tasks < spec_tasks:
        lines.append(f"- Only {n_tasks} task(s) are in the claims (the other spec tasks fail a blocking gate at this "
                     f"budget: see the task survey section), so beats_policy's premise (all spec tasks present) fails "
                     "and that claim is inconclusive, whatever its CI.")
    need = {"dream_mpc", "naive_grad", "dream_mpc_i3", "policy_only"}
    if need <= set(m.index):
        d, g, i3, p = (float(m[k]) for k in ("dream_mpc", "naive_grad", "dream_mpc_i3", "policy_only"))
        lines.append(f"- Strong checkpoint: policy {p:.3f}, Dream-MPC (I=1) {d:.3f}, Dream-MPC I=3 {i3:.3f}, "
                     f"naive gradient MPC (I=10 from zero) {g:.3f}.")
        if g > d and i3 > d:
            lines.append(f"- More gradient steps help this model (I=3 beats I=1 by {i3 - d:+.3f}), and one step of "
                         f"size 0.1 from a weak prior ({p:.3f}) moves the plan little, so ten steps from zero actions "
                         f"score higher than Dream-MPC ({g - d:+.3f}): the method relies on a good initial proposal.")
        elif g > d:
            lines.append(f"- Naive gradient MPC scores above Dream-MPC ({g - d:+.3f}) although extra iterations "
                         f"of Dream-MPC do not help (I=3 {i3 - d:+.3f}).")
        for ablation, what in (("dream_mpc_no_uncertainty", "the uncertainty penalty (λ = 0.01)"),
                               ("dream_mpc_no_reuse", "reusing the previous plan (β = 0.1)")):
            if ablation in m.index and float(m[ablation]) > d + ABLATION_TOLERANCE:
                lines.append(f"- Without {what} Dream-MPC scores {float(m[ablation]) - d:+.3f} higher on this model: "
                             f"the ablation claim does not hold here.")
    return lines


def survey_lines(survey: pd.DataFrame) -> list[str]:
    """The survey as markdown lines: readings, the table, and each failing run's gate notes
    (REPORT.md's section and the probe CLI's output)."""
    return [*survey_readings(survey), "", markdown_table(survey.drop(columns=["gate_notes"])), "",
            *[f"- {r.task} seed {r.seed}: {r.gate_notes}" for r in survey.itertuples() if r.gate_notes]]


def survey_readings(survey: pd.DataFrame) -> list[str]:
    """One line per surveyed task: seeds passing all gates and which gates failed."""
    lines = []
    for task, rows in survey.groupby("task", sort=False):
        failed = {g: int((~rows[g].astype(bool)).sum())
                  for g in ("heldout_fit", "q_ensemble_sane", "policy_beats_random")}
        failing = ", ".join(f"{g} on {n}" for g, n in failed.items() if n) or "none"
        fresh = (f"; on the gate's fresh initial states {rows['gate_policy_return'].mean():.1f} vs "
                 f"{rows['gate_random_return'].mean():.1f}"
                 if "gate_policy_return" in rows and rows["gate_policy_return"].notna().all() else "")
        lines.append(f"- {task}: {int(rows['passes_all_gates'].sum())}/{len(rows)} seeds pass every blocking gate "
                     f"(failed: {failing}); policy {rows['policy_eval_return'].mean():.1f} vs random "
                     f"{rows['random_eval_return'].mean():.1f} on training's eval episodes{fresh} (mean over seeds).")
    return lines
