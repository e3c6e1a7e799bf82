"""VIAR benchmark report content: pure pandas/matplotlib, no Dagster.

`build_report` turns the benchmark tables into a Report: claims V1–V6 on the first dataset
(the others' claims are reported in the body), per-dataset tables and figures, tidy metric
rows and DVC metrics. Wall-clock measurements (sampling throughput, training steps/s, the V5
claim judged on throughput) go to the timing channel (data/runs/viar/TIMINGS.md).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.params import thaw
from assets.common.report import METRIC_COLUMNS, Report, markdown_table
from assets.viar import benchmark, plots, runs
from assets.viar.params import VIARRunParams

SLUG = "viar"
CONVERGENCE_TS = (0, 1, 2, 4, 5, 8, 10, 15)      # iterations shown in the convergence table


def sample_grid(samples: pd.DataFrame, dataset: str, viar_name: str, p: VIARRunParams):
    """First-seed samples of VAR-d<claim_depth> and VIAR at the claim schedules and the calibrated one."""
    cs = p.claim_schedules
    wanted = [(f"VAR-d{p.claim_depth}", "explicit"), (viar_name, cs.one), (viar_name, cs.mid),
              (viar_name, cs.full), (viar_name, cs.dec), (viar_name, "calibrated")]
    first = int(p.seeds[0])
    images, labels = {}, None
    for model, schedule in wanted:
        row = samples[(samples["dataset"] == dataset) & (samples["model"] == model) & (samples["schedule"] == schedule)
                      & (samples["seed"] == first)]
        if len(row):
            imgs, labels = runs.load_samples(row["samples_ref"].iat[0])
            images[f"{model} {schedule}" if schedule != "explicit" else model] = imgs
    return plots.sample_grid(images, labels, per_class=min(2, int(p.sampling.per_class)))


def dataset_section(dataset: str, summary: pd.DataFrame, quality: pd.DataFrame, memory: pd.DataFrame,
                    convergence: pd.DataFrame, models: pd.DataFrame, schedules: pd.DataFrame, floors: dict, tok: dict,
                    clf: dict, viar_name: str, p: VIARRunParams) -> list[str]:
    """REPORT.md section of one dataset: scale, quality vs compute, Pareto, training, schedules,
    memory, convergence (no wall-clock numbers)."""
    s = summary[summary["dataset"] == dataset].copy()
    table = s[["model", "schedule", "seeds", "flops_per_image", "fcd_mean", "fcd_std", "sfcd_mean", "kid_mean",
               "class_consistency_mean", "class_consistency_std", "precision_mean", "recall_mean"]].copy()
    table["flops_per_image"] = (table["flops_per_image"] / 1e6).round(2)
    table = table.rename(columns={"flops_per_image": "MFLOPs/img"}).sort_values(["model", "MFLOPs/img"])
    refs = quality[(quality["dataset"] == dataset) & (quality["kind"] == "reference")][
        ["model", "fcd", "sfcd", "kid", "class_consistency", "precision", "recall"]]
    train = (models[models["dataset"] == dataset].groupby("model")
             .agg(seeds=("seed", "nunique"), parameters=("parameters", "first"), steps=("steps", "first"),
                  final_ce=("final_ce", "mean"), unigram_entropy=("unigram_entropy", "first")).reset_index())
    mem = memory[memory["dataset"] == dataset][["model", "sweep", "value", "batch", "saved_bytes", "parameters",
                                                "adamw_state_bytes"]].copy()
    mem["saved_MB"] = (mem.pop("saved_bytes") / 1e6).round(3)
    if "peak_cuda_bytes" in memory and memory["peak_cuda_bytes"].notna().any():              # measured on CUDA
        mem["peak_cuda_MB"] = (memory.loc[mem.index, "peak_cuda_bytes"] / 1e6).round(1)
    conv = convergence[(convergence["dataset"] == dataset)]
    conv_table = (conv[conv["t"].isin(list(CONVERGENCE_TS))].groupby(["source", "scale", "t"])
                  [["rel_residual", "cosine"]].mean().reset_index())
    conv_table = conv_table.pivot_table(index=["source", "scale"], columns="t", values="rel_residual").reset_index()
    conv_table.columns = [f"t={c}" if isinstance(c, (int, np.integer)) else c for c in conv_table.columns]
    cal = schedules[schedules["dataset"] == dataset][["seed", "schedule_name", "nll_total_ratio", "val_fcd_calibrated",
                                                      "val_fcd_converged", "flops_calibrated", "flops_converged"]]
    pareto = benchmark.pareto_domination(quality[quality["dataset"] == dataset], viar_name,
                                         [f"VAR-d{d}" for d in runs.ladder(p)])
    a, v, t, sp = p.ar, p.viar, p.tokenizer, p.sampling
    d = p.dataset(dataset)
    cfg = tok["config"]
    return [
        f"## {dataset}", "",
        "### Scale of this run (honest scale-down of the paper)", "",
        f"- images: {d.image_size}×{d.image_size}×{d.channels}, splits {list(d.split_sizes)}; "
        f"latent {cfg['image_size'] // 2 ** cfg['downsample']}² (downsample ×{2 ** cfg['downsample']}), "
        f"scales {cfg['scales']} → L = {tok['tokens_per_image']} tokens; codebook V = {cfg['vocab']}, "
        f"Cvae = {cfg['cvae']}.",
        f"- tokenizer: {tok['parameters']:,} params, {t.steps} steps; val recon MSE {tok['recon_mse']:.4f}, "
        f"codebook usage {tok['codebook_usage']:.0%} (per scale {tok['codes_used_per_scale']}).",
        f"- AR models: width {a.width}, {a.heads} heads, {a.steps} steps × batch {a.batch}, "
        f"AdamW lr {a.lr} (warm-up {a.warmup}, cosine), wd {a.weight_decay}, clip {a.clip}, "
        f"label drop {a.label_drop}; VIAR-p{v.pre} with S-JFB N = {v.jfb_n}, M = {v.jfb_m}, "
        f"damping {v.damping} (1.0 = none). Seeds {list(p.seeds)} for VAR-d{p.claim_depth} and "
        f"VIAR; ladder depths {list(p.ladder_depths)} at seeds {list(p.ladder_seeds)}.",
        f"- sampling: {sp.per_class} per class, CFG {sp.cfg} with the linear ramp, top-p {sp.top_p}; same sampling "
        "seed for every model/schedule of a seed.",
        f"- evaluation classifier test accuracy {clf['test_accuracy']:.4f}; reference = the test split "
        f"({floors['n_test']} images).", "",
        "### Quality vs compute (mean over seeds)", "",
        "FCD/sFCD/KID against the held-out test split with the evaluation classifier's features; "
        "class_consistency = classifier(sample) == conditioning label.", "",
        markdown_table(table), "",
        "Reference rows at the same N (a perfect generator would score about like `real-train`; "
        "`vq-recon` is the tokenizer's ceiling):", "", markdown_table(refs), "",
        f"Noise floors: FCD train-vs-test {floors['fcd_floor_train_vs_test']:.3f}, FCD test-half-vs-half "
        f"{floors['fcd_floor_test_halves']:.3f}, sFCD {floors['sfcd_floor_train_vs_test']:.3f}, "
        f"KID {floors['kid_floor_train_vs_test']:.4f}.", "",
        "### Pareto: best VIAR operating point within each VAR budget", "", markdown_table(pareto), "",
        f"Sampling throughput and training steps/s are wall-clock measurements: `data/runs/{SLUG}/TIMINGS.md`.", "",
        "### Training", "", markdown_table(train), "",
        "### Calibrated per-scale schedules (val token NLL within tolerance of converged)", "", markdown_table(cal), "",
        "### Training activation memory (saved-tensor bytes, one step)", "", markdown_table(mem), "",
        "### Fixed-point convergence (relative residual ‖z^{t+1} − z^t‖/‖z^t‖, mean over seeds)", "",
        markdown_table(conv_table, digits=5), "",
    ]


def timing_section(dataset: str, throughput: pd.DataFrame, training: pd.DataFrame | None) -> list[str]:
    """TIMINGS.md section of one dataset: sampling throughput and training steps/s."""
    tp = throughput[throughput["dataset"] == dataset][["model", "schedule", "images_per_second", "median_seconds",
                                                       "flops_per_image"]].copy()
    tp["flops_per_image"] = (tp["flops_per_image"] / 1e6).round(2)
    if "peak_memory_bytes" in throughput and throughput["peak_memory_bytes"].notna().any():   # measured on CUDA
        tp["peak_memory_MB"] = (throughput.loc[tp.index, "peak_memory_bytes"] / 1e6).round(1)
    lines = [f"## {dataset}", "", "### Sampling throughput (first seed, interleaved, median)", "",
             markdown_table(tp), ""]
    if training is not None and len(training):
        steps = (training[training["dataset"] == dataset].groupby("model")
                 .agg(seeds=("seed", "nunique"), steps_per_second=("steps_per_second", "mean"),
                      train_seconds=("train_seconds", "mean")).reset_index())
        lines += ["### Training speed (mean over seeds)", "", markdown_table(steps), ""]
    return lines


def metric_rows(sample_quality: pd.DataFrame, memory: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """Tidy warehouse rows (METRIC_COLUMNS) of the reproducible measurements."""
    rows = pd.concat([
        sample_quality.melt(id_vars=["dataset", "model", "schedule", "seed"],
                            value_vars=list(benchmark.METRICS) + ["flops_per_image"], var_name="metric")
        .assign(asset="viar/sample_quality", partition=lambda d: "schedule=" + d["schedule"]),
        memory.rename(columns={"value": "setting"}).assign(
            seed=0, metric="saved_bytes", value=lambda d: d["saved_bytes"].astype(float),
            asset="viar/memory_profile", partition=lambda d: d["sweep"] + "=" + d["setting"].astype(str)),
        models.melt(id_vars=["dataset", "model", "seed"], value_vars=["final_ce", "parameters"], var_name="metric")
        .assign(asset=lambda d: "viar/" + np.where(d["model"].str.startswith("VAR"), "var_models", "viar_models"),
                partition="train"),
    ], ignore_index=True).rename(columns={"model": "method"})
    return _tidy(rows)


def timing_rows(throughput: pd.DataFrame, training: pd.DataFrame | None) -> pd.DataFrame:
    """Wall-clock metric rows: sampling images/s and training steps/s."""
    parts = [throughput.melt(id_vars=["dataset", "model", "schedule", "seed"], value_vars=["images_per_second"],
                             var_name="metric").assign(asset="viar/throughput",
                                                       partition=lambda d: "schedule=" + d["schedule"])]
    if training is not None and len(training):
        parts.append(training.melt(id_vars=["dataset", "model", "seed"], value_vars=["steps_per_second"],
                                   var_name="metric")
                     .assign(asset=lambda d: "viar/" + np.where(d["model"].str.startswith("VAR"), "var_models",
                                                                "viar_models"), partition="train"))
    return _tidy(pd.concat(parts, ignore_index=True).rename(columns={"model": "method"}))


def _tidy(rows: pd.DataFrame) -> pd.DataFrame:
    rows["value"] = rows["value"].astype(float)
    rows["seed"] = rows["seed"].astype(int)
    return rows[METRIC_COLUMNS]


def threshold_rows(iteration_schedule: pd.DataFrame, reference_stats: dict) -> pd.DataFrame:
    return pd.DataFrame(
        [{"name": "calibrated_total_iterations", "seed": int(r.seed), "dataset": r.dataset, "method": r.model,
          "value": float(sum(r.schedule))} for r in iteration_schedule.itertuples()]
        + [{"name": k, "seed": 0, "dataset": d, "method": "real", "value": float(v[k])}
           for d, v in reference_stats.items() for k in ("fcd_floor_train_vs_test", "fcd_floor_test_halves",
                                                         "sfcd_floor_train_vs_test", "kid_floor_train_vs_test")])


def _claims_table(claims: list) -> str:
    return markdown_table(pd.DataFrame([{"claim": c.claim_id, "ours": c.measured_value, "holds": bool(c.holds)}
                                        for c in claims]))


def build_report(sample_quality: pd.DataFrame, throughput: pd.DataFrame, memory_profile: pd.DataFrame,
                 convergence_profile: pd.DataFrame, var_models: pd.DataFrame, viar_models: pd.DataFrame,
                 iteration_schedule: pd.DataFrame, reference_stats: dict, samples: pd.DataFrame,
                 msvq_tokenizer: dict, eval_classifier: dict, p: VIARRunParams,
                 training: pd.DataFrame | None = None) -> Report:
    """The report; `training` is the models' wall-clock record (runs.train_models), when known."""
    models = pd.concat([var_models, viar_models], ignore_index=True)
    generated = sample_quality[sample_quality["kind"] != "reference"]
    summary = benchmark.summarize(generated)
    claims_by_dataset, figures, timing_figures, body, timing_body = {}, {}, {}, [], []
    for dataset in p.datasets:
        viar_name = viar_models[viar_models["dataset"] == dataset]["model"].iat[0]
        param_counts = {"viar": int(viar_models[viar_models["dataset"] == dataset]["parameters"].iat[0]),
                        "var": {int(r.depth): int(r.parameters)
                                for r in var_models[var_models["dataset"] == dataset].itertuples()}}
        floor = float(reference_stats[dataset]["fcd_floor_train_vs_test"])
        claims_by_dataset[dataset] = benchmark.evaluate_claims(
            dataset, generated, throughput, memory_profile, convergence_profile, param_counts, floor,
            int(p.claim_depth), viar_name, runs.ladder(p), thaw(p.claim_schedules))
        body += dataset_section(dataset, summary, sample_quality, memory_profile, convergence_profile, models,
                                iteration_schedule, reference_stats[dataset], msvq_tokenizer[dataset],
                                eval_classifier[dataset], viar_name, p)
        timing_body += timing_section(dataset, throughput, training)
        figures[f"{dataset}_pareto"] = plots.pareto(summary, dataset, viar_name)
        figures[f"{dataset}_samples"] = sample_grid(samples, dataset, viar_name, p)
        figures[f"{dataset}_convergence"] = plots.convergence(convergence_profile, dataset)
        figures[f"{dataset}_memory"] = plots.memory(memory_profile, dataset)
        timing_figures[f"{dataset}_throughput"] = plots.throughput(throughput, dataset)
        figures[f"{dataset}_training"] = plots.training_curves(models, dataset)
    primary = p.datasets[0]
    for dataset, extra in claims_by_dataset.items():
        if dataset == primary:
            continue
        stable, timed = [c for c in extra if not c.volatile], [c for c in extra if c.volatile]
        body += [f"## Claims on {dataset} (reported; the claim checks read {primary})", "", _claims_table(stable), ""]
        if timed:
            timing_body += [f"## Claims on {dataset} measured from wall-clock time (reported; the claim checks "
                            f"read {primary})", "", _claims_table(timed), ""]
    prim = summary[summary["dataset"] == primary]
    dvc_metrics = {
        "fcd_mean": {f"{r.model}/{r.schedule}": float(r.fcd_mean) for r in prim.itertuples()},
        "class_consistency_mean": {f"{r.model}/{r.schedule}": float(r.class_consistency_mean)
                                   for r in prim.itertuples()},
        "fcd_floor": float(reference_stats[primary]["fcd_floor_train_vs_test"]),
    }
    return Report(claims=claims_by_dataset[primary], body="\n".join(body), figures=figures,
                  metrics=metric_rows(sample_quality, memory_profile, models), dvc_metrics=dvc_metrics,
                  thresholds=threshold_rows(iteration_schedule, reference_stats),
                  timings=timing_rows(throughput, training), timing_body="\n".join(timing_body),
                  timing_figures=timing_figures, payload={"dataset": primary})
