"""What each dispat asset computes, given its inputs, parameters and seeds — no Dagster import.

A *cell* is one (dataset, seed). Torch work runs one job per cell in worker processes
(assets.common.parallel.spawn_imap); every job seeds its own generators from the seeds it is
given, so results do not depend on the worker that ran it.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from assets.common.parallel import longest_first
from assets.common.worker import torch_worker
from assets.dispat import data as D
from assets.dispat import serialize as S
from assets.dispat.params import DispatParams

Log = Callable[[str], None]
SeedFor = Callable[..., int]
Saver = Callable[..., dict]
LM_METHODS = ("dispat", "anollm_sft", "anollm_matched")
CRITIC = "_critic"                  # run label suffix of option B (explicit critic): f "js" → run "js_critic"
TEXT_COLUMNS = {"synthetic_transactions": ("description",)}


def cells(p: DispatParams) -> list[tuple[str, int]]:
    return [(d, s) for d in p.datasets for s in p.seeds]


def sizes(p: DispatParams) -> D.SplitSizes:
    return D.SplitSizes(p.splits.train, p.splits.val, p.splits.test_normal, p.splits.anomaly_fraction)


# ------------------------------------------------------------------------------ tables
def raw_tables(p: DispatParams, rng_for: Callable[..., np.random.Generator]) -> pd.DataFrame:
    """Every dataset's rows in long form: dataset, source_row, label, anomaly_type, values (JSON
    of the feature columns). synthetic_transactions: a generated pool twice the split sizes."""
    frames = []
    for name in p.datasets:
        frames.append(_encode_values(name, D.raw_table(name, sizes(p), rng_for("raw", name))))
    return pd.concat(frames, ignore_index=True)


def _encode_values(name: str, table: pd.DataFrame) -> pd.DataFrame:
    features = [c for c in table.columns if c not in D.META]
    return pd.DataFrame({"dataset": name, "source_row": np.arange(len(table)), "label": table["label"].to_numpy(),
                         "anomaly_type": table["anomaly_type"].to_numpy(),
                         "values": [json.dumps(r, sort_keys=False) for r in table[features].to_dict("records")]})


def decode_values(frame: pd.DataFrame) -> pd.DataFrame:
    """Long-form rows (one dataset) back to a wide table with label and anomaly_type."""
    wide = pd.DataFrame([json.loads(v) for v in frame["values"]])
    wide["label"] = frame["label"].to_numpy()
    wide["anomaly_type"] = frame["anomaly_type"].to_numpy()
    return wide


def splits(raw: pd.DataFrame, p: DispatParams, rng_for: Callable[..., np.random.Generator]) -> pd.DataFrame:
    """Per cell: train / val (normal only) and test (normal + anomalies) rows, long form."""
    out = []
    for name, seed in cells(p):
        table = decode_values(raw[raw["dataset"] == name].reset_index(drop=True))
        frame = D.make_splits(name, table, sizes(p), rng_for("splits", name, seed))
        features = [c for c in frame.columns if c not in (*D.META, "split", "row_id")]
        out.append(pd.DataFrame({"dataset": name, "seed": seed, "split": frame["split"].to_numpy(),
                                 "row_id": frame["row_id"].to_numpy(), "label": frame["label"].to_numpy(),
                                 "anomaly_type": frame["anomaly_type"].to_numpy(),
                                 "values": [json.dumps(r) for r in frame[features].to_dict("records")]}))
    return pd.concat(out, ignore_index=True)


def cell_table(frame: pd.DataFrame, name: str, seed: int) -> pd.DataFrame:
    part = frame[(frame["dataset"] == name) & (frame["seed"] == seed)].reset_index(drop=True)
    wide = decode_values(part)
    wide["split"] = part["split"].to_numpy()
    wide["row_id"] = part["row_id"].to_numpy()
    return wide


def serialized_corpus(split_frame: pd.DataFrame, p: DispatParams, rng_for: Callable[..., np.random.Generator]
                      ) -> pd.DataFrame:
    """Per cell: the schema fitted on train (JSON, repeated per row), every row's formatted
    values (JSON), one seeded random column order and its serialised text."""
    out = []
    for name, seed in cells(p):
        table = cell_table(split_frame, name, seed)
        train = table[table["split"] == "train"]
        s = p.serialisation
        schema = D.fit_schema(train, TEXT_COLUMNS.get(name, ()), s.max_words, significant=s.significant,
                              max_decimals=s.max_decimals)
        for split in ("train", "val", "test"):
            D.validate_table(table[table["split"] == split].drop(columns=["split", "row_id"]), schema,
                             f"{name} seed {seed} {split}")
        rows = S.format_rows(table, schema)
        orders = S.permutations(len(rows), len(schema.names), rng_for("orders", name, seed))
        texts = [S.serialise(r, [schema.names[i] for i in o]) for r, o in zip(rows, orders)]
        out.append(pd.DataFrame({"dataset": name, "seed": seed, "split": table["split"].to_numpy(),
                                 "row_id": table["row_id"].to_numpy(), "label": table["label"].to_numpy(),
                                 "anomaly_type": table["anomaly_type"].to_numpy(),
                                 "formatted": [json.dumps(r) for r in rows], "order": [json.dumps(o.tolist())
                                                                                    for o in orders],
                                 "text": texts, "schema": json.dumps(schema.to_dict())}))
    return pd.concat(out, ignore_index=True)


def corpus_cell(corpus: pd.DataFrame, name: str, seed: int) -> dict:
    """{"schema", "rows": {split: [formatted dict]}, "labels"/"types"/"row_id": test arrays}."""
    part = corpus[(corpus["dataset"] == name) & (corpus["seed"] == seed)]
    schema = D.Schema.from_dict(json.loads(part["schema"].iloc[0]))
    rows = {sp: [json.loads(v) for v in part.loc[part["split"] == sp, "formatted"]] for sp in ("train", "val", "test")}
    test = part[part["split"] == "test"]
    return {"schema": schema, "rows": rows, "labels": test["label"].to_numpy(int),
            "types": test["anomaly_type"].to_numpy(str), "row_id": test["row_id"].to_numpy(int),
            "val_row_id": part.loc[part["split"] == "val", "row_id"].to_numpy(int)}


def tokenizer(corpus: pd.DataFrame, p: DispatParams) -> dict:
    """Per cell: the BPE (JSON), its size, token round-trip rate of every row, longest row."""
    out = []
    for name, seed in cells(p):
        cell = corpus_cell(corpus, name, seed)
        vocab = S.fit_vocab(cell["rows"]["train"], cell["schema"], p.serialisation.vocab_size)
        part = corpus[(corpus["dataset"] == name) & (corpus["seed"] == seed)]
        rows = [json.loads(v) for v in part["formatted"]]
        orders = np.array([json.loads(o) for o in part["order"]])
        longest = _longest(rows, orders, vocab)
        rate = S.round_trip_rate(rows, orders, vocab, max(longest, 1))
        out.append({"dataset": name, "seed": seed, "vocab": vocab.to_json(), "vocab_size": vocab.size,
                    "round_trip": rate, "max_tokens": longest, "context": p.model.context})
    return {"cells": out}


def _longest(rows, orders, vocab) -> int:
    enc = S.encode_rows(rows, orders, vocab, 10 ** 6)
    return int(enc.lengths.max())


def vocab_of(tok: dict, name: str, seed: int) -> S.Vocab:
    cell = next(c for c in tok["cells"] if c["dataset"] == name and c["seed"] == seed)
    return S.Vocab.from_json(cell["vocab"])


def negatives(rows: list[dict[str, str]], schema: D.Schema) -> dict[str, bool]:
    return {c.name: any(r[c.name].startswith("-") for r in rows) for c in schema.columns if c.kind == D.NUMERIC}


# ------------------------------------------------------------------------------ worker jobs
def _setup(job: dict):
    return torch_worker(job["threads"])


def _optim(p: DispatParams, lr: float):
    from assets.dispat.lm import Optim

    return Optim(lr, p.train.warmup, p.train.grad_clip, p.train.weight_decay)


def _model(p: DispatParams, vocab: S.Vocab, state: dict | None = None, init_seed: int | None = None,
           device: str = "cpu"):
    """The LM, initialised on the CPU (seeded: the same weights on every device), loaded from
    `state` if given, then moved to `device`."""
    import torch

    from assets.dispat.lm import build_model

    if init_seed is not None:
        torch.manual_seed(init_seed)
    m = build_model(vocab.size, p.model.d_model, p.model.n_heads, p.model.n_layers, p.model.context)
    if state is not None:
        m.load_state_dict(state)
    m.eval()
    return m.to(device)


def _device(job: dict) -> str:
    return job.get("device", "cpu")


def _cpu_state(model) -> dict:
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


def _load_state(path: str) -> dict:
    from pathlib import Path

    from resources.artifacts import load_state_dict

    return load_state_dict(Path(path))[0]


def sft_job(job: dict) -> dict:
    """θ0: SFT from scratch (or, with `state`, the compute-matched continuation)."""
    _setup(job)
    from assets.dispat.lm import TokenRows, train_sft, validation_nll

    p: DispatParams = job["params"]
    vocab = S.Vocab.from_json(job["vocab"])
    rows, val = TokenRows(job["train"], vocab), TokenRows(job["val"], vocab)
    started = time.perf_counter()
    model = _model(p, vocab, _load_state(job["state"]) if job.get("state") else None, job["init_seed"], _device(job))
    curve = train_sft(model, rows, job["steps"], job["batch"], _optim(p, job["lr"]),
                      np.random.default_rng(job["stream_seed"]))
    return {"state": _cpu_state(model), "curve": curve,
            "val_nll": validation_nll(model, val, job["val_seed"]), "seconds": time.perf_counter() - started,
            "params": int(model.n_parameters())}


def sample_job(job: dict) -> dict:
    """Schema-constrained samples of a policy: parsed rows (None = rejected) and token ids."""
    _setup(job)
    from assets.dispat.lm import TokenRows, sample_rows

    p: DispatParams = job["params"]
    vocab = S.Vocab.from_json(job["vocab"])
    model = _model(p, vocab, _load_state(job["state"]), device=_device(job))
    started = time.perf_counter()
    parsed, ids = sample_rows(model, vocab, TokenRows(job["train"], vocab), job["n"],
                              np.random.default_rng(job["sample_seed"]), negatives(job["train"], vocab.schema))
    return {"parsed": parsed, "ids": ids, "seconds": time.perf_counter() - started}


def _cell_self_play(job: dict, f: str, rounds: int, renormalise: bool, round0_for=None, **extra) -> tuple:
    """`rounds` self-play rounds (lm.self_play) of one cell from its θ0 with f and the run's β, γ,
    K, keep rule, stream and validation seeds. round0_for(rows, vocab): the round-0 samples
    (default: the job's sampled ids, encoded). Returns (self_play's result, vocab, seconds)."""
    _setup(job)
    from assets.dispat.lm import TokenRows, encode_sampled, self_play

    p: DispatParams = job["params"]
    sp = p.self_play
    vocab = S.Vocab.from_json(job["vocab"])
    rows, val = TokenRows(job["train"], vocab), TokenRows(job["val"], vocab)
    theta0 = _model(p, vocab, _load_state(job["state"]), device=_device(job))
    round0 = round0_for(rows, vocab) if round0_for else encode_sampled(job["round0_ids"], vocab)
    started = time.perf_counter()
    result = self_play(
        theta0, rows, val, vocab, round0, f=f, beta=sp.beta, gamma=sp.gamma, rounds=rounds,
        steps=sp.steps, batch=p.train.batch_size, n_gen=job["n_gen"], o=_optim(p, p.train.continue_lr),
        max_val_rise=sp.max_val_rise, negatives=negatives(job["train"], vocab.schema),
        rng=np.random.default_rng(job["stream_seed"]), val_seed=job["val_seed"], renormalise=renormalise, **extra)
    return result, vocab, time.perf_counter() - started


def dispat_job(job: dict) -> dict:
    """T self-play rounds from θ0 with f; round 0 uses θ0's samples (pseudo_anomalies). With
    job["critic"] (params Critic) the rounds use the explicit critic (option B); the run's label
    (job["label"], default f) names it in the records."""
    sp = job["params"].self_play
    critic_states: list[dict] = []
    (model, records, generated), vocab, seconds = _cell_self_play(
        job, job["f"], sp.rounds, sp.renormalise, critic=job.get("critic"), critic_states=critic_states)
    if job.get("label", job["f"]) != job["f"]:
        for rec in records:
            rec["f"] = job["label"]
    train_keys = {S.serialise(r, vocab.schema.names) for r in job["train"]}
    for rec, parsed in zip(records[1:], generated):
        ok = [r for r in parsed if r is not None]
        rec["duplicate_rate"] = float(np.mean([S.serialise(r, vocab.schema.names) in train_keys for r in ok])
                                      ) if ok else float("nan")
        rec["n_generated"] = len(parsed)
    records[0]["n_generated"] = len(job["round0_ids"])
    records[0]["duplicate_rate"] = float("nan")
    out = {"state": _cpu_state(model), "records": records, "seconds": seconds}
    if critic_states:
        out["critic_state"] = critic_states[-1]
    return out


RENORMALISED = "renormalised"       # the run's objective (policy_dispat rows) in renorm_ablation


def renorm_ablation_job(job: dict) -> dict:
    """The first `rounds` self-play rounds of one cell from θ0 with one objective (job["arm"]):
    "unconstrained" (r = p_θ/p_θt on the constrained samples), "no_contrast" (renormalised, round
    0's samples replaced by train rows under fresh column orders) or "renormalised" (the run's own
    objective: what policy_dispat computed; used by the tests to check the reuse). Same f, β, γ, K,
    keep rule, stream and validation seeds as the run's dispat_job, so the arms see the same data
    batches and sample picks."""
    def train_rows(rows, vocab):
        rng = np.random.default_rng(job["control_seed"])
        pick = rng.integers(0, len(rows), size=len(job["round0_ids"]))
        return rows.encode(pick, S.permutations(len(pick), len(vocab.schema.names), rng))

    (_, records, _), _, seconds = _cell_self_play(
        job, job["params"].self_play.f, job["rounds"], job["arm"] != "unconstrained",
        train_rows if job["arm"] == "no_contrast" else None)
    return {"records": records, "seconds": seconds}


def score_job(job: dict) -> dict:
    """AnoLLM scores of val + test rows under each LM (same 8 orders for all), per-column
    attributions of DiSPaT's score, and the non-LLM baselines fitted on train."""
    torch = _setup(job)
    from assets.dispat.baselines import baseline_scores
    from assets.dispat.lm import TokenRows, score_rows

    p: DispatParams = job["params"]
    vocab = S.Vocab.from_json(job["vocab"])
    eval_rows = job["val"] + job["test"]
    tr = TokenRows(eval_rows, vocab)
    out, timing = {}, {}
    attributions = None
    for method, path in job["states"].items():
        model = _model(p, vocab, _load_state(path), device=_device(job))
        started = time.perf_counter()
        scores, attr = score_rows(model, tr, p.n_permutations, job["perm_seed"])
        timing[method] = time.perf_counter() - started
        out[method] = scores
        if method == "dispat":
            attributions = attr
    started = time.perf_counter()
    with _blas(1):
        base = baseline_scores(vocab.schema, job["train"], eval_rows, job["baseline_seed"],
                               epochs=p.baselines.epochs, text_features=p.baselines.text_features)
    timing["baselines"] = time.perf_counter() - started
    for m in base.columns:
        out[m] = base[m].to_numpy()
    del torch
    return {"scores": out, "attributions": attributions, "seconds": timing}


