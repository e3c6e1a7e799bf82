"""Layer importance and layer selection (the spec's [I] reconstruction) and the pruning
baselines — numpy only, no Dagster.

Hidden states H_0 (patch embedding + positions) … H_L (after block L), each (n, d) with n =
calibration windows × tokens. For layer l = 1…L:

    s_l = Σ_{k=1..min(K, l)} α^{k−1} (1 − CKA_lin(H_l, H_{l−k})) / Σ_{k=1..min(K, l)} α^{k−1}
    a_l = mean over head pairs h < h′ of (1 − cos(A_l^h, A_l^{h′}))       (flattened maps, per window, averaged)
    I_l = mm(s)_l + λ · mm(a)_l                                          (mm = min-max over layers)

Keep the top τ fraction (k = max(1, ⌊τL + ½⌋) layers), layer 1 always, original order.
Baselines: ShortGPT block influence BI_l = 1 − mean_tokens cos(h_in, h_out) (keep the top-k BI),
bottom-k importance, drop the last layers (keep the first k), k random layers.
Layer numbers in returned keep lists are 0-based block indices (layer 1 = index 0).
"""
from __future__ import annotations

import numpy as np


def linear_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA of representations x (n, d1), y (n, d2) of the same n examples:
    ‖Yᶜᵀ Xᶜ‖²_F / (‖Xᶜᵀ Xᶜ‖_F ‖Yᶜᵀ Yᶜ‖_F) with column-centred Xᶜ, Yᶜ. In [0, 1]; 1 for x = y;
    invariant to orthogonal transforms and isotropic scaling of either side. 0/0 (a constant
    side) is defined as 1 when both are constant, else 0."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ValueError(f"CKA needs (n, d) arrays with equal n, got {x.shape} and {y.shape}")
    x = x - x.mean(axis=0)
    y = y - y.mean(axis=0)
    xx = np.linalg.norm(x.T @ x)
    yy = np.linalg.norm(y.T @ y)
    if xx == 0 or yy == 0:
        return 1.0 if xx == yy else 0.0
    return float(np.linalg.norm(y.T @ x) ** 2 / (xx * yy))


def cka_matrix(hidden: list[np.ndarray]) -> np.ndarray:
    """(L + 1, L + 1) linear CKA between every pair of H_0 … H_L."""
    n = len(hidden)
    out = np.eye(n)
    for i in range(n):
        for j in range(i + 1, n):
            out[i, j] = out[j, i] = linear_cka(hidden[i], hidden[j])
    return out


def shift_scores(cka: np.ndarray, alpha: float, k_neighbours: int) -> np.ndarray:
    """s_l (L,) for l = 1…L from the (L+1, L+1) CKA matrix of H_0…H_L (see the module docstring)."""
    if k_neighbours < 1 or not alpha > 0:
        raise ValueError(f"need K ≥ 1 and α > 0, got K = {k_neighbours}, α = {alpha}")
    n_layers = cka.shape[0] - 1
    s = np.zeros(n_layers)
    for layer in range(1, n_layers + 1):
        ks = np.arange(1, min(k_neighbours, layer) + 1)
        w = alpha ** (ks - 1)
        s[layer - 1] = float((w * (1 - cka[layer, layer - ks])).sum() / w.sum())
    return s


def attention_diversity(attention: np.ndarray) -> float:
    """a_l of one layer's attention probabilities (N windows, H heads, T, S): mean over windows
    and head pairs of 1 − cos(flattened map of head h, of head h′). 0 for identical heads, 1 for
    heads with disjoint supports; 0 with a single head."""
    a = np.asarray(attention, dtype=np.float64)
    if a.ndim != 4:
        raise ValueError(f"attention must be (N, H, T, S), got {a.shape}")
    n, h = a.shape[:2]
    if h < 2:
        return 0.0
    flat = a.reshape(n, h, -1)
    norms = np.linalg.norm(flat, axis=-1, keepdims=True)
    unit = flat / np.where(norms == 0, 1, norms)
    cos = np.einsum("nhx,ngx->nhg", unit, unit)
    iu = np.triu_indices(h, k=1)
    return float((1 - cos[:, iu[0], iu[1]]).mean())


def minmax(x: np.ndarray) -> np.ndarray:
    """(x − min) / (max − min); all zeros when x is constant."""
    x = np.asarray(x, dtype=np.float64)
    span = x.max() - x.min()
    return np.zeros_like(x) if span == 0 else (x - x.min()) / span


def importance(s: np.ndarray, a: np.ndarray, lam: float) -> np.ndarray:
    """I_l = mm(s)_l + λ · mm(a)_l."""
    s, a = np.asarray(s, float), np.asarray(a, float)
    if s.shape != a.shape:
        raise ValueError(f"s and a must have one score per layer, got {s.shape} and {a.shape}")
    return minmax(s) + lam * minmax(a)


