"""acc_marl benchmark report content: pure pandas/matplotlib, no Dagster."""
from __future__ import annotations

import json

import pandas as pd

from assets.acc_marl import benchmark, plots, runs
from assets.acc_marl import layouts as lay_mod
from assets.acc_marl.params import AccMarlParams
from assets.common.report import Report, markdown_table

READING = (
    "Success = the team conjunction: every agent's own DFA accepts (episodes of {in_len} steps in-distribution, "
    "{ood_len} OOD). Task tuples are drawn per layout × seed and shared by all variants; U{{0..n−1}} agents get the "
    "trivially accepting DFA. `random` assignment keeps the drawn order, `value` picks the permutation maximising "
    "Σ_i V_i at t = 0. Training: {steps} env steps per run ({iters} PPO iterations of {envs} envs × {nsteps} steps).")


def summary_table(cells: pd.DataFrame) -> pd.DataFrame:
    agg = cells.groupby(["layout", "variant", "sampler", "split", "assignment"]).agg(
        success=("success", "mean"), sd=("success", "std"), length=("length", "mean"),
        seeds=("seed", "nunique")).reset_index()
    return agg


def study_table(study: pd.DataFrame) -> pd.DataFrame:
    inst = study.drop_duplicates(["layout", "seed", "instance"])
    rows = []
    for (name, seed), g in inst.groupby(["layout", "seed"]):
        big = g[g["oracle_gap"] > 0.1]
        rows.append({"layout": name, "seed": seed, "instances": len(g), "gap > 0.1": len(big),
                     "agreement (gap > 0.1)": (big["value_choice"] == big["oracle_choice"]).mean() if len(big)
                     else float("nan"), "agreement (all)": (g["value_choice"] == g["oracle_choice"]).mean()})
    return pd.DataFrame(rows)


def trace_text(trace: dict, layout: lay_mod.Layout) -> str:
    lines = ["| t | agent 0 | agent 1 | doors open |", "|---|---|---|---|"]
    for t, (p, o) in enumerate(zip(trace["pos"], trace["open"])):
        cells = []
        for r, c in p:
            tag = "button" if layout.button[r, c] >= 0 else ("door" if layout.door[r, c] >= 0 else "")
            tok = layout.token[r, c]
            tag = tag or (f"token {tok}" if tok >= 0 else "")
            cells.append(f"({r}, {c}) {tag}".strip())
        doors = ",".join(layout.pairs[k].upper() for k, v in enumerate(o) if v) or "—"
        lines.append(f"| {t} | {cells[0]} | {cells[1] if len(cells) > 1 else ''} | {doors} |")
    return "\n".join(lines)


def budget_section(table: pd.DataFrame, p: AccMarlParams) -> list[str]:
    """The budget curve's heading, reading and table (generated from this run's budget_curve and eval)."""
    shown = table.assign(steps=table["steps"].map("{:,}".format))
    return ["## Budget curve (report-only: does the policy learn at this budget?)",
            f"ACC-MARL snapshots after {', '.join(map(str, runs.snapshot_iterations(p)))} of its "
            f"{runs.iterations(p)} PPO iterations (params budget.fractions), and the end of training, on the "
            f"premise's cell (RAD in-distribution, random assignment): the eval's {p.eval.episodes} task tuples per "
            f"layout × seed, shared with the random policy; trained − random as a paired 90 % CI over seeds "
            f"{list(p.seeds)}. The premise of claims 1–4 asks for a lower bound > {benchmark.TRAINED_OVER_RANDOM:g} "
            "at the end of training.",
            markdown_table(shown, digits=3)]