def alignment_job(job: dict) -> dict:
    """C2ST AUC of validation rows vs samples of θ0 (round-0 pseudo-anomalies) and vs fresh
    samples of θ_T; features as for the baselines (fitted on train)."""
    _setup(job)
    from assets.dispat.baselines import Featurizer
    from assets.dispat.lm import TokenRows, sample_rows
    from assets.dispat.method import c2st_auc

    p: DispatParams = job["params"]
    vocab = S.Vocab.from_json(job["vocab"])
    model = _model(p, vocab, _load_state(job["state"]), device=_device(job))
    parsed, _ = sample_rows(model, vocab, TokenRows(job["train"], vocab), job["n"],
                            np.random.default_rng(job["sample_seed"]), negatives(job["train"], vocab.schema))
    final = [r for r in parsed if r is not None]
    feat = Featurizer(vocab.schema, job["train"], p.baselines.text_features)
    real = feat.transform(job["val"][:job["n"]])
    with _blas(1):
        auc0 = c2st_auc(real, feat.transform(job["round0"][:job["n"]]), job["c2st_seed"])
        auc_t = c2st_auc(real, feat.transform(final), job["c2st_seed"])
    return {"c2st_theta0": auc0, "c2st_thetaT": auc_t, "final_parse_rate": len(final) / max(1, len(parsed))}