def keep_count(n_layers: int, tau: float) -> int:
    """k = max(1, ⌊τ L + ½⌋) for τ in (0, 1]."""
    if not 0 < tau <= 1:
        raise ValueError(f"τ must be in (0, 1], got {tau}")
    if n_layers < 1:
        raise ValueError(f"need at least one layer, got {n_layers}")
    return max(1, min(n_layers, int(np.floor(tau * n_layers + 0.5))))


def top_k(scores: np.ndarray, k: int, always_first: bool = False) -> list[int]:
    """Indices of the k largest scores (ties → lower index), sorted; with always_first, index 0
    is kept and the other k − 1 are the best of the rest."""
    scores = np.asarray(scores, dtype=float)
    if not np.isfinite(scores).all():
        raise ValueError(f"scores must be finite, got {scores.tolist()}")
    if not 1 <= k <= len(scores):
        raise ValueError(f"k must be in [1, {len(scores)}], got {k}")
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    if always_first:
        chosen = [0] + [i for i in order if i != 0][:k - 1]
    else:
        chosen = order[:k]
    return sorted(chosen)


def select_layers(importance_scores: np.ndarray, tau: float, always_first: bool = True) -> list[int]:
    """The method's keep list: top-τ by importance, layer 1 always, original order."""
    return top_k(importance_scores, keep_count(len(importance_scores), tau), always_first)


def block_influence(h_in: np.ndarray, h_out: np.ndarray) -> float:
    """ShortGPT BI = 1 − mean over tokens of cos(h_in, h_out); h (n, d). 0 for an identity block."""
    h_in, h_out = np.asarray(h_in, float), np.asarray(h_out, float)
    num = (h_in * h_out).sum(axis=1)
    den = np.linalg.norm(h_in, axis=1) * np.linalg.norm(h_out, axis=1)
    cos = np.where(den == 0, 1.0, num / np.where(den == 0, 1, den))
    return float(1 - cos.mean())


def baseline_keeps(importance_scores: np.ndarray, bi: np.ndarray, k: int, random_draws: int,
                   rng: np.random.Generator) -> dict[str, list[int]]:
    """Keep lists of the pruning baselines at the same k: bottom_k (least important), bi_top_k,
    drop_last (the first k layers), random_0…random_{draws−1} (uniform k-subsets)."""
    n = len(importance_scores)
    out = {"bottom_k": top_k(-np.asarray(importance_scores, float), k),
           "bi_top_k": top_k(bi, k),
           "drop_last": list(range(k))}
    for d in range(random_draws):
        out[f"random_{d}"] = sorted(int(i) for i in rng.choice(n, size=k, replace=False))
    return out


def validate_keep(keep: list[int], n_layers: int) -> list[str]:
    """Problems of a keep list: non-empty, strictly increasing, in [0, L)."""
    problems = []
    if not keep:
        problems.append("keep list is empty")
    elif list(keep) != sorted(set(keep)):
        problems.append(f"keep list {list(keep)} is not strictly increasing")
    if any(not 0 <= int(i) < n_layers for i in keep):
        problems.append(f"keep list {list(keep)} has layers outside [0, {n_layers})")
    return problems


def jaccard(a: list[int], b: list[int]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / max(1, len(sa | sb))


def top_share(s: np.ndarray, fraction: float) -> float:
    """Share of Σ s carried by the top ⌈fraction · L⌉ layers (the concentration claim)."""
    s = np.sort(np.asarray(s, float))[::-1]
    k = max(1, int(np.ceil(fraction * len(s) - 1e-9)))
    total = s.sum()
    return float(s[:k].sum() / total) if total > 0 else 0.0


def hierarchical_bootstrap(diffs: dict[int, dict[str, np.ndarray]], level: float = 0.90, n_boot: int = 2000,
                           seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high) of the mean paired difference over seeds and windows: each replicate
    resamples seeds with replacement, then each (seed, series)'s windows with replacement,
    averages windows per series, series with equal weight, then seeds.
    diffs: {seed: {series: per-window differences (n_windows,)}}."""
    seeds = sorted(diffs)
    series = sorted(next(iter(diffs.values())))
    point = float(np.mean([np.mean([np.mean(diffs[s][k]) for k in series]) for s in seeds]))
    rng = np.random.default_rng(seed)
    reps = np.empty(n_boot)
    for b in range(n_boot):
        picked = rng.integers(0, len(seeds), size=len(seeds))
        values = []
        for i in picked:
            per = diffs[seeds[i]]
            values.append(np.mean([per[k][rng.integers(0, len(per[k]), size=len(per[k]))].mean() for k in series]))
        reps[b] = np.mean(values)
    low, high = np.quantile(reps, [0.5 - level / 2, 0.5 + level / 2])
    return point, float(low), float(high)