def build_report(layouts: pd.DataFrame, pool: pd.DataFrame, policies: pd.DataFrame, evals: pd.DataFrame,
                 study: pd.DataFrame, traces: pd.DataFrame, perf: pd.DataFrame | None, p: AccMarlParams,
                 budget: pd.DataFrame | None = None) -> Report:
    claims = benchmark.claims(evals, study, traces, perf, p.layouts, p.seeds)
    cells = benchmark.cell_table(evals)
    iters = runs.iterations(p)
    curve = benchmark.budget_table(budget if budget is not None else pd.DataFrame(), cells, p.layouts, iters,
                                   iters * p.train.n_envs * p.train.n_steps)
    claims.append(benchmark.budget_observation(curve, p.seeds))
    policy_tab = policies[["layout", "variant", "seed", "steps", "final_success", "final_entropy"]]
    ev = traces.groupby(["layout", "scenario"]).agg(
        success=("success", "mean"), mover_crossed=("mover_crossed", "mean"), helper_held=("helper_held", "mean"),
        episodes=("success", "size")).reset_index()
    roots = pool[pool["role"] != "progression"].groupby(["role", "sampler"]).agg(
        dfas=("id", "size"), mean_states=("n_states", "mean"), max_states=("n_states", "max")).reset_index()
    parts = ["## Reading", READING.format(in_len=p.eval.max_len, ood_len=p.eval.ood_max_len, steps=p.train.total_steps,
                                           iters=iters, envs=p.train.n_envs, nsteps=p.train.n_steps),
             "## Test success (mean over seeds)", markdown_table(summary_table(cells)),
             "## Policies (end of training)", markdown_table(policy_tab),
             *budget_section(curve, p),
             "## Assignment study (value-argmax vs Monte-Carlo oracle)",
             f"{p.assignment.instances} instances × {p.assignment.rollouts} rollouts per permutation (RAD test DFAs).",
             markdown_table(study_table(study)),
             "## Curated scenarios (events detected from traces)", markdown_table(ev),
             "## DFA pool", f"{pool['id'].nunique()} canonical minimal DFAs closed under progression.",
             markdown_table(roots)]
    figures = {"training_success": plots.training_curves(policies), "budget_curve": plots.budget_figure(curve),
               "test_success": plots.success_bars(cells)}
    example = traces[(traces["scenario"] == "hold_the_door") & (traces["trace"] != "")]
    if len(example):
        r = example.iloc[0]
        lay = lay_mod.parse(layouts.loc[layouts["layout"] == r["layout"], "text"].iloc[0], r["layout"])
        tr = json.loads(r["trace"])
        figures["hold_the_door"] = plots.trace_figure(lay, tr, f"hold-the-door, {r['layout']}, seed {r['seed']}")
        parts += [f"## Hold-the-door trace ({r['layout']}, seed {r['seed']}, episode {r['episode']})",
                  "Agent 0 must reach the token behind the door; agent 1 holds the trivial DFA.",
                  trace_text(tr, lay)]
    else:
        parts += ["## Hold-the-door trace", "No successful hold-the-door episode in this run."]
    metrics = []
    for r in cells.itertuples():
        for m in ("success", "length"):
            metrics.append({"asset": "eval", "partition": f"{r.sampler}/{r.split}/{r.assignment}", "seed": int(r.seed),
                            "dataset": r.layout, "method": r.variant, "metric": m, "value": float(getattr(r, m))})
    dvc = {}
    for r in summary_table(cells).itertuples():
        if r.sampler == "RAD" and r.split == "in" and r.assignment == "random":
            dvc[f"{r.layout}_{r.variant}_success"] = round(float(r.success), 6)
    thresholds = pd.DataFrame([{"name": "oracle_gap", "seed": -1, "dataset": "all", "method": "assignment",
                                "value": p.assignment.gap}])
    return Report(claims=claims, body="\n\n".join(parts), figures=figures, metrics=pd.DataFrame(metrics),
                  dvc_metrics=dvc, thresholds=thresholds)


def timing_body(timings: pd.DataFrame) -> str:
    agg = timings.groupby(["dataset", "method"])["value"].agg(["mean", "sum", "count"]).reset_index()
    agg.columns = ["layout", "variant/metric", "mean", "total", "n"]
    return "## Wall clock (training seconds per run; progression benchmark)\n\n" + markdown_table(agg, digits=2)
