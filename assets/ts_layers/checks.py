"""ts_layers data-quality predicates: pure functions returning the problems found (empty = pass).

definitions.py turns each into a blocking Dagster check (assets/common/checks.gate); tests call
them directly on corrupted inputs.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.findings import Finding, finding
from assets.ts_layers import data as D
from assets.ts_layers import method as M
from assets.ts_layers.params import TSLayersParams

MIN_TEST_WINDOWS = 10            # per real channel
MAX_PARAM_FRACTION = 0.30        # of the keep-τ model (issue: ≤ 0.30; paper 0.21)


def corpus_valid(frame: pd.DataFrame, params: TSLayersParams) -> Finding:
    """Synthetic corpus: the declared size, finite, non-constant series, both splits."""
    problems = []
    if len(frame) != params.synthetic.series:
        problems.append(f"{len(frame)} synthetic series, expected {params.synthetic.series}")
    lengths = frame["values"].map(len)
    if (lengths != params.synthetic.length).any():
        problems.append(f"series lengths {sorted(set(lengths))} ≠ {params.synthetic.length}")
    values = [np.asarray(v, float) for v in frame["values"]]
    bad = [int(s) for s, v in zip(frame["series_id"], values) if not np.isfinite(v).all()]
    if bad:
        problems.append(f"{len(bad)} synthetic series with NaN/inf (e.g. {bad[:5]})")
    flat = [int(s) for s, v in zip(frame["series_id"], values) if np.isfinite(v).all() and np.std(v) == 0]
    if flat:
        problems.append(f"{len(flat)} constant synthetic series (e.g. {flat[:5]})")
    if set(frame["split"]) != {"train", "val"}:
        problems.append(f"synthetic splits {sorted(set(frame['split']))} ≠ ['train', 'val']")
    return finding(problems, ok=f"{len(frame)} finite, non-constant series × {params.synthetic.length} steps")


def real_series_valid(frame: pd.DataFrame, params: TSLayersParams) -> Finding:
    """Every requested series present; per channel: finite values, a strictly increasing index,
    not constant, long enough for ≥ 10 test windows."""
    problems = []
    missing = sorted(set(params.series) - set(frame["task"]))
    if missing:
        problems.append(f"series missing: {missing}")
    for (task, channel), g in frame.groupby(["task", "channel"], sort=True):
        name = f"{task}/{channel}"
        t = g["t"].to_numpy()
        x = g["value"].to_numpy(dtype=float)
        if not np.isfinite(x).all():
            problems.append(f"{name}: {int((~np.isfinite(x)).sum())} NaN/inf values")
            continue
        if len(t) > 1 and not (np.diff(t) > 0).all():
            first = int(np.flatnonzero(np.diff(t) <= 0)[0])
            problems.append(f"{name}: time index not strictly increasing "
                            f"(at row {first + 1}: {t[first]} → {t[first + 1]})")
        if np.std(x) == 0:
            problems.append(f"{name}: constant series")
        n_test = len(D.window_starts(len(x), params.lookback, params.horizon, params.patch, params.split,
                                     10 ** 9)["test"])
        if n_test < MIN_TEST_WINDOWS:
            problems.append(f"{name}: {len(x)} points give {n_test} test windows (need ≥ {MIN_TEST_WINDOWS})")
    return finding(problems, ok=f"{frame.groupby(['task', 'channel']).ngroups} channels finite, increasing, "
                   "non-constant, ≥ 10 test windows each")


def windows_valid(frame: pd.DataFrame) -> Finding:
    """Per channel: ≥ 10 test windows; test targets disjoint from every train / val target;
    calibration windows only among train windows; RevIN std > 0 everywhere."""
    problems = []
    real = frame[frame["task"] != "synthetic"]
    for (task, channel), g in real.groupby(["task", "channel"], sort=True):
        name = f"{task}/{channel}"
        test = g[g["split"] == "test"]
        if len(test) < MIN_TEST_WINDOWS:
            problems.append(f"{name}: {len(test)} test windows (need ≥ {MIN_TEST_WINDOWS})")
        fit = g[g["split"].isin(["train", "val"])]
        if len(test) and len(fit) and fit["target_end"].max() > test["target_start"].min():
            problems.append(f"{name}: test targets start at t = {int(test['target_start'].min())} but a train/val "
                            f"target reaches t = {int(fit['target_end'].max()) - 1}")
        train, val = g[g["split"] == "train"], g[g["split"] == "val"]
        if len(train) and len(val) and train["target_end"].max() > val["target_start"].min():
            problems.append(f"{name}: train targets overlap val targets")
    leaked = frame[frame["calibration"] & (frame["split"] != "train")]
    if len(leaked):
        problems.append(f"{len(leaked)} calibration windows outside the train split "
                        f"({leaked[['task', 'split']].value_counts().to_dict()})")
    flat = frame[~(frame["revin_std"] > 0)]
    if len(flat):
        examples = flat[["task", "channel", "start"]].head(3).to_dict("records")
        problems.append(f"{len(flat)} windows with RevIN std ≤ 0 (e.g. {examples})")
    if not frame["calibration"].any():
        problems.append("no calibration windows")
    return finding(problems, ok=f"{len(frame)} windows; test targets disjoint; {int(frame['calibration'].sum())} "
                   "calibration windows ⊆ train; RevIN std > 0")


def text_backbone_valid(frame: pd.DataFrame) -> Finding:
    """The char LM reloads with finite weights and learned (held-out loss below uniform)."""
    from resources.artifacts import load_checkpoint

    problems = []
    for r in frame.itertuples():
        state, _ = load_checkpoint(r.checkpoint)
        if not all(np.isfinite(v.numpy()).all() for v in state.values()):
            problems.append(f"seed {r.seed}: non-finite weights")
        if not (np.isfinite(r.heldout_loss) and r.heldout_loss < r.uniform_loss):
            problems.append(f"seed {r.seed}: held-out loss {r.heldout_loss:.3f} not below uniform {r.uniform_loss:.3f}")
    return finding(problems, ok=f"{len(frame)} text LMs reload, finite, held-out loss < uniform")


def checkpoints_valid(frame: pd.DataFrame, params: TSLayersParams) -> Finding:
    """Every family × depth × seed present; reloads (weights_only, md5) with finite weights;
    finite losses; val MSE below the last-value naive forecast's."""
    from resources.artifacts import load_checkpoint

    problems = []
    expected = {(f, d, s) for f, d in [("tsfm", d) for d in params.depths] + [("llm4ts", params.llm4ts.depth)]
                for s in params.seeds}
    got = {(r.family, int(r.depth), int(r.seed)) for r in frame.itertuples()}
    if expected - got:
        problems.append(f"missing checkpoints {sorted(expected - got)}")
    for r in frame.itertuples():
        name = f"{r.family}-{r.depth} seed {r.seed}"
        state, _ = load_checkpoint(r.checkpoint)
        if not all(np.isfinite(v.numpy()).all() for v in state.values()):
            problems.append(f"{name}: non-finite weights")
        if not np.isfinite([r.val_mse, r.synthetic_val_loss, r.final_loss]).all():
            problems.append(f"{name}: non-finite losses")
        elif not r.val_mse < r.naive_val_mse:
            problems.append(f"{name}: val MSE {r.val_mse:.4f} does not beat last-value naive {r.naive_val_mse:.4f}")
    return finding(problems, ok=f"{len(frame)} checkpoints finite, each beats last-value naive on val")


