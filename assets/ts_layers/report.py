"""ts_layers benchmark report content: pure pandas/matplotlib, no Dagster."""
from __future__ import annotations

import pandas as pd

from assets.common.report import Report, markdown_table
from assets.ts_layers import benchmark, plots
from assets.ts_layers.params import TSLayersParams
from assets.ts_layers.pipeline import cka_of

READING = (
    "Every MSE is on the RevIN scale: each test window's 24-step target divided by its 96-step look-back's mean and "
    "standard deviation, so series of different units weigh equally. Test windows lie in the last 20 % of each "
    "series (by target time); macro pools its 12 quarterly columns as one task. CIs are hierarchical bootstraps "
    "(seeds, then windows within seed × series). The importance formula is the spec's reconstruction [I] "
    "(α = 0.5, K = 2, λ = 0.5, τ = 0.25), not the paper's (unpublished).")


def _metric_rows(ev: pd.DataFrame, imp: pd.DataFrame) -> pd.DataFrame:
    means = ev.groupby(["family", "depth", "seed", "method", "task"], as_index=False)["mse"].mean()
    rows = [{"asset": "ts_layers/forecast_eval", "partition": f"{r.family}-{int(r.depth)}", "seed": int(r.seed),
             "dataset": r.task, "method": r.method, "metric": "test_mse", "value": float(r.mse)}
            for r in means.itertuples()]
    for r in imp.itertuples():
        for metric in ("s", "a", "importance", "bi", "removal_drop"):
            rows.append({"asset": "ts_layers/layer_importance",
                         "partition": f"{r.family}-{int(r.depth)}/L{int(r.layer)}",
                         "seed": int(r.seed), "dataset": "calibration", "method": "importance", "metric": metric,
                         "value": float(getattr(r, metric))})
    return pd.DataFrame(rows)


def _timings(timings: dict[str, pd.DataFrame | None], lat: pd.DataFrame | None) -> tuple[pd.DataFrame, str]:
    rows, lines = [], ["## Wall clock (per training job, one thread)", ""]
    for asset, frame in timings.items():
        if frame is None or frame.empty:
            continue
        for r in frame.to_dict("records"):
            rows.append({"asset": f"ts_layers/{asset}", "partition": f"{r.get('family', 'text')}-{r.get('depth', 0)}",
                         "seed": int(r.get("seed", -1)), "dataset": "train", "method": str(r.get("method", asset)),
                         "metric": "seconds", "value": float(r["seconds"])})
        frame = frame.assign(ms_per_step=frame["seconds"] / frame["steps"] * 1e3)
        keys = [c for c in ("family", "depth", "method") if c in frame]
        summary = frame.groupby(keys)[["ms_per_step", "seconds"]].mean().reset_index() if keys else frame
        lines += [f"### {asset} ({frame['seconds'].sum():.0f} s of training in all)", "",
                  markdown_table(summary.round(2)), ""]
    if lat is not None and len(lat):
        lines += ["## Latency (median of warm repeats, one thread)", "", markdown_table(lat.round(4)), ""]
        for r in lat.itertuples():
            rows.append({"asset": "ts_layers/latency_benchmark", "partition": f"{r.family}-{r.depth}",
                         "seed": int(r.seed), "dataset": f"batch={r.batch}", "method": "keep_tau",
                         "metric": "latency_ratio", "value": float(r.ratio)})
    return pd.DataFrame(rows, columns=["asset", "partition", "seed", "dataset", "method", "metric", "value"]), \
        "\n".join(lines)