def _blas(n: int):
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=n)


def sft_cost(job: dict) -> float:
    """Relative cost of an SFT job: steps × batch × characters per serialised train row (rows of
    breast_cancer are twice as long as fair's), for longest-first scheduling."""
    chars = np.mean([sum(len(k) + len(v) + 4 for k, v in row.items()) for row in job["train"][:64]])
    return float(job["steps"] * job["batch"] * chars)


def run_jobs(fn, jobs: list[dict], workers: int, log: Log, what: str, cost=None) -> list[dict]:
    """fn(job) for every job on the workers, results in job order. With `cost`, jobs start longest
    first (each job seeds itself, so the order changes no number, only the idle tail)."""
    started = time.perf_counter()
    costs = [cost(job) for job in jobs] if cost else [0.0] * len(jobs)
    results: list = [None] * len(jobs)
    for k, (i, r) in enumerate(longest_first(fn, jobs, workers, costs)):
        results[i] = r
        log(f"{what}: {k + 1}/{len(jobs)} ({time.perf_counter() - started:.0f} s)")
    return results


# ------------------------------------------------------------------------------ asset computations
def _cell_inputs(corpus: pd.DataFrame, tok: dict, name: str, seed: int) -> dict:
    cell = corpus_cell(corpus, name, seed)
    return {"vocab": vocab_of(tok, name, seed).to_json(), "train": cell["rows"]["train"], "val": cell["rows"]["val"],
            "test": cell["rows"]["test"]}