def importance_valid(frame: pd.DataFrame, checkpoints: pd.DataFrame, params: TSLayersParams) -> Finding:
    """Finite scores; one score per layer (importance length = depth) for every pruned model × seed."""
    problems = []
    cols = ["s", "a", "importance", "bi", "removal_drop"]
    if not np.isfinite(frame[cols].to_numpy(dtype=float)).all():
        problems.append("non-finite importance scores")
    for (family, depth, seed), g in frame.groupby(["family", "depth", "seed"]):
        if sorted(g["layer"]) != list(range(1, int(depth) + 1)):
            problems.append(f"{family}-{depth} seed {seed}: {len(g)} importance scores for {depth} layers")
    wanted = {(f, int(d), int(s)) for f, d in params.prune_models for s in params.seeds}
    got = set(zip(frame["family"], frame["depth"].astype(int), frame["seed"].astype(int)))
    if wanted - got:
        problems.append(f"no importance for {sorted(wanted - got)}")
    return finding(problems, ok=f"{frame.groupby(['family', 'depth', 'seed']).ngroups} models scored, finite, "
                   "one score per layer")


def keep_rule_valid(value: dict) -> Finding:
    """τ in (0, 1]; valid keep lists (non-empty, increasing, in range); the method keeps layer 1;
    every method and baseline of a model keeps the same k; the keep-τ param fraction ≤ 0.30."""
    problems = []
    tau = value.get("tau")
    if not (isinstance(tau, (int, float)) and 0 < tau <= 1):
        problems.append(f"τ = {tau!r} is outside (0, 1]")
    for m in value["models"]:
        name = f"{m['family']}-{m['depth']} seed {m['seed']}"
        if m["n_importance"] != m["depth"]:
            problems.append(f"{name}: {m['n_importance']} importance scores for {m['depth']} layers")
        for method, keep in m["keeps"].items():
            problems += [f"{name}/{method}: {p}" for p in M.validate_keep(keep, m["depth"])]
        sizes = {method: len(keep) for method, keep in m["keeps"].items()}
        if len(set(sizes.values())) != 1 or m["k"] not in sizes.values():
            problems.append(f"{name}: keep sizes differ {sizes} (k = {m['k']})")
        if 0 not in m["keeps"]["keep_tau"]:
            problems.append(f"{name}: the method drops layer 1 ({m['keeps']['keep_tau']})")
        fraction = m["param_fraction"]["keep_tau"]
        if not fraction <= MAX_PARAM_FRACTION:
            problems.append(f"{name}: param fraction {fraction:.3f} > {MAX_PARAM_FRACTION}")
    return finding(problems, ok=f"{len(value['models'])} models: same k, valid lists, layer 1 kept, "
                   f"param fraction ≤ {MAX_PARAM_FRACTION}")


