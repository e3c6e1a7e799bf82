"""fair_selective benchmark report content: pure pandas/matplotlib, no Dagster."""
from __future__ import annotations

import json

import pandas as pd

from assets.common.report import Report, markdown_table
from assets.fair_selective import benchmark, plots
from assets.fair_selective.agents import GPU_KINDS
from assets.fair_selective.params import FairSelectiveParams

READING = (
    "The agents learn from the fairness estimate their method allows: PPO none, the oracle A-PPO the true Δ "
    "(all labels), naive-accepted A-PPO Δ on accepted rows (identically 0 for TPR: it never sees unfairness), "
    "naive-imputation an unweighted predictor with threshold ω, SELLF the importance-weighted imputation with "
    "ω/2 and the Rényi overlap term. Every number below is the *true* Δ measured by the evaluator over the "
    "sliding window of W decisions in 10 sampled-action evaluation episodes per seed; profits are final "
    "resource − R0. Model selection (β1) used only the observable training Δ and the final resource.")
GPU_READING = (
    "The gpu-profile baselines (reference configs): ELBERT-PO regularises the squared gap of the benefit rates "
    "z_g = Σ a·y / Σ a (accepted rows only: the reference's TPR branch) with bias coefficient β1; FOCOPS "
    "constrains the episode cost Σ γ_c^t·|Δ_accepted| (identically 0 for TPR, so its multiplier ν stays at 0) "
    "with cost limit β1 and ν_max β2; SELLF-censored is SELLF whose sampled action is forced to reject where "
    "π(x) < the censor threshold. ELBERT-PO and FOCOPS see Δ only on accepted rows (the selection rule then "
    "reduces to the final resource).")


def agent_table(table: pd.DataFrame, n_boot: int) -> pd.DataFrame:
    rows = []
    for (env, agent), g in table.groupby(["env", "agent"]):
        lo, hi = benchmark.bootstrap_ci(g["delta_true"].to_numpy(), n_boot)
        rows.append({"env": env, "agent": agent, "true |Δ|": g["delta_true"].mean(), "± std": g["delta_true"].std(),
                     "90% boot CI": f"[{lo:.3f}, {hi:.3f}]", "observed |Δ|": g["delta_obs"].mean(),
                     "profit": g["profit"].mean(), "profit std": g["profit"].std(),
                     "accept g0": g["accept_g0"].mean(), "accept g1": g["accept_g1"].mean(), "seeds": len(g)})
    return pd.DataFrame(rows)


def static_table(estimates: pd.DataFrame) -> pd.DataFrame:
    e = estimates.assign(abs_true=estimates["delta_true"].abs(),
                         err_iw=(estimates["delta_imp_iw"] - estimates["delta_true"]).abs(),
                         err_unw=(estimates["delta_imp_unweighted"] - estimates["delta_true"]).abs(),
                         err_floor=(estimates["delta_imp_oracle_p"] - estimates["delta_true"]).abs())
    return (e.groupby(["env", "policy", "measure"])
            .agg(true_abs=("abs_true", "mean"), delta_acc=("delta_acc", "mean"), err_unweighted=("err_unw", "mean"),
                 err_iw=("err_iw", "mean"), err_true_p=("err_floor", "mean"), B=("B", "mean"),
                 bias_bound=("bias_bound", "mean"),
                 bound_holds=("bound_holds", "mean"), max_residual=("residual", "max"), batches=("batch", "size"))
            .reset_index())


def build_report(estimates: pd.DataFrame, checkpoints: pd.DataFrame, selected: pd.DataFrame,
                 rollouts: pd.DataFrame, p: FairSelectiveParams) -> Report:
    table = benchmark.per_seed(rollouts, p.resource0)
    claims = benchmark.claims(estimates, checkpoints, table, rollouts, p.static.seeds, p.seeds, p.bootstrap)
    agents = agent_table(table, p.bootstrap)
    stat = static_table(estimates)
    sel = selected.assign(candidates=selected["candidates"].map(
        lambda c: ", ".join(f"β=({r['beta1']:g}, {r['beta2']:g}): Δ_obs {r['delta_obs']:.3f}, R {r['resource']:.0f}"
                            for r in json.loads(c))))
    body = "\n\n".join([
        "## Agents (evaluation, true Δ, TPR)", READING
        + ("\n\n" + GPU_READING if set(table["agent"]) & set(GPU_KINDS) else ""), markdown_table(agents),
        "## Static estimator study (behaviour logs, batches of W decisions)",
        "Δ_acc is the accepted-rows estimate; err_* are mean |Δ_imp − Δ_true| (err_true_p imputes the true "
        "P(y | x): the label-noise floor of a window of W decisions, evaluator only); "
        "bias_bound is Σ_g k_g·√(D̂₂·Ê[err²]) "
        "with err = f(x) − y (label-error form).", markdown_table(stat, digits=4),
        "## Selected configurations (observable-only rule)",
        markdown_table(sel[["env", "agent", "beta1", "beta2", "candidates"]]),
        f"Learning rate {p.agents.lr:g} for every agent (calibrated on plain-PPO reward: "
        "`benchmarks/fair_selective_lr.py`, NOTES.md); training steps per agent "
        f"{p.agents.total_steps}, seeds {list(p.seeds)}."])
    metrics = []
    for r in table.itertuples():
        for m in ("delta_true", "delta_obs", "profit"):
            metrics.append({"asset": "eval_rollouts", "partition": "", "seed": int(r.seed), "dataset": r.env,
                            "method": r.agent, "metric": m, "value": float(getattr(r, m))})
    for r in stat.itertuples():
        for m in ("true_abs", "err_iw", "err_unweighted", "bound_holds"):
            metrics.append({"asset": "fairness_estimates", "partition": f"{r.policy}/{r.measure}", "seed": -1,
                            "dataset": r.env, "method": "static", "metric": m, "value": float(getattr(r, m))})
    thresholds = pd.DataFrame([{"name": "omega", "seed": -1, "dataset": "all", "method": "all", "value": p.omega},
                               {"name": "omega_half", "seed": -1, "dataset": "all", "method": "sellf",
                                "value": p.omega / 2}]
                              + [{"name": "beta1", "seed": -1, "dataset": r.env, "method": r.agent,
                                  "value": float(r.beta1)} for r in selected.itertuples()])
    dvc = {f"{r.env}_{r.agent}_delta_true": round(float(r._3), 6) for r in agents.itertuples()}
    figures = {"training_delta": plots.training_curves(checkpoints, selected),
               "fairness_vs_profit": plots.fairness_vs_profit(table)}
    return Report(claims=claims, body=body, figures=figures, metrics=pd.DataFrame(metrics), dvc_metrics=dvc,
                  thresholds=thresholds)


def timing_body(timings: pd.DataFrame) -> str:
    """Wall-clock training seconds per agent (run record, not DVC-tracked)."""
    agg = timings.groupby(["dataset", "method"])["value"].agg(["mean", "sum", "count"]).reset_index()
    agg.columns = ["env", "agent", "mean s / run", "total s", "runs"]
    return "## Training wall clock\n\n" + markdown_table(agg, digits=1)
