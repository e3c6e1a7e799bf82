"""limix data-quality predicates: pure functions returning the problems found (empty = pass).
definitions.py turns each into a blocking Dagster check (assets/common/checks.gate); tests
call them directly on corrupted inputs."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.findings import Finding, finding
from assets.common.pfn.train import finite_state, relative_loss_drop
from assets.limix import runs
from assets.limix.params import LimiXParams

MIN_SPREAD_DECADES = 3.0         # column log10-scale spread of a task …
MIN_SPREAD_SHARE = 0.30          # … reached in ≥ 30 % of the tasks (the exponent gate is exercised)
MAX_LABEL_CORRELATION = 0.99     # no column with |r| > 0.99 to the label (leakage)
# the packaged row counts (sklearn 1.9.1 and statsmodels 0.15.0 wheels)
PACKAGED_ROWS = {"breast_cancer": 569, "wine": 178, "iris": 150, "digits_3v8": 357, "digits_1v7": 361,
                 "digits_4v9": 361, "fair": 6366, "star98": 303, "anes96": 944}


def _bank(value: dict) -> list[dict]:
    from resources.artifacts import load_checkpoint

    state, _ = load_checkpoint(value["bank"])
    return runs.unpack({k: v.numpy() for k, v in state.items()}, value["meta"])


# ------------------------------------------------------------------------------ prior tasks
def prior_tasks_problems(batches: list[dict], stream: str) -> list[str]:
    """Every class in context and query, NaN only where the missing mask says, the column
    scales spanning ≥ 3 decades in ≥ 30 % of the tasks, a stream other than pretraining."""
    problems = []
    if stream == "pretrain":
        problems.append("the held-out tasks come from the pretraining stream")
    spreads = []
    for i, b in enumerate(batches):
        n, c = b["n_context"], b["n_classes"]
        for t in range(len(b["y"])):
            for part, labels in (("context", b["y"][t, :n]), ("query", b["y"][t, n:])):
                if len(np.unique(labels)) < max(2, c):
                    problems.append(f"batch {i} task {t}: {len(np.unique(labels))} of {c} classes in the {part}")
        nan = np.isnan(b["x"])
        if "missing" in b and not np.array_equal(nan, b["missing"].astype(bool)):
            problems.append(f"batch {i}: {int((nan != b['missing']).sum())} cells NaN outside (or masked but not "
                            "NaN in) the declared missing mask")
        if np.isinf(b["x"]).any():
            problems.append(f"batch {i}: infinite cells")
        spreads += list(np.asarray(b.get("log10_spread", np.zeros(len(b["y"])))))
    share = float(np.mean(np.asarray(spreads) >= MIN_SPREAD_DECADES)) if spreads else 0.0
    if share < MIN_SPREAD_SHARE:
        problems.append(f"only {share:.0%} of tasks have column scales spanning ≥ {MIN_SPREAD_DECADES:g} decades "
                        f"(need ≥ {MIN_SPREAD_SHARE:.0%})")
    return problems


def prior_tasks(value: dict) -> Finding:
    batches = _bank(value)
    tasks = sum(len(b["y"]) for b in batches)
    return finding(prior_tasks_problems(batches, value["stream"]),
                   ok=f"{tasks} tasks: every class in context and query, NaN only where masked, "
                      f"{value['spread_share']:.0%} span ≥ {MIN_SPREAD_DECADES:g} decades", tasks=tasks)


# ------------------------------------------------------------------------------ real suite
def real_suite_problems(tasks: list[dict]) -> list[str]:
    """Row counts as packaged, no column with |r| > 0.99 to the label, context and query
    disjoint (row indices) and holding every class, no NaN."""
    problems = []
    for t in tasks:
        name, n = t["name"], t["n_context"]
        if PACKAGED_ROWS.get(name) != t["rows"]:
            problems.append(f"{name}: {t['rows']} rows, the package holds {PACKAGED_ROWS.get(name)}")
        index = np.asarray(t["index"])
        if len(set(index[:n]) & set(index[n:])):
            problems.append(f"{name} split {t['split']}: {len(set(index[:n]) & set(index[n:]))} rows in both "
                            "context and query")
        if index.max() >= t["rows"]:
            problems.append(f"{name} split {t['split']}: a row index beyond the table")
        x, y = t["x"][0], t["y"][0]
        if np.isnan(x).any():
            problems.append(f"{name}: NaN cells in a packaged table")
        for part, labels in (("context", y[:n]), ("query", y[n:])):
            if len(np.unique(labels)) < t["n_classes"]:
                problems.append(f"{name} split {t['split']}: {len(np.unique(labels))} of {t['n_classes']} classes "
                                f"in the {part}")
        for j in range(x.shape[1]):
            col = x[:, j]
            if col.std() > 0 and y.std() > 0:
                r = abs(float(np.corrcoef(col, y)[0, 1]))
                if r > MAX_LABEL_CORRELATION:
                    problems.append(f"{name}: column {j} has |r| = {r:.3f} with the label (leakage)")
    return sorted(set(problems))


def real_suite(value: dict) -> Finding:
    tasks = _bank(value)
    names = sorted({t["name"] for t in tasks})
    return finding(real_suite_problems(tasks), ok=f"{len(tasks)} tasks over {len(names)} packaged tables: row "
                   "counts as packaged, no leaking column, disjoint context/query", tasks=len(tasks))


# ------------------------------------------------------------------------------ checkpoints
def checkpoints_load_back(value: pd.DataFrame, params: LimiXParams) -> Finding:
    """Every variant × seed present; each reloads (weights_only, md5) with finite weights; SNF
    and FSN of one embedding have the same parameter count."""
    from resources.artifacts import load_checkpoint

    problems = []
    expected = {(v, int(s)) for v in params.variants for s in params.seeds}
    present = {(r.variant, int(r.seed)) for r in value.itertuples()}
    if expected - present:
        problems.append(f"missing checkpoints {sorted(expected - present)}")
    for r in value.itertuples():
        try:
            state, _ = load_checkpoint(r.checkpoint)
        except Exception as err:          # noqa: BLE001 — the check reports any load failure
            problems.append(f"{r.variant} seed {r.seed}: does not load ({err})")
            continue
        bad = finite_state(state)
        if bad:
            problems.append(f"{r.variant} seed {r.seed}: non-finite tensors {bad[:3]}")
    counts = value.groupby("variant")["params"].first().to_dict()
    for v, c in counts.items():
        twin = v.replace("_snf", "_fsn") if v.endswith("_snf") else None
        if twin in counts and counts[twin] != c:
            problems.append(f"{v} has {c} parameters, {twin} {counts[twin]}")
    return finding(problems, ok=f"{len(value)} checkpoints reload with finite weights")


def learned_gate_problems(value: pd.DataFrame, params: LimiXParams) -> list[str]:
    """The `learned` flag of every checkpoint is the rule (AUC ≥ gate_min_auc and loss drop ≥
    gate_min_loss_drop) on its own numbers, the drop recomputed from the stored loss curve."""
    from resources.artifacts import load_checkpoint

    problems = []
    for r in value.itertuples():
        _, sidecar = load_checkpoint(r.checkpoint)
        curve = sidecar.get("loss_curve") or []
        drop = relative_loss_drop(curve, max(1, int(runs.LOSS_WINDOW_FRACTION * len(curve)))) if curve else np.nan
        if not np.isclose(drop, r.loss_drop, atol=1e-4):
            problems.append(f"{r.variant} seed {r.seed}: loss drop {r.loss_drop:.4f} but the curve gives {drop:.4f}")
        rule = runs.learned(r.val_auc, drop, params.gate_min_auc, params.gate_min_loss_drop)
        if bool(r.learned) != rule:
            problems.append(f"{r.variant} seed {r.seed}: flagged learned={bool(r.learned)}, the rule says {rule}")
    return problems


def learned_gate(value: pd.DataFrame, params: LimiXParams) -> Finding:
    ok = value[value["learned"]]
    return finding(learned_gate_problems(value, params),
                   ok=f"{len(ok)} of {len(value)} checkpoints learned (AUC ≥ {params.gate_min_auc}, loss "
                      f"−{params.gate_min_loss_drop:.0%}); only those reach predictions", learned=len(ok))


def all_learned(value: pd.DataFrame, params: LimiXParams) -> Finding:
    """Warning: which checkpoints did not learn (their claims are inconclusive by premise)."""
    bad = value[~value["learned"]]
    return finding([f"{r.variant} seed {r.seed}: AUC {r.val_auc:.3f}, loss drop {r.loss_drop:.1%}"
                    for r in bad.itertuples()], ok="every checkpoint learned")


# ------------------------------------------------------------------------------ diagnostics
def ranks_complete(value: dict, params: LimiXParams) -> Finding:
    ranks = pd.DataFrame(value["ranks"])
    problems = []
    expected = {(v, int(s)) for v in params.variants for s in params.seeds}
    got = {(r.variant, int(r.seed)) for r in ranks.itertuples()} if len(ranks) else set()
    if expected - got:
        problems.append(f"no ranks for {sorted(expected - got)}")
    if len(ranks) and ((ranks["rank95"] < 1) | (ranks["rank95"] > ranks["rank99"])).any():
        problems.append("a Rank@95 below 1 or above its Rank@99")
    return finding(problems, ok=f"Rank@95/99 for {len(got)} checkpoints")


def attention_valid(value: pd.DataFrame, params: LimiXParams) -> Finding:
    problems = []
    if value.empty:
        problems.append("no calibration task has both parent and non-parent tokens")
    else:
        total = value["parent"] + value["other"] + value["own"]
        if not np.allclose(total, 1.0, atol=1e-4):
            problems.append(f"attention masses sum to {total.min():.4f}–{total.max():.4f}, not 1")
    return finding(problems, ok=f"{len(value)} (checkpoint, task) attention rows, masses sum to 1")


def _proba_problems(frame: pd.DataFrame, label: str) -> list[str]:
    problems = []
    if frame.empty:
        return problems
    p = np.array([np.asarray(q, dtype=float)[:c] for q, c in zip(frame["proba"], frame["n_classes"])], dtype=object)
    sums = np.array([q.sum() for q in p])
    if not all(np.isfinite(q).all() and (q >= 0).all() for q in p):
        problems.append(f"{label}: non-finite or negative probabilities")
    if not np.allclose(sums, 1.0, atol=1e-4):
        problems.append(f"{label}: probabilities sum to {sums.min():.4f}–{sums.max():.4f}")
    return problems


def predictions_valid(value: pd.DataFrame, checkpoints: pd.DataFrame, params: LimiXParams) -> Finding:
    """Only learned checkpoints predict, every learned one on every task; probabilities finite
    and summing to 1."""
    learned = {(r.variant, int(r.seed)) for r in checkpoints[checkpoints["learned"]].itertuples()}
    got = {(r.variant, int(r.seed)) for r in value[["variant", "seed"]].drop_duplicates().itertuples()}
    problems = []
    if got - learned:
        problems.append(f"unlearned checkpoints predicted: {sorted(got - learned)}")
    if learned - got:
        problems.append(f"learned checkpoints missing: {sorted(learned - got)}")
    if len(value):
        per = value.drop_duplicates(["variant", "seed", "suite", "task"]).groupby(["variant", "seed"]).size()
        if per.nunique() > 1:
            problems.append("checkpoints predicted different numbers of tasks")
    problems += _proba_problems(value, "predictions")
    return finding(problems, ok=f"{len(got)} learned checkpoints × {value['task'].nunique() if len(value) else 0} "
                   "tasks, probabilities valid")


def baselines_valid(value: pd.DataFrame, params: LimiXParams) -> Finding:
    problems = [f"no {m} rows" for m in params.baselines if m not in set(value["method"])]
    problems += _proba_problems(value, "baselines")
    return finding(problems, ok=f"{value['method'].nunique()} baselines, probabilities valid")