def pruned_valid(frame: pd.DataFrame, keep_rule: dict, params: TSLayersParams) -> Finding:
    """Equal realignment budget (every pruned model and the full continuation: realign.steps;
    the scratch model: pretraining + realignment steps); every method present; reload finite."""
    from resources.artifacts import load_checkpoint

    problems = []
    for m in keep_rule["models"]:
        g = frame[(frame["family"] == m["family"]) & (frame["depth"] == m["depth"]) & (frame["seed"] == m["seed"])]
        expected = {"full_continued", *m["keeps"]}
        if set(g["method"]) != expected:
            problems.append(f"{m['family']}-{m['depth']} seed {m['seed']}: methods {sorted(set(g['method']))} "
                            f"≠ {sorted(expected)}")
    for r in frame.itertuples():
        budget = params.train.steps + params.realign.steps if r.method == "scratch" else params.realign.steps
        if r.steps != budget:
            problems.append(f"{r.family}-{r.depth} seed {r.seed}/{r.method}: {r.steps} steps, budget {budget}")
        state, _ = load_checkpoint(r.checkpoint)
        if not all(np.isfinite(v.numpy()).all() for v in state.values()) or not np.isfinite(r.val_mse):
            problems.append(f"{r.family}-{r.depth} seed {r.seed}/{r.method}: non-finite weights or val MSE")
    return finding(problems, ok=f"{len(frame)} realigned models, equal budgets, finite")


def eval_complete(frame: pd.DataFrame, pruned_checkpoints: pd.DataFrame, checkpoints: pd.DataFrame) -> Finding:
    """Every model scored on the same test windows; finite MSE."""
    problems = []
    if not np.isfinite(frame["mse"].to_numpy(dtype=float)).all():
        problems.append("non-finite test MSE")
    neural = frame[frame["family"] != "classical"]
    counts = neural.groupby(["family", "depth", "seed", "method"]).size()
    if counts.nunique() != 1:
        problems.append(f"models scored on different window counts: {sorted(set(counts))}")
    expected = len(checkpoints) + len(pruned_checkpoints) + int((pruned_checkpoints["method"] == "keep_tau").sum())
    if len(counts) != expected:
        problems.append(f"{len(counts)} models scored, expected {expected}")
    return finding(problems, ok=f"{len(counts)} models × {int(counts.iloc[0]) if len(counts) else 0} test windows")
