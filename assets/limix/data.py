"""LimiX data — numpy / pandas, no Dagster.

Prior [I] (spec "Pretraining prior"): SCMs from assets/common/pfn/scm.py (MLP 70 % / tree 30 %
mechanisms, mixed noise); per task, D observed nodes and a target node with ≥ 1 parent,
discretised into C classes at random quantile cut-points (every class ≥ 10 % of the rows);
about half the observed nodes are the target's parents or children [I: without that, most tasks
of a 10–16-node DAG carry almost no signal: logistic regression's mean AUC was 0.65];
observed columns get a random affine map and a log-uniform scale in [1e-3, 1e4], some become
exp() or rounded integers, then 0–20 % MCAR missing cells. A batch shares (D, C, rows,
n_context) and is a pure function of (seed, stream, step) through `stream_rng`.

Real suite (packaged with sklearn / statsmodels, offline): breast_cancer, wine, iris, digits
2-class pairs, statsmodels fair (affairs > 0), star98 (NABOVE share > median), anes96 (vote);
a seeded ≤ 8-column subset of wider tables; `splits` seeded context/query splits with ≤
max_context context rows, both holding every class.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from assets.common.pfn import scm
from assets.common.pfn.train import stream_rng


@dataclass(frozen=True)
class PriorConfig:
    features: tuple[int, int] = (2, 8)
    classes: tuple[int, int] = (2, 4)
    rows: tuple[int, int] = (32, 64)
    context_fraction: tuple[float, float] = (0.5, 0.8)
    nodes: tuple[int, int] = (10, 16)
    missing: tuple[float, float] = (0.0, 0.2)
    log10_scale: tuple[float, float] = (-3.0, 4.0)
    exp_prob: float = 0.1
    round_prob: float = 0.15

    def scm_config(self) -> scm.SCMPriorConfig:
        return scm.SCMPriorConfig(nodes=self.nodes, edge_prob=(0.2, 0.6), mechanisms=("mlp", "tree"),
                                  mechanism_probs=(0.7, 0.3), activations=("tanh", "relu", "sin", "square", "abs",
                                                                           "sigmoid"),
                                  noise_kinds=("normal", "uniform", "student_t"), noise_sd=(0.1, 0.5))


def _cut(values: np.ndarray, classes: int, rng: np.random.Generator) -> np.ndarray:
    """Labels 0..classes−1 at random quantile cut-points, each class ≥ 10 % of the rows."""
    while True:
        q = np.sort(rng.uniform(0.1, 0.9, classes - 1))
        if classes == 2 or np.diff(np.r_[0.0, q, 1.0]).min() >= 0.1:
            break
    return np.searchsorted(np.quantile(values, q), values, side="right")


def prior_batch(config: PriorConfig, rng: np.random.Generator, tasks: int) -> dict:
    """`tasks` tasks sharing shape: x (B, R, D) float32 (NaN where missing), y (B, R) int64,
    n_context, n_classes, missing (B, R, D) bool, parents (B, D) bool (observed column is a
    parent of the target), log10_spread (B,) decades between the columns' scales."""
    d = int(rng.integers(config.features[0], config.features[1] + 1))
    c = int(rng.integers(config.classes[0], config.classes[1] + 1))
    r = int(rng.integers(config.rows[0], config.rows[1] + 1))
    n_ctx = int(round(r * rng.uniform(*config.context_fraction)))
    batch = scm.sample_scms(config.scm_config(), rng, tasks)
    values = scm.sample(batch, scm.draw_noise(batch, rng, r))
    x = np.zeros((tasks, r, d))
    y = np.zeros((tasks, r), dtype=np.int64)
    parents = np.zeros((tasks, d), dtype=bool)
    spread = np.zeros(tasks)
    for b in range(tasks):
        n = int(batch.n_nodes[b])
        with_parents = [i for i in range(n) if batch.adjacency[b, :, i].any()]
        target = int(rng.choice(with_parents)) if with_parents else n - 1
        # about half the observed columns from the target's parents and children (≥ 1 when it has any)
        near = [i for i in range(n) if i != target and (batch.adjacency[b, i, target] or batch.adjacency[b, target, i])]
        k = min(len(near), max(1, d // 2))
        picked = list(rng.choice(near, size=k, replace=False)) if k else []
        rest = [i for i in range(n) if i != target and i not in picked]
        cols = rng.permutation(np.r_[picked, rng.choice(rest, size=d - k, replace=False)].astype(np.int64))
        parents[b] = batch.adjacency[b, cols, target]
        # every class in context and query: redraw the split's permutation until it holds
        label = _cut(values[b, :, target], c, rng)
        for _ in range(50):
            perm = rng.permutation(r)
            if len(np.unique(label[perm[:n_ctx]])) == c and len(np.unique(label[perm[n_ctx:]])) == c:
                break
        y[b] = label[perm]
        raw = values[b][perm][:, cols]
        scale = 10.0 ** rng.uniform(*config.log10_scale, size=d)
        shift = rng.normal(0, 2, size=d) * scale
        raw = raw * scale + shift
        expo = rng.random(d) < config.exp_prob
        raw[:, expo] = np.exp(np.clip(values[b][perm][:, cols][:, expo], -20, 20)) * scale[expo]
        rounded = rng.random(d) < config.round_prob
        raw[:, rounded] = np.round(values[b][perm][:, cols][:, rounded] * 2)
        scales = np.log10(np.maximum(np.abs(raw).mean(0), 1e-12))
        spread[b] = scales.max() - scales.min()
        x[b] = raw
    rate = rng.uniform(*config.missing, size=(tasks, 1, 1))
    missing = rng.random(x.shape) < rate
    x = np.where(missing, np.nan, x)
    return {"x": x.astype(np.float32), "y": y, "n_context": n_ctx, "n_classes": c, "missing": missing,
            "parents": parents, "log10_spread": spread}


def to_torch(batch: dict) -> dict:
    out = dict(batch)
    out["x"], out["y"] = torch.from_numpy(batch["x"]), torch.from_numpy(batch["y"])
    return out


def prior_stream(config: PriorConfig, seed: int, stream: str, tasks: int):
    """step → a torch batch of `tasks` tasks from stream_rng(seed, stream, step)."""
    return lambda step: to_torch(prior_batch(config, stream_rng(seed, stream, step), tasks))


def held_out(config: PriorConfig, seed: int, stream: str, n_tasks: int, per_batch: int = 8) -> list[dict]:
    """n_tasks frozen tasks (batches of per_batch sharing a shape) on a stream disjoint from pretraining."""
    return [prior_stream(config, seed, stream, per_batch)(i) for i in range(-(-n_tasks // per_batch))]


# ---------------------------------------------------------------- the real suite

DIGIT_PAIRS = ((3, 8), (1, 7), (4, 9))


def _tables(seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """name → (X float (n, ≤ 8), y int) from the packaged files."""
    import statsmodels.api as sm
    from sklearn import datasets

    out = {}
    for name, loader in (("breast_cancer", datasets.load_breast_cancer), ("wine", datasets.load_wine),
                         ("iris", datasets.load_iris)):
        b = loader()
        out[name] = (np.asarray(b.data, float), np.asarray(b.target, int))
    digits = datasets.load_digits()
    for a, b in DIGIT_PAIRS:
        keep = np.isin(digits.target, (a, b))
        out[f"digits_{a}v{b}"] = (digits.data[keep].astype(float), (digits.target[keep] == b).astype(int))
    fair = sm.datasets.fair.load_pandas().data
    out["fair"] = (fair.drop(columns="affairs").to_numpy(float), (fair["affairs"] > 0).to_numpy(int))
    star = sm.datasets.star98.load_pandas().data
    share = star["NABOVE"] / (star["NABOVE"] + star["NBELOW"])
    out["star98"] = (star.drop(columns=["NABOVE", "NBELOW"]).to_numpy(float), (share > share.median()).to_numpy(int))
    anes = sm.datasets.anes96.load_pandas().data
    out["anes96"] = (anes.drop(columns="vote").to_numpy(float), anes["vote"].to_numpy(int))
    rng = np.random.default_rng(seed)
    for name, (x, y) in list(out.items()):
        informative = np.flatnonzero(x.std(0) > 0)
        if len(informative) > 8:
            cols = np.sort(rng.choice(informative, 8, replace=False))
            out[name] = (x[:, cols], y)
    return out


def real_suite(seed: int = 0, splits: int = 5, max_context: int = 48, max_query: int = 256) -> list[dict]:
    """One task per (table, split): x (1, R, D) float32 context rows first, y (1, R), n_context,
    n_classes, name, split, rows (the table's packaged row count), index (the rows' indices in the
    table: context first)."""
    tasks = []
    for name, (x, y) in _tables(seed).items():
        classes = np.unique(y)
        y = np.searchsorted(classes, y)
        for s in range(splits):
            rng = np.random.default_rng([seed, s, len(name)])
            for _ in range(100):
                perm = rng.permutation(len(y))
                ctx, qry = perm[:max_context], perm[max_context:max_context + max_query]
                if len(np.unique(y[ctx])) == len(classes) and len(np.unique(y[qry])) == len(classes):
                    break
            idx = np.r_[ctx, qry]
            tasks.append({"x": torch.from_numpy(x[idx][None].astype(np.float32)), "y": torch.from_numpy(y[idx][None]),
                          "n_context": len(ctx), "n_classes": len(classes), "name": name, "split": s,
                          "rows": len(y), "index": idx})
    return tasks
