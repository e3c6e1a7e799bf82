"""The interventional meta-prior of pfn_causal — numpy only, no Dagster.

An SCM from the shared prior (assets/common/pfn/scm.py) over d covariates and an outcome Y:
nodes 0..d−1 are the covariates in topological order, node d is Y (last, so a sink). The
covariates are shown to the model in a random column order (`perm[b, c]` is the node behind
column c), so a column's position says nothing about its place in the graph.

A task = one SCM, n observational rows D_obs (context) and Q interventional queries, each a
subset S of the covariate columns (a mask m ∈ {0,1}^d) with values v_S and one draw
y ~ M_do(X_S = v_S). Values are in standardised node units (the SCM is calibrated so every
node has mean ≈ 0 and sd ≈ 1 observationally). The model sees everything standardised on
D_obs: x' = (x − x̄_ctx) / s_ctx, y' = (y − ȳ_ctx) / s_y,ctx, also for the query values —
"units standardised on D_obs"; predictions are mapped back with the same affine maps.

Query distributions (`QuerySpec`): the pretraining meta-prior π_pre draws |S| from
size_probs (|S| = 1: 0.9, |S| = 2: 0.1, |S| ≥ 3 never), then S uniformly among subsets of
that size, and v_i ~ U(−r, r); fine-tuning specs add explicit subsets ("picks") drawn with
probability pick_frac, and PWF draws v ~ N(v*, τ²) around its target.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import comb

import numpy as np

from assets.common.pfn import scm as S


def all_subsets(d: int) -> np.ndarray:
    """Every non-empty subset of d columns as a bool mask (2^d − 1, d), by size then
    lexicographically: {1}, {2}, …, {1,2}, …, {1..d}."""
    rows = [np.isin(np.arange(d), c) for k in range(1, d + 1) for c in itertools.combinations(range(d), k)]
    return np.array(rows, dtype=bool)


def subset_name(mask: np.ndarray) -> str:
    """'x1+x3' for the mask with columns 0 and 2 (1-based names)."""
    return "+".join(f"x{i + 1}" for i in np.flatnonzero(mask))


def subset_key(mask: np.ndarray) -> int:
    """The subset as a bit field (column i ↦ bit i)."""
    return int(sum(1 << int(i) for i in np.flatnonzero(mask)))


def covered_subsets(size_probs: tuple[float, ...], d: int) -> np.ndarray:
    """Masks of the subsets with positive mass under a size prior (its support)."""
    masks = all_subsets(d)
    probs = np.asarray(size_probs)
    return masks[[probs[m.sum() - 1] > 0 for m in masks]]


def subset_probability(mask: np.ndarray, size_probs: tuple[float, ...]) -> float:
    """π(S) = π(|S|) / C(d, |S|) under a size prior."""
    k = int(np.sum(mask))
    return float(size_probs[k - 1]) / comb(len(mask), k)


@dataclass(frozen=True)
class CausalPrior:
    """The SCM prior and the task shape. context: n ~ U{lo..hi} observational rows per task
    (padded to hi); queries: Q queries per task."""

    scm: S.SCMPriorConfig
    n_covariates: int
    context: tuple[int, int]
    queries: int

    @property
    def n_nodes(self) -> int:
        return self.n_covariates + 1


@dataclass(frozen=True)
class QuerySpec:
    """A distribution over queries (module docstring). size_probs: π(|S| = k), k = 1..d;
    picks: explicit subsets (tuples of column indices) drawn with probability pick_frac,
    uniformly among themselves; value_center: PWF's v* (one value per column of its single
    pick; None: v_i ~ U(−value_range, value_range)); value_sd: PWF's τ."""

    size_probs: tuple[float, ...]
    picks: tuple[tuple[int, ...], ...] = ()
    pick_frac: float = 0.0
    value_center: tuple[float, ...] | None = None
    value_sd: float = 0.25
    value_range: float = 1.5

    def __post_init__(self):
        if not np.isclose(sum(self.size_probs), 1.0) and self.pick_frac < 1.0:
            raise ValueError(f"size_probs {self.size_probs} must sum to 1")
        if self.pick_frac > 0 and not self.picks:
            raise ValueError("pick_frac > 0 needs picks")
        if self.value_center is not None and (len(self.picks) != 1 or len(self.value_center) != len(self.picks[0])):
            raise ValueError("value_center needs exactly one pick with one value per column")

    def support(self, d: int) -> set[int]:
        """Subset keys this spec can draw."""
        keys = set() if self.pick_frac >= 1.0 else {subset_key(m) for m in covered_subsets(self.size_probs, d)}
        return keys | {subset_key(np.isin(np.arange(d), p)) for p in self.picks}