def policy_sft(corpus: pd.DataFrame, tok: dict, p: DispatParams, seed_for: SeedFor, save: Saver, workers: int,
               log: Log, device: str = "cpu") -> tuple[pd.DataFrame, list[dict]]:
    """θ0 per cell: `sft_steps` of SFT from a seeded initialisation, on `device`."""
    jobs = [{"params": p, "dataset": d, "seed": s, "threads": p.torch_threads, "device": device,
             **_cell_inputs(corpus, tok, d, s),
             "init_seed": seed_for("init", d, s), "stream_seed": seed_for("sft", d, s),
             "val_seed": seed_for("val_order", d, s), "steps": p.train.sft_steps, "batch": p.train.batch_size,
             "lr": p.train.lr} for d, s in cells(p)]
    return _policies(jobs, sft_job, "theta0", save, workers, log)


def policy_sft_matched(corpus: pd.DataFrame, tok: dict, sft: pd.DataFrame, p: DispatParams, seed_for: SeedFor,
                       save: Saver, resolve: Callable[[str], str], workers: int, log: Log, device: str = "cpu"
                       ) -> tuple[pd.DataFrame, list[dict]]:
    """AnoLLM compute-matched: θ0 + T·K more SFT steps at the continuation rate, each step on
    2 × batch data rows (a self-play step's data + samples: the same tokens per step)."""
    jobs = [{"params": p, "dataset": d, "seed": s, "threads": p.torch_threads, "device": device,
             **_cell_inputs(corpus, tok, d, s),
             "state": resolve(_ref(sft, d, s)), "init_seed": None, "stream_seed": seed_for("matched", d, s),
             "val_seed": seed_for("val_order", d, s), "steps": p.continuation_steps,
             "batch": 2 * p.train.batch_size, "lr": p.train.continue_lr} for d, s in cells(p)]
    return _policies(jobs, sft_job, "matched", save, workers, log)


def _ref(frame: pd.DataFrame, name: str, seed: int, **match) -> str:
    sel = (frame["dataset"] == name) & (frame["seed"] == seed)
    for k, v in match.items():
        sel &= frame[k] == v
    return str(frame.loc[sel, "checkpoint"].iloc[0])