def build_report(ev: pd.DataFrame, ckpts: pd.DataFrame, text: pd.DataFrame, imp: pd.DataFrame, rule: dict,
                 pruned: pd.DataFrame, lat: pd.DataFrame | None, p: TSLayersParams,
                 timings: dict[str, pd.DataFrame | None]) -> Report:
    claims, tables = benchmark.build_claims(ev, ckpts, imp, lat, p)
    deep = benchmark.deepest(p)
    sweep = ev[ev["method"] == "full"].groupby(["family", "depth", "task"])["mse"].mean().unstack("task")
    sweep["mean"] = sweep.mean(axis=1)
    ck = ckpts.groupby(["family", "depth"])[["params", "val_mse", "naive_val_mse", "synthetic_val_loss",
                                             "first_loss", "final_loss"]].mean().reset_index()
    pr = pruned.groupby(["family", "depth", "method"])[["layers", "params", "val_mse", "steps"]].mean().reset_index()
    keeps = pd.DataFrame([{"model": f"{m['family']}-{m['depth']}", "seed": m["seed"], "k": m["k"],
                           **{k: str([i + 1 for i in v]) for k, v in m["keeps"].items() if not k.startswith("random")},
                           "param_fraction": round(m["param_fraction"]["keep_tau"], 3)} for m in rule["models"]])
    imp_mean = imp.groupby(["family", "depth", "layer"])[["s", "a", "importance", "bi", "removal_drop"]].mean()
    ablation = tables["ablation"].groupby(["family", "depth", "variant"])[["jaccard", "spearman"]].mean()
    body = [
        "## Reading", "", READING, "",
        "## Scaling sweep: test MSE by depth (mean over seeds)", "", markdown_table(sweep.reset_index(), 4), "",
        f"Gap = MSE(L = {deep}) − MSE(L = d) per series (90 % CI; > 0 means the smaller model is better):", "",
        markdown_table(tables["gaps"], 4), "",
        "## Checkpoints (mean over seeds)", "", markdown_table(ck, 4), "",
        "Text backbone (char LM on lee_background.cor): " + ", ".join(
            f"seed {int(r.seed)} held-out loss {r.heldout_loss:.3f} nats (uniform {r.uniform_loss:.3f})"
            for r in text.itertuples()), "",
        "## Layer importance (mean over seeds; layer numbers 1-based)", "",
        markdown_table(imp_mean.reset_index(), 4), "",
        "## Keep rule (1-based layers; random draws not shown)", "", markdown_table(keeps), "",
        "## Pruning: keep-τ minus each comparator (all realigned with the same steps)", "",
        markdown_table(tables["pruning"], 4), "",
        "Realigned models (mean over seeds):", "", markdown_table(pr, 4), "",
        "## Realignment ablation (keep-τ with / without realignment; full continued vs as pretrained)", "",
        markdown_table(tables["realignment"], 4), "",
        "## Superiority cells (keep-τ vs full continued, per model × series × seed)", "",
        markdown_table(tables["cells"], 4), "",
        "## Classical baselines (same windows)", "", markdown_table(tables["classical"].reset_index(), 4), "",
        "## Importance ablation (α, K, λ; ShortGPT BI) — Jaccard with the default keep set", "",
        markdown_table(ablation.reset_index(), 3), "",
    ]
    figures = {"scaling": plots.scaling_figure(ev, ckpts), "pruning": plots.pruning_figure(tables["pruning"])}
    for (family, depth), g in imp[imp["seed"] == min(p.seeds)].groupby(["family", "depth"]):
        figures[f"cka_{family}_{int(depth)}"] = plots.cka_figure(cka_of(g), g.sort_values("layer"),
                                                                 f"{family}-{int(depth)} seed {min(p.seeds)}")
    timing_rows, timing_body = _timings(timings, lat)
    pruning = tables["pruning"]
    deep_rows = pruning[(pruning["family"] == "tsfm") & (pruning["depth"] == deep)]
    dvc = {"keep_mse_tsfm_deep": float(deep_rows["keep_mse"].iloc[0]),
           **{f"delta_vs_{r.baseline}": float(r.diff) for r in deep_rows.itertuples()},
           "superior_fraction": float(tables["cells"]["superior"].mean())}
    return Report(claims=claims, body="\n".join(body), figures=figures, metrics=_metric_rows(ev, imp),
                  dvc_metrics=dvc, timings=timing_rows, timing_body=timing_body,
                  payload={"keep": {f"{m['family']}-{m['depth']}/seed{m['seed']}": m["keeps"]["keep_tau"]
                                    for m in rule["models"]}})