def draw_masks(spec: QuerySpec, rng: np.random.Generator, shape: tuple[int, ...], d: int) -> np.ndarray:
    """Subset masks (*shape, d) bool from spec."""
    n = int(np.prod(shape))
    sizes = rng.choice(np.arange(1, d + 1), size=n, p=np.asarray(spec.size_probs) / np.sum(spec.size_probs)) \
        if spec.pick_frac < 1.0 else np.ones(n, dtype=int)
    keys = rng.random((n, d))
    order = np.argsort(keys, axis=1)
    masks = np.zeros((n, d), dtype=bool)
    ranks = np.argsort(order, axis=1)
    masks[:] = ranks < sizes[:, None]                      # the `size` columns with the smallest keys
    if spec.pick_frac > 0:
        use = rng.random(n) < spec.pick_frac
        which = rng.integers(0, len(spec.picks), size=n)
        pick_masks = np.array([np.isin(np.arange(d), p) for p in spec.picks])
        masks = np.where(use[:, None], pick_masks[which], masks)
    return masks.reshape(*shape, d)


def draw_values(spec: QuerySpec, rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """Values (…, d), zero where the mask is False: U(−r, r), or PWF's N(v*, τ²) on its pick."""
    values = rng.uniform(-spec.value_range, spec.value_range, size=masks.shape)
    if spec.value_center is not None:
        center = np.zeros(masks.shape[-1])
        center[list(spec.picks[0])] = spec.value_center
        local = center + spec.value_sd * rng.standard_normal(masks.shape)
        pick = np.isin(np.arange(masks.shape[-1]), spec.picks[0])
        is_pick = np.all(masks == pick, axis=-1, keepdims=True)
        values = np.where(is_pick, local, values)
    return np.where(masks, values, 0.0)


@dataclass
class Contexts:
    """B SCMs with their observational data. perm (B, d): node of each covariate column;
    n (B,) valid rows; x (B, N, d), y (B, N) in node units (rows ≥ n are padding, zero);
    fingerprints: one per SCM."""

    scms: S.SCMBatch
    perm: np.ndarray
    n: np.ndarray
    x: np.ndarray
    y: np.ndarray
    fingerprints: list[str]

    @property
    def valid(self) -> np.ndarray:
        return np.arange(self.x.shape[1])[None, :] < self.n[:, None]


def draw_contexts(prior: CausalPrior, rng: np.random.Generator, batch: int, n: int | None = None) -> Contexts:
    """`batch` SCMs from the prior, calibrated, with n observational rows each (n ~ U{lo..hi}
    unless given; padded to max(hi, n)). The SCMs come from the first child of rng.spawn(2),
    so their parameters can be regenerated without the data (`stream_scm_fingerprints`)."""
    d = prior.n_covariates
    if prior.scm.nodes != (d + 1, d + 1):
        raise ValueError(f"the causal prior needs SCMs of exactly d + 1 = {d + 1} nodes, got {prior.scm.nodes}")
    scm_rng, rng = rng.spawn(2)
    raw = S.draw_scms(prior.scm, scm_rng, batch)
    fingerprints = raw.fingerprints()
    scms = S.calibrate(raw, rng, prior.scm.pilot_rows)
    perm = np.argsort(rng.random((batch, d)), axis=1)
    rows = int(n) if n is not None else int(prior.context[1])
    counts = np.full(batch, rows) if n is not None else rng.integers(prior.context[0], prior.context[1] + 1, batch)
    nodes = S.sample(scms, S.draw_noise(scms, rng, rows))
    x = np.take_along_axis(nodes[:, :, :d], np.broadcast_to(perm[:, None, :], (batch, rows, d)), axis=2)
    valid = np.arange(rows)[None, :] < counts[:, None]
    return Contexts(scms=scms, perm=perm, n=counts, x=np.where(valid[..., None], x, 0.0),
                    y=np.where(valid, nodes[:, :, d], 0.0), fingerprints=fingerprints)


def to_nodes(perm: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Column-space arrays (B, …, d) → node space (B, …, d + 1) (Y's slot zero / False)."""
    B, d = perm.shape
    out = np.zeros((*columns.shape[:-1], d + 1), dtype=columns.dtype)
    index = np.broadcast_to(perm.reshape(B, *([1] * (columns.ndim - 2)), d), columns.shape)
    np.put_along_axis(out, index, columns, axis=-1)
    return out


def draw_outcomes(ctx: Contexts, masks: np.ndarray, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw y ~ M_do(X_S = v) per query: masks / values (B, Q, d) in column space → (B, Q)."""
    noise = S.draw_noise(ctx.scms, rng, masks.shape[1])
    nodes = S.sample(ctx.scms, noise, to_nodes(ctx.perm, masks), to_nodes(ctx.perm, values))
    return nodes[:, :, -1]


def interventional_truth(ctx: Contexts, masks: np.ndarray, values: np.ndarray, draws: int,
                         rng: np.random.Generator, chunk: int = 400_000) -> dict[str, np.ndarray]:
    """Monte-Carlo truth with common noise: for every SCM b the same `draws` noise rows serve
    every query and the observational reference. The draws are draws/2 antithetic pairs
    (ε, −ε) of the Gaussian noise, and the standard error is that of the pair means (valid
    for any mechanism; much smaller when Y is near-linear in the noise). masks / values
    (B, Q, d) → mu, se (B, Q) (mean of Y and its standard error), obs_mean, obs_sd (B,) of Y
    observationally."""
    B, Q, d = masks.shape
    if draws % 2 or draws < 4:
        raise ValueError(f"draws must be even and ≥ 4 (antithetic pairs), got {draws}")
    half = draws // 2
    mu, se = np.zeros((B, Q)), np.zeros((B, Q))
    obs_mean, obs_sd = np.zeros(B), np.zeros(B)
    per = max(1, chunk // draws)
    for b in range(B):
        one = ctx.scms.take(np.array([b]))
        eps = S.draw_noise(one, rng, half)
        noise = np.concatenate([eps, -eps], axis=1)                                  # (1, M, V)
        y_obs = S.sample(one, noise)[0, :, -1]
        obs_mean[b], obs_sd[b] = y_obs.mean(), y_obs.std()
        nodes_mask = to_nodes(ctx.perm[b:b + 1], masks[b:b + 1])[0]                 # (Q, V)
        nodes_val = to_nodes(ctx.perm[b:b + 1], values[b:b + 1])[0]
        for start in range(0, Q, per):
            q = slice(start, min(Q, start + per))
            k = q.stop - q.start
            tiled = np.tile(noise, (1, k, 1))                                        # (1, k·M, V)
            m = np.repeat(nodes_mask[q], draws, axis=0)[None]
            v = np.repeat(nodes_val[q], draws, axis=0)[None]
            y = S.sample(one, tiled, m, v)[0, :, -1].reshape(k, draws)
            pairs = (y[:, :half] + y[:, half:]) / 2
            mu[b, q] = pairs.mean(axis=1)
            se[b, q] = pairs.std(axis=1, ddof=1) / np.sqrt(half)
    return {"mu": mu, "se": se, "obs_mean": obs_mean, "obs_sd": obs_sd}


def standardisation(x: np.ndarray, y: np.ndarray, valid: np.ndarray, floor: float = 1e-6
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x̄, s_x) (B, d) and (ȳ, s_y) (B,) over the valid context rows (population sd; an sd
    below `floor` becomes 1 so a constant column stays finite)."""
    w = valid.astype(float)
    count = np.maximum(w.sum(axis=1), 1.0)
    x_mean = (x * w[..., None]).sum(axis=1) / count[:, None]
    x_sd = np.sqrt((((x - x_mean[:, None, :]) ** 2) * w[..., None]).sum(axis=1) / count[:, None])
    y_mean = (y * w).sum(axis=1) / count
    y_sd = np.sqrt((((y - y_mean[:, None]) ** 2) * w).sum(axis=1) / count)
    return x_mean, np.where(x_sd < floor, 1.0, x_sd), y_mean, np.where(y_sd < floor, 1.0, y_sd)


@dataclass
class TaskBatch:
    """What the model reads, standardised on D_obs (module docstring). ctx_x (B, N, d),
    ctx_y (B, N), ctx_valid (B, N) bool; q_mask (B, Q, d) bool; q_val (B, Q, d) standardised,
    0 off the mask; y (B, Q) standardised targets (NaN when none were drawn); x_mean, x_sd
    (B, d), y_mean, y_sd (B,) to map back; fingerprints of the SCMs."""

    ctx_x: np.ndarray
    ctx_y: np.ndarray
    ctx_valid: np.ndarray
    q_mask: np.ndarray
    q_val: np.ndarray
    y: np.ndarray
    x_mean: np.ndarray
    x_sd: np.ndarray
    y_mean: np.ndarray
    y_sd: np.ndarray
    fingerprints: list[str]

    def to_raw(self, y_std: np.ndarray) -> np.ndarray:
        """Standardised outcome predictions (B, Q) → node units."""
        return self.y_mean[:, None] + self.y_sd[:, None] * y_std


def make_batch(x: np.ndarray, y: np.ndarray, valid: np.ndarray, masks: np.ndarray, values: np.ndarray,
               outcomes: np.ndarray | None = None, fingerprints: list[str] | None = None) -> TaskBatch:
    """Standardise raw context and queries (B, N, d) / (B, Q, d) on the valid context rows."""
    x_mean, x_sd, y_mean, y_sd = standardisation(x, y, valid)
    ctx_x = np.where(valid[..., None], (x - x_mean[:, None, :]) / x_sd[:, None, :], 0.0)
    ctx_y = np.where(valid, (y - y_mean[:, None]) / y_sd[:, None], 0.0)
    q_val = np.where(masks, (values - x_mean[:, None, :]) / x_sd[:, None, :], 0.0)
    target = np.full(masks.shape[:2], np.nan) if outcomes is None else (outcomes - y_mean[:, None]) / y_sd[:, None]
    return TaskBatch(ctx_x=ctx_x, ctx_y=ctx_y, ctx_valid=valid.copy(), q_mask=masks.astype(bool), q_val=q_val,
                     y=target, x_mean=x_mean, x_sd=x_sd, y_mean=y_mean, y_sd=y_sd,
                     fingerprints=list(fingerprints or []))


def build_tasks(prior: CausalPrior, spec: QuerySpec, rng: np.random.Generator, batch: int) -> TaskBatch:
    """One training batch: `batch` tasks with prior.queries queries each, from a fresh `rng`
    alone (children of rng.spawn(3): contexts, queries, outcomes)."""
    ctx_rng, query_rng, outcome_rng = rng.spawn(3)
    ctx = draw_contexts(prior, ctx_rng, batch)
    masks = draw_masks(spec, query_rng, (batch, prior.queries), prior.n_covariates)
    values = draw_values(spec, query_rng, masks)
    outcomes = draw_outcomes(ctx, masks, values, outcome_rng)
    return make_batch(ctx.x, ctx.y, ctx.valid, masks, values, outcomes, ctx.fingerprints)


def stream_scm_fingerprints(prior: CausalPrior, rng: np.random.Generator, batch: int) -> list[str]:
    """The fingerprints of the SCMs build_tasks would draw from this fresh Generator, without
    sampling any data."""
    ctx_rng = rng.spawn(3)[0]
    return S.draw_scms(prior.scm, ctx_rng.spawn(2)[0], batch).fingerprints()


def stream_masks(prior: CausalPrior, spec: QuerySpec, rng: np.random.Generator, batch: int) -> np.ndarray:
    """The query masks (batch, Q, d) build_tasks would draw from this fresh Generator."""
    return draw_masks(spec, rng.spawn(3)[1], (batch, prior.queries), prior.n_covariates)