def _policies(jobs, fn, tag, save, workers, log):
    results = run_jobs(fn, jobs, workers, log, tag, cost=sft_cost)
    rows, timings = [], []
    for job, r in zip(jobs, results):
        ref = save(f"{tag}_{job['dataset']}_seed{job['seed']}", r["state"], seed=job["stream_seed"],
                   device=_device(job), loss_curve=r["curve"][::max(1, len(r["curve"]) // 100)])
        rows.append({"dataset": job["dataset"], "seed": job["seed"], **ref, "steps": job["steps"],
                     "batch": job["batch"], "first_loss": float(np.mean(r["curve"][:5])),
                     "final_loss": float(np.mean(r["curve"][-10:])), "val_nll": r["val_nll"],
                     "n_parameters": r["params"]})
        timings.append({"asset": tag, "dataset": job["dataset"], "seed": job["seed"], "seconds": r["seconds"],
                        "steps": job["steps"]})
    return pd.DataFrame(rows), timings


def n_gen(p: DispatParams, n_train: int) -> int:
    return p.self_play.n_gen or n_train


def pseudo_anomalies(corpus: pd.DataFrame, tok: dict, sft: pd.DataFrame, p: DispatParams, seed_for: SeedFor,
                     resolve: Callable[[str], str], workers: int, log: Log, device: str = "cpu"
                     ) -> tuple[pd.DataFrame, list[dict]]:
    """Round-0 pseudo-anomalies: N_gen = |train| rows per cell from θ0 by schema-constrained
    decoding; rejected (unparsable) rows kept with parsed = False; duplicate = equals a train row."""
    jobs = []
    for d, s in cells(p):
        inputs = _cell_inputs(corpus, tok, d, s)
        jobs.append({"params": p, "dataset": d, "seed": s, "threads": p.torch_threads, "device": device, **inputs,
                     "state": resolve(_ref(sft, d, s)), "n": n_gen(p, len(inputs["train"])),
                     "sample_seed": seed_for("round0", d, s)})
    results = run_jobs(sample_job, jobs, workers, log, "pseudo-anomalies")
    frames, timings = [], []
    for job, r in zip(jobs, results):
        schema = S.Vocab.from_json(job["vocab"]).schema
        train_keys = {S.serialise(row, schema.names) for row in job["train"]}
        frames.append(pd.DataFrame({
            "dataset": job["dataset"], "seed": job["seed"], "round": 0, "index": np.arange(len(r["parsed"])),
            "parsed": [x is not None for x in r["parsed"]],
            "duplicate": [x is not None and S.serialise(x, schema.names) in train_keys for x in r["parsed"]],
            "formatted": [json.dumps(x) if x is not None else "" for x in r["parsed"]],
            "tokens": [json.dumps(t) for t in r["ids"]]}))
        timings.append({"asset": "pseudo_anomalies", "dataset": job["dataset"], "seed": job["seed"],
                        "seconds": r["seconds"], "rows": len(r["parsed"])})
    return pd.concat(frames, ignore_index=True), timings


def _round0(pseudo: pd.DataFrame, name: str, seed: int) -> tuple[list[list[int]], list[dict]]:
    part = pseudo[(pseudo["dataset"] == name) & (pseudo["seed"] == seed) & pseudo["parsed"]]
    return [json.loads(t) for t in part["tokens"]], [json.loads(v) for v in part["formatted"]]


def dispat_runs(p: DispatParams) -> list[tuple[str, int, str]]:
    """(dataset, seed, run label): the default f on every cell, the variants on their cells, and
    with critic.enabled the explicit-critic run (label f + "_critic") on every cell."""
    runs = [(d, s, p.self_play.f) for d, s in cells(p)]
    runs += [(d, s, f) for f in p.variants.fs for d, s in cells(p)
             if d in p.variants.datasets and s in p.variants.seeds and f != p.self_play.f]
    if p.critic.enabled:
        runs += [(d, s, p.self_play.f + CRITIC) for d, s in cells(p)]
    return runs


def is_critic(label: str) -> bool:
    return label.endswith(CRITIC)


def f_of(label: str) -> str:
    """The f of a run label ("js", "kl", "js_critic" → "js")."""
    return label[:-len(CRITIC)] if is_critic(label) else label


def policy_dispat(corpus: pd.DataFrame, tok: dict, sft: pd.DataFrame, pseudo: pd.DataFrame, p: DispatParams,
                  seed_for: SeedFor, save: Saver, resolve: Callable[[str], str], workers: int, log: Log,
                  device: str = "cpu") -> tuple[pd.DataFrame, list[dict]]:
    """θ_T per (cell, run) and one row per round: D̂_f, validation NLL before/after, accepted,
    samples used, parse and train-duplicate rates of that round's samples. The `f` column holds
    the run label (f, or f + "_critic" for option B, whose last critic is saved beside θ_T)."""
    jobs = []
    for d, s, f in dispat_runs(p):
        inputs = _cell_inputs(corpus, tok, d, s)
        ids, _ = _round0(pseudo, d, s)
        extra = {"label": f, "critic": p.critic} if is_critic(f) else {}
        jobs.append({"params": p, "dataset": d, "seed": s, "f": f_of(f), **extra, "threads": p.torch_threads,
                     "device": device, **inputs,
                     "state": resolve(_ref(sft, d, s)), "round0_ids": ids, "n_gen": n_gen(p, len(inputs["train"])),
                     "stream_seed": seed_for("self_play", d, s, f), "val_seed": seed_for("val_order", d, s)})
    results = run_jobs(dispat_job, jobs, workers, log, "self-play")
    rows, timings = [], []
    for job, r in zip(jobs, results):
        label = job.get("label", job["f"])
        if "critic_state" in r:
            save(f"critic_{label}_{job['dataset']}_seed{job['seed']}", r["critic_state"], seed=job["stream_seed"],
                 device=device)
        ref = save(f"dispat_{label}_{job['dataset']}_seed{job['seed']}", r["state"], seed=job["stream_seed"],
                   device=device, rounds=[{k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                                           for k, v in rec.items() if k != "seconds"} for rec in r["records"]])
        for rec in r["records"]:
            rows.append({"dataset": job["dataset"], "seed": job["seed"], **ref, **{k: v for k, v in rec.items()
                                                                                  if k != "seconds"}})
        timings.append({"asset": "policy_dispat", "dataset": job["dataset"], "seed": job["seed"], "f": label,
                        "seconds": r["seconds"], "steps": p.continuation_steps})
    return pd.DataFrame(rows), timings


ABLATION_COLUMNS = ("round", "val_nll_before", "val_nll_after", "accepted", "divergence", "divergence_first",
                    "u_data", "u_gen", "log_p_allowed_before", "log_p_allowed_after", "val_nll_q_before",
                    "val_nll_q_after", "n_samples")


def ablation_arms(p: DispatParams) -> list[str]:
    """renorm_ablation's objectives: the run's own first (its policy_dispat rows: "renormalised", or
    "unconstrained" when a profile turns self_play.renormalise off), then the configured arms to
    compute (less the run's)."""
    run = RENORMALISED if p.self_play.renormalise else "unconstrained"
    return [run, *(o for o in dict.fromkeys(p.renorm_ablation.arms) if o != run)]


def ablation_cells(p: DispatParams) -> list[tuple[str, int]]:
    """The run's cells on renorm_ablation's datasets × seeds."""
    a = p.renorm_ablation
    return [(d, s) for d, s in cells(p) if d in a.datasets and s in a.seeds]


def renorm_ablation_jobs(corpus: pd.DataFrame, tok: dict, sft: pd.DataFrame, pseudo: pd.DataFrame,
                         p: DispatParams, seed_for: SeedFor, resolve: Callable[[str], str], arms, device: str = "cpu"
                         ) -> list[dict]:
    """One renorm_ablation_job per ablation cell × arm, seeded as the run's dispat_job of that cell."""
    jobs = []
    for d, s in ablation_cells(p):
        inputs = _cell_inputs(corpus, tok, d, s)
        ids, _ = _round0(pseudo, d, s)
        for arm in arms:
            jobs.append({"params": p, "dataset": d, "seed": s, "arm": arm, "threads": p.torch_threads,
                         "device": device, **inputs, "state": resolve(_ref(sft, d, s)), "round0_ids": ids,
                         "rounds": p.renorm_ablation.rounds, "n_gen": n_gen(p, len(inputs["train"])),
                         "stream_seed": seed_for("self_play", d, s, p.self_play.f),
                         "val_seed": seed_for("val_order", d, s), "control_seed": seed_for("no_contrast", d, s)})
    return jobs


def ablation_rows(dataset: str, seed: int, objective: str, records: list[dict]) -> list[dict]:
    """Tidy rows of renorm_ablation: one per round, with the relative validation-NLL change (after /
    before − 1), the same under the constrained distribution, and the change of log P(allowed)."""
    out = []
    for rec in records:
        row = {"dataset": dataset, "seed": int(seed), "objective": objective,
               **{k: rec[k] for k in ABLATION_COLUMNS if k in rec}}
        row["val_nll_change"] = row["val_nll_after"] / row["val_nll_before"] - 1
        row["val_nll_q_change"] = row["val_nll_q_after"] / row["val_nll_q_before"] - 1
        row["d_log_p_allowed"] = row["log_p_allowed_after"] - row["log_p_allowed_before"]
        out.append(row)
    return out


def renorm_ablation(corpus: pd.DataFrame, tok: dict, sft: pd.DataFrame, pseudo: pd.DataFrame,
                    dispat: pd.DataFrame, p: DispatParams, seed_for: SeedFor, resolve: Callable[[str], str],
                    workers: int, log: Log, device: str = "cpu") -> tuple[pd.DataFrame, list[dict]]:
    """Issue 48's ablation on the run's θ0 checkpoints and round-0 pseudo-anomalies: per ablation cell,
    the first `renorm_ablation.rounds` self-play rounds under each objective. "renormalised" rows are
    the run's policy_dispat rows (default f; the same seeds give the same rounds); the arms in
    `renorm_ablation.arms` are computed. One row per (cell, objective, round): validation NLL before /
    after and its relative change, kept, D̂_f, log P(allowed) θt → θ, the constrained validation NLL."""
    a = p.renorm_ablation
    arms = ablation_arms(p)
    rows = []
    for d, s in ablation_cells(p):
        run = dispat[(dispat["dataset"] == d) & (dispat["seed"] == s) & (dispat["f"] == p.self_play.f)
                     & (dispat["round"] < a.rounds)].sort_values("round")
        rows += ablation_rows(d, s, arms[0], run.to_dict("records"))
    jobs = renorm_ablation_jobs(corpus, tok, sft, pseudo, p, seed_for, resolve, arms[1:], device)
    results = run_jobs(renorm_ablation_job, jobs, workers, log, "renorm ablation")
    timings = []
    for job, r in zip(jobs, results):
        rows += ablation_rows(job["dataset"], job["seed"], job["arm"], r["records"])
        timings.append({"asset": "renorm_ablation", "dataset": job["dataset"], "seed": job["seed"],
                        "method": job["arm"], "seconds": r["seconds"], "steps": a.rounds * p.self_play.steps})
    columns = ["dataset", "seed", "objective", *ABLATION_COLUMNS, "val_nll_change", "val_nll_q_change",
               "d_log_p_allowed"]
    frame = pd.DataFrame(rows, columns=columns)
    cell = {c: i for i, c in enumerate(ablation_cells(p))}
    arm = {o: i for i, o in enumerate(arms)}
    frame["_order"] = [cell[(d, s)] * len(arm) + arm[o] for d, s, o in zip(frame["dataset"], frame["seed"],
                                                                          frame["objective"])]
    frame = frame.sort_values(["_order", "round"], kind="stable").drop(columns="_order").reset_index(drop=True)
    return frame, timings


def method_name(f: str, p: DispatParams) -> str:
    """Method of a run label: "dispat" (default f), "dispat_kl", "dispat_critic" (default f, option B)."""
    if is_critic(f):
        return "dispat_critic" if f_of(f) == p.self_play.f else f"dispat_critic_{f_of(f)}"
    return "dispat" if f == p.self_play.f else f"dispat_{f}"


def scores(corpus: pd.DataFrame, tok: dict, sft: pd.DataFrame, matched: pd.DataFrame, dispat: pd.DataFrame,
           p: DispatParams, seed_for: SeedFor, resolve: Callable[[str], str], workers: int, log: Log,
           device: str = "cpu") -> tuple[pd.DataFrame, list[dict]]:
    """One row per (cell, method, val/test row): the anomaly score; DiSPaT rows carry the
    per-column attribution (JSON). The LMs share the permutation seed of the cell."""
    jobs = []
    for d, s in cells(p):
        states = {"anollm_sft": resolve(_ref(sft, d, s)), "anollm_matched": resolve(_ref(matched, d, s))}
        for f in sorted(set(dispat.loc[(dispat["dataset"] == d) & (dispat["seed"] == s), "f"])):
            states[method_name(f, p)] = resolve(_ref(dispat, d, s, f=f))
        jobs.append({"params": p, "dataset": d, "seed": s, "threads": p.torch_threads, "device": device,
                     **_cell_inputs(corpus, tok, d, s), "states": states, "perm_seed": seed_for("score_orders", d, s),
                     "baseline_seed": seed_for("baselines", d, s)})
    results = run_jobs(score_job, jobs, workers, log, "scores")
    frames, timings = [], []
    for job, r in zip(jobs, results):
        cell = corpus_cell(corpus, job["dataset"], job["seed"])
        n_val = len(job["val"])
        split = ["val"] * n_val + ["test"] * len(job["test"])
        labels = np.r_[np.zeros(n_val, int), cell["labels"]]
        types = np.r_[np.array(["normal"] * n_val), cell["types"]]
        row_id = np.r_[cell["val_row_id"], cell["row_id"]]
        names = cell["schema"].names
        for method, values in r["scores"].items():
            attr = ([json.dumps({n: round(float(a), 6) for n, a in zip(names, row)}) for row in r["attributions"]]
                    if method == "dispat" and r["attributions"] is not None else [""] * len(values))
            frames.append(pd.DataFrame({"dataset": job["dataset"], "seed": job["seed"], "method": method,
                                        "split": split, "row_id": row_id, "label": labels, "anomaly_type": types,
                                        "score": np.asarray(values, float), "attribution": attr}))
        for method, sec in r["seconds"].items():
            timings.append({"asset": "scores", "dataset": job["dataset"], "seed": job["seed"], "method": method,
                            "seconds": sec, "rows": len(split)})
    return pd.concat(frames, ignore_index=True), timings


def alignment(corpus: pd.DataFrame, tok: dict, sft: pd.DataFrame, dispat: pd.DataFrame, pseudo: pd.DataFrame,
              p: DispatParams, seed_for: SeedFor, resolve: Callable[[str], str], workers: int, log: Log,
              device: str = "cpu") -> pd.DataFrame:
    """Per cell: C2ST AUC (validation rows vs samples) for θ0 and θ_T, and the validation NLL of
    θ0 and θ_T (no-collapse)."""
    jobs = []
    for d, s in cells(p):
        inputs = _cell_inputs(corpus, tok, d, s)
        _, round0 = _round0(pseudo, d, s)
        jobs.append({"params": p, "dataset": d, "seed": s, "threads": p.torch_threads, "device": device, **inputs,
                     "state": resolve(_ref(dispat, d, s, f=p.self_play.f)), "round0": round0,
                     "n": min(p.c2st_rows, len(inputs["val"])), "sample_seed": seed_for("c2st_samples", d, s),
                     "c2st_seed": seed_for("c2st", d, s)})
    results = run_jobs(alignment_job, jobs, workers, log, "alignment")
    rows = []
    for job, r in zip(jobs, results):
        d, s = job["dataset"], job["seed"]
        recs = dispat[(dispat["dataset"] == d) & (dispat["seed"] == s) & (dispat["f"] == p.self_play.f)]
        theta0_nll = float(sft.loc[(sft["dataset"] == d) & (sft["seed"] == s), "val_nll"].iloc[0])
        accepted = recs[recs["accepted"]]
        final_nll = float(accepted["val_nll_after"].iloc[-1]) if len(accepted) else theta0_nll
        rows.append({"dataset": d, "seed": s, **r, "val_nll_theta0": theta0_nll, "val_nll_thetaT": final_nll,
                     "rounds_accepted": int(len(accepted)), "c2st_rows": job["n"]})
    return pd.DataFrame(rows)


def thresholds(score_frame: pd.DataFrame, p: DispatParams) -> pd.DataFrame:
    """Per (cell, method): the calibrated threshold at α, its validation FPR, and the test
    AUROC, AUPRC, F1 and test-normal FPR; AUROC on each anomaly type vs all test normals."""
    from sklearn.metrics import roc_auc_score

    from assets.dispat.method import calibrated_threshold, detection_metrics

    rows = []
    for (d, s, m), g in score_frame.groupby(["dataset", "seed", "method"], sort=True):
        val = g[g["split"] == "val"]["score"].to_numpy()
        test = g[g["split"] == "test"]
        thr = calibrated_threshold(val, p.alpha)
        metrics = detection_metrics(test["score"].to_numpy(), test["label"].to_numpy(), thr)
        row = {"dataset": d, "seed": int(s), "method": m, "threshold": thr, "alpha": p.alpha,
               "val_fpr": float((val > thr).mean()), "n_val": int(len(val)), **metrics}
        normal = test[test["label"] == 0]["score"].to_numpy()
        for kind in sorted(set(test["anomaly_type"]) - {"normal"}):
            anom = test[test["anomaly_type"] == kind]["score"].to_numpy()
            row[f"auroc_{kind}"] = float(roc_auc_score(np.r_[np.zeros(len(normal)), np.ones(len(anom))],
                                                       np.r_[normal, anom]))
        rows.append(row)
    return pd.DataFrame(rows)


def speed_benchmark(corpus: pd.DataFrame, tok: dict, dispat: pd.DataFrame, p: DispatParams,
                    resolve: Callable[[str], str], device: str = "cpu") -> pd.DataFrame:
    """Wall clock on one thread (a run record): AnoLLM scoring rows/s (n_permutations orders, the
    LM on `device`) vs IForest fit + score rows/s on the same rows (CPU); greedy sampling rows/s
    with vs without the KV cache (same rows: asserted equal)."""
    from assets.dispat.baselines import Featurizer, fit_score
    from assets.dispat.lm import TokenRows, sample_rows, score_rows

    torch_worker(1)
    d, s = cells(p)[0]
    inputs = _cell_inputs(corpus, tok, d, s)
    vocab = S.Vocab.from_json(inputs["vocab"])
    model = _model(p, vocab, _load_state(resolve(_ref(dispat, d, s, f=p.self_play.f))), device=device)
    rows = (inputs["test"] * (1 + p.bench_rows // max(1, len(inputs["test"]))))[:p.bench_rows]
    started = time.perf_counter()
    score_rows(model, TokenRows(rows, vocab), p.n_permutations, 0)
    lm_seconds = time.perf_counter() - started
    feat = Featurizer(vocab.schema, inputs["train"], p.baselines.text_features)
    started = time.perf_counter()
    fit_score("iforest", feat.transform(inputs["train"]), feat.transform(rows), 0)
    if_seconds = time.perf_counter() - started
    neg = negatives(inputs["train"], vocab.schema)
    train_rows = TokenRows(inputs["train"], vocab)
    n = min(64, p.bench_rows)
    timed = {}
    for cached in (True, False):
        started = time.perf_counter()
        parsed, ids = sample_rows(model, vocab, train_rows, n, np.random.default_rng(0), neg, greedy=True,
                                  use_cache=cached)
        timed[cached] = (time.perf_counter() - started, ids)
    same = timed[True][1] == timed[False][1]
    return pd.DataFrame([
        {"metric": "scoring_rows_per_s_anollm", "value": len(rows) / lm_seconds},
        {"metric": "scoring_rows_per_s_iforest_fit_and_score", "value": len(rows) / if_seconds},
        {"metric": "scoring_ratio_iforest_over_lm", "value": (len(rows) / if_seconds) / (len(rows) / lm_seconds)},
        {"metric": "sampling_rows_per_s_kv_cache", "value": n / timed[True][0]},
        {"metric": "sampling_rows_per_s_no_cache", "value": n / timed[False][0]},
        {"metric": "kv_cache_speedup", "value": timed[False][0] / timed[True][0]},
        {"metric": "kv_cache_same_rows", "value": float(same)}])
