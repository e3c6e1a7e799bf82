"""pfn_causal data-quality predicates: pure functions returning the problems found (empty =
pass). definitions.py turns each into a blocking Dagster check (assets/common/checks.gate);
tests call them directly on corrupted inputs."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.findings import Finding, finding
from assets.common.parallel import spawn_imap
from assets.common.pfn.train import finite_state, stream_rng
from assets.pfn_causal import prior as P
from assets.pfn_causal import runs
from assets.pfn_causal.params import PFNCausalParams

COVERAGE_TOLERANCE = 0.02        # |empirical − π_pre| per size and per subset in the pretraining-stream sample
SE_FRACTION = 0.02               # MC standard error of every truth < 0.02 · sd(Y)
MIN_LOSS_DROP = 0.20             # "loss −20 %", the literal training-NLL reading (a warning)
MAX_COVERED_NMSE = 0.7           # held-out covered nMSE of a pretrained checkpoint
RULE_SLACK = 0.01                # calibration queries above the threshold ≤ 1 − quantile + slack
DISJOINT_CHUNK = 1000            # training-stream steps per job of the leakage check (spawned workers)


# ------------------------------------------------------------------------------ prior config
def coverage_premise(value: dict) -> Finding:
    """The experiment's premise, in a sample of the pretraining stream: every subset and size
    frequency within ±0.02 of π_pre, and |S| ≥ 3 never drawn."""
    problems = []
    if value["coverage_queries"] <= 0:
        problems.append("the coverage sample holds no queries")
    for row in value["coverage_sizes"]:
        if abs(row["empirical"] - row["expected"]) > COVERAGE_TOLERANCE:
            problems.append(f"|S| = {row['size']}: frequency {row['empirical']:.4f} vs π_pre {row['expected']:.4f}")
        if row["size"] >= 3 and row["count"] != 0:
            problems.append(f"|S| = {row['size']} was drawn {row['count']} times (the premise needs exactly 0)")
    for row in value["coverage_subsets"]:
        if abs(row["empirical"] - row["expected"]) > COVERAGE_TOLERANCE:
            problems.append(f"{row['subset']}: frequency {row['empirical']:.4f} vs π_pre {row['expected']:.4f}")
    big = sum(r["count"] for r in value["coverage_sizes"] if r["size"] >= 3)
    return finding(problems, ok=f"{value['coverage_queries']} sampled queries match π_pre within ±"
                   f"{COVERAGE_TOLERANCE}; |S| ≥ 3 drawn {big} times", queries=value["coverage_queries"])


# ------------------------------------------------------------------------------ eval bank
def _bank_arrays(value: dict) -> dict:
    from resources.artifacts import load_checkpoint

    state, _ = load_checkpoint(value["bank"])
    return {k: v.numpy() for k, v in state.items()}


def bank_graphs(value: dict) -> Finding:
    """Every bank DAG is acyclic (networkx) with only forward edges, and Y (node d) a sink."""
    import networkx as nx

    from assets.common.pfn.scm import to_networkx

    arrays = _bank_arrays(value)
    scms = runs.bank_scms(arrays)
    problems = []
    for b in range(scms.batch):
        graph = to_networkx(scms, b)
        sink = int(scms.n_nodes[b]) - 1
        if not nx.is_directed_acyclic_graph(graph):
            problems.append(f"SCM {b}: the graph has a cycle {nx.find_cycle(graph)}")
        if graph.out_degree(sink) != 0:
            problems.append(f"SCM {b}: Y (node {sink}) has children {sorted(graph.successors(sink))}")
        if np.any(np.tril(scms.adjacency[b]) != 0):
            problems.append(f"SCM {b}: an edge runs against the topological order")
    return finding(problems, ok=f"{scms.batch} acyclic graphs, Y a sink in each")


def bank_truth(value: dict) -> Finding:
    """Truth finite and precise: MC standard error of every μ < 0.02 · sd(Y); the query grid
    complete (every SCM × every subset × `values` values, every target and far point)."""
    arrays = _bank_arrays(value)
    mu, se, sd = arrays["mu"], arrays["se"], arrays["obs_sd"]
    problems = []
    if not (np.isfinite(mu).all() and np.isfinite(se).all() and np.isfinite(sd).all()):
        problems.append("non-finite truth, standard error or sd(Y)")
    else:
        ratio = se / sd[:, None]
        worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
        if ratio.max() >= SE_FRACTION:
            problems.append(f"{int((ratio >= SE_FRACTION).sum())} truths with MC SE ≥ {SE_FRACTION}·sd(Y) "
                            f"(worst {ratio.max():.4f} at SCM {worst[0]}, query {worst[1]})")
    masks, kinds, d = arrays["q_mask"], arrays["q_kind"], arrays["q_mask"].shape[-1]
    grid = masks[:, kinds == runs.GRID]
    counts = pd.Series([P.subset_key(m) for m in grid[0]]).value_counts()
    expected = {P.subset_key(m) for m in P.all_subsets(d)}
    if set(counts.index) != expected or counts.nunique() != 1:
        problems.append(f"the grid covers {len(counts)} of {len(expected)} subsets, counts {sorted(set(counts))}")
    if not np.all(masks == masks[:1]):
        problems.append("query masks differ between SCMs")
    if np.any(np.where(masks, 0.0, arrays["q_val"]) != 0):
        problems.append("a query carries a value off its mask")
    n_targets = len(value["targets"])
    if (kinds == runs.TARGET).sum() != n_targets or (kinds == runs.FAR).sum() != n_targets:
        problems.append(f"expected {n_targets} target and {n_targets} far queries per SCM")
    return finding(problems, ok=f"{mu.size} truths, max SE/sd(Y) {float((se / sd[:, None]).max()):.4f}; grid "
                   f"{len(expected)} subsets × {int(counts.iloc[0]) if len(counts) else 0} values complete",
                   max_se_ratio=float((se / sd[:, None]).max()) if np.isfinite(se).all() else float("nan"))


def _stream_overlap(job: dict) -> tuple[int, list[str]]:
    """(SCMs regenerated, bank fingerprints among them) for steps `job["steps"]` of one stream."""
    prior, bank = runs.causal_prior(job["params"]), set(job["bank"])
    drawn, found = 0, set()
    for step in job["steps"]:
        fps = P.stream_scm_fingerprints(prior, stream_rng(job["stream_seed"], job["stream"], step), job["batch"])
        drawn += len(fps)
        found |= bank.intersection(fps)
    return drawn, sorted(found)


def bank_disjoint(value: dict, prior_config: dict, params: PFNCausalParams) -> Finding:
    """No bank SCM repeats inside the bank or appears in any training / estimation stream
    (regenerated from (seed, stream, step) exactly as training draws them)."""
    bank = list(value["fingerprints"])
    problems = [] if len(set(bank)) == len(bank) else [f"{len(bank) - len(set(bank))} duplicate SCMs in the bank"]
    seeds = {int(k): int(v) for k, v in prior_config["stream_seeds"].items()}
    jobs = [{"params": params, "bank": sorted(set(bank)), "stream_seed": seeds[stream["seed"]],
             "stream": stream["stream"], "steps": range(start, min(stream["steps"], start + DISJOINT_CHUNK)),
             "batch": stream["batch"]}
            for stream in runs.training_streams(params, prior_config["targets"], lambda *_k: 0)
            for start in range(0, stream["steps"], DISJOINT_CHUNK)]
    drawn, overlap = 0, set()
    for count, found in spawn_imap(_stream_overlap, jobs, params.workers):
        drawn += count
        overlap |= set(found)
    if overlap:
        problems.append(f"{len(overlap)} bank SCMs also occur in training streams (e.g. {sorted(overlap)[:3]})")
    return finding(problems, ok=f"{len(bank)} bank SCMs, none among {drawn} regenerated training-stream SCMs",
                   training_scms=drawn)


# ------------------------------------------------------------------------------ checkpoints
def checkpoints_load_back(frame: pd.DataFrame, params: PFNCausalParams) -> Finding:
    """Every checkpoint reloads (weights_only, md5), has finite weights, and gives finite
    predictions on a probe batch."""
    import torch

    from assets.pfn_causal import model as M
    from resources.artifacts import load_checkpoint

    problems = []
    if frame.empty:
        problems.append("no checkpoints")
    probe = P.build_tasks(runs.causal_prior(params), runs.pre_spec(params), stream_rng(0, "probe", 0), 2)
    for row in frame.itertuples():
        try:
            state, _ = load_checkpoint(row.checkpoint)
        except Exception as err:        # a corrupt file must fail the gate, whatever the reason
            problems.append(f"{row.checkpoint}: does not reload ({type(err).__name__}: {err})")
            continue
        bad = finite_state(state)
        if bad:
            problems.append(f"{row.checkpoint}: non-finite tensors {bad[:3]}")
            continue
        model = runs.load_model(row.checkpoint, params)
        with torch.no_grad():
            out = M.predict(model, probe)
        if not (np.isfinite(out["mean"]).all() and np.isfinite(out["var"]).all()):
            problems.append(f"{row.checkpoint}: non-finite predictions")
    return finding(problems, ok=f"{len(frame)} checkpoints reload with finite weights and predictions")


def pretrained_learned(frame: pd.DataFrame, params: PFNCausalParams) -> Finding:
    """"Loss −20 %" — the validation nMSE of the predicted mean (covered queries, held-out
    prior SCMs) at least 20 % below the same model's at initialisation (params
    gate_min_validation_drop: 0.2 at cpu / gpu; smoke trains too briefly to learn, so there it
    only has to fall) — and held-out covered nMSE ≤ 0.7."""
    problems = []
    need = params.gate_min_validation_drop
    for row in frame.itertuples():
        drop = 1 - row.validation_nmse / row.initial_nmse
        if not (drop >= need and drop > 0):
            problems.append(f"{row.regime}/seed {row.seed}: validation nMSE {row.initial_nmse:.3f} → "
                            f"{row.validation_nmse:.3f} (drop {drop:.1%}, need ≥ {need:.0%} and > 0)")
        if row.regime == "pretrain" and not row.validation_nmse <= MAX_COVERED_NMSE:
            problems.append(f"seed {row.seed}: held-out covered nMSE {row.validation_nmse:.3f} > {MAX_COVERED_NMSE}")
    return finding(problems, ok="validation nMSE " + ", ".join(
        f"{r.initial_nmse:.3f} → {r.validation_nmse:.3f}" for r in frame.itertuples()))


def training_nll_drop(frame: pd.DataFrame) -> Finding:
    """The literal reading of "loss −20 %" on the training NLL (first vs last 10 % of steps).
    A warning only: single draws y ~ M_do bound the achievable drop (NOTES.md)."""
    low = [f"{r.regime}/seed {r.seed}: −{r.loss_drop:.1%}" for r in frame.itertuples() if r.loss_drop < MIN_LOSS_DROP]
    return finding([f"training NLL fell less than {MIN_LOSS_DROP:.0%}: " + ", ".join(low)] if low else [],
                   ok="training NLL fell ≥ 20 % on every run")


def trained_as_declared(frame: pd.DataFrame, eval_bank: dict, params: PFNCausalParams,
                        trace: pd.DataFrame | None = None) -> Finding:
    """Fine-tuning SCMs and masks as declared (leakage guard): no eval-bank fingerprint among
    the SCMs a run trained on, as many SCMs as steps × batch, and only declared subsets
    (PWF: exactly its target subset; continued: π_pre's support; MSF / random: π_pre's
    support ∪ the run's picks)."""
    from resources.artifacts import load_checkpoint

    bank = set(eval_bank["fingerprints"])
    problems = []
    for row in frame.itertuples():
        _, sidecar = load_checkpoint(row.checkpoint)
        fps = sidecar.get("scm_fingerprints", [])
        leaked = bank.intersection(fps)
        if leaked:
            problems.append(f"{row.checkpoint}: trained on {len(leaked)} eval-bank SCMs")
        if len(fps) != row.steps * params.batch_size:
            problems.append(f"{row.checkpoint}: {len(fps)} training SCMs for {row.steps} steps × {params.batch_size}")
        picks = None
        if trace is not None and len(trace):
            sel = trace[(trace["seed"] == row.seed) & trace["picked"]]
            picks = sel["subset_key"].astype(int).tolist()
        target = sidecar.get("target")
        if row.regime == "pwf" and not target:
            problems.append(f"{row.checkpoint}: a PWF checkpoint without a declared target subset")
            continue
        declared = runs.declared_masks(row.regime, params, target, picks)
        used = {int(k) for k in sidecar.get("mask_counts", {})}
        if not used:
            problems.append(f"{row.checkpoint}: no query subsets recorded")
        if used - declared:
            names = sorted(P.subset_name(np.array([(k >> i) & 1 for i in range(params.n_covariates)], bool))
                           for k in used - declared)
            problems.append(f"{row.checkpoint}: trained on undeclared subsets {names}")
        if row.regime == "pwf" and used != {int(target["key"])}:
            problems.append(f"{row.checkpoint}: PWF must train on its target subset only, got {sorted(used)}")
    return finding(problems, ok=f"{len(frame)} runs: no eval-bank SCM, declared subsets only")


# ------------------------------------------------------------------------------ rule, estimates
def rule_valid(value: dict) -> Finding:
    """Thresholds finite; the calibration queries above the threshold ≤ 1 − quantile + 0.01."""
    problems = []
    limit = 1 - value["quantile"] + RULE_SLACK
    for seed, r in value["seeds"].items():
        if not np.isfinite(r["threshold"]):
            problems.append(f"seed {seed}: non-finite threshold")
        if r["calibration_exceed"] > limit:
            problems.append(f"seed {seed}: {r['calibration_exceed']:.3f} of calibration queries exceed (> {limit:.3f})")
    return finding(problems, ok="thresholds " + ", ".join(f"{r['threshold']:.3f}" for r in value["seeds"].values()))


def estimates_complete(frame: pd.DataFrame, eval_bank: dict, params: PFNCausalParams,
                       methods: tuple[str, ...]) -> Finding:
    """Every method × context size × bank SCM × query has one finite estimate."""
    problems = []
    if not np.isfinite(frame["mu_hat"].to_numpy(dtype=float)).all():
        problems.append(f"{int((~np.isfinite(frame['mu_hat'].to_numpy(dtype=float))).sum())} non-finite estimates")
    n_q = len(eval_bank["query_kinds"])
    expected = len(methods) * len(params.eval.context_sizes) * params.eval.scms * n_q
    got = frame[frame["method"].isin(methods)]
    if len(got) != expected or got.duplicated(["method", "n", "scm", "query"]).any():
        problems.append(f"{len(got)} rows for {methods}, expected {expected} without duplicates")
    return finding(problems, ok=f"{len(got)} finite estimates, grid complete")


def predictions_complete(frame: pd.DataFrame, eval_bank: dict, params: PFNCausalParams) -> Finding:
    """Every (seed, amortised method, context size) predicts every bank query; each PWF
    checkpoint its target subset's queries; all finite, variances positive."""
    problems = []
    values = frame[["mu_hat", "var_hat"]].to_numpy(dtype=float)
    if not np.isfinite(values).all() or (values[:, 1] <= 0).any():
        problems.append("non-finite predictions or non-positive variances")
    n_q = len(eval_bank["query_kinds"])
    whole = frame[frame["target"] == ""]
    sizes = whole.groupby(["seed", "method", "n"]).size()
    short = sizes[sizes != params.eval.scms * n_q]
    if len(short):
        problems.append(f"incomplete predictions for {short.index.tolist()[:3]}")
    methods = set(whole["method"])
    need = {"zero_shot", "continued", "msf", "random_ft"} | ({"full_coverage"} if params.full_coverage else set())
    if methods != need:
        problems.append(f"methods {sorted(methods)} ≠ {sorted(need)}")
    pwf = frame[frame["method"] == "pwf"]
    if pwf["target"].nunique() != len(eval_bank["targets"]) or set(pwf["seed"]) != set(params.seeds):
        problems.append("PWF predictions missing for some target or seed")
    return finding(problems, ok=f"{len(frame)} finite predictions")


def finetuned_load_back(value: dict, params: PFNCausalParams) -> Finding:
    """checkpoints_load_back for MSF / random-subset fine-tuning values."""
    return checkpoints_load_back(pd.DataFrame(value["checkpoints"]), params)


def finetuned_as_declared(value: dict, eval_bank: dict, params: PFNCausalParams) -> Finding:
    """trained_as_declared for MSF / random-subset fine-tuning values (picks from the trace)."""
    return trained_as_declared(pd.DataFrame(value["checkpoints"]), eval_bank, params, pd.DataFrame(value["trace"]))


def baselines_complete(value: pd.DataFrame, eval_bank: dict, params: PFNCausalParams) -> Finding:
    """estimates_complete for the three classical estimators."""
    return estimates_complete(value, eval_bank, params, ("g_formula", "s_learner", "naive"))
