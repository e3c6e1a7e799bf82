"""Offline graphs for SPGCL: a seeded contextual stochastic block model (CSBM) and karate club.

Pure numpy (networkx only for the karate sanity graph); no Dagster import.

A graph is a dict of numpy arrays:
    edge_index (2, E) int64   directed entries, both directions of every undirected edge
    x          (n, F) float32 node features
    y          (n,)   int64   class labels 0..C-1
    split      (n,)   int8    0 = train, 1 = validation, 2 = test (random stratified 10/10/80)

The CSBM generator settings below are FROZEN: they were fixed before the first benchmark run
and are never tuned toward a result (spec: "Freeze the generator configs in code").
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

TRAIN, VAL, TEST = 0, 1, 2


@dataclass(frozen=True)
class CSBMConfig:
    """One CSBM configuration.

    Graph: C balanced classes; an undirected edge between nodes of the same class with
    probability p_in and of different classes with p_out, chosen so that the expected average
    degree is `avg_degree` and the expected edge homophily (fraction of intra-class edges) is
    `homophily` (as PyG's RandomPartitionGraphDataset).
    Features, `gaussian`: `n_informative` dims x = μ_y + N(0, 1) with class means
    μ_c ~ N(0, mean_scale² I), then n_features − n_informative iid N(0, 1) noise dims.
    Features, `bow` (Cora-like): each class has a topic θ_c ~ Dirichlet(topic_concentration·1_V)
    and all classes share a background topic θ_0 ~ Dirichlet(topic_concentration·1_V); each
    node draws `words_per_node` words, each from θ_y with probability class_word_fraction,
    else from θ_0; binary bag of words, rows normalised to sum 1 (PyG NormalizeFeatures).
    """

    name: str
    feature_model: str            # "gaussian" | "bow"
    homophily: float              # target edge homophily
    n_nodes: int = 2000
    n_classes: int = 5
    avg_degree: float = 10.0
    n_features: int = 300         # Gaussian: total dims; BoW: vocabulary size V
    n_informative: int = 32       # Gaussian only
    mean_scale: float = 0.25      # Gaussian only: std of the class-mean entries
    words_per_node: int = 20      # BoW only: L
    topic_concentration: float = 0.5  # BoW only
    class_word_fraction: float = 0.5  # BoW only

    def block_probabilities(self) -> tuple[float, float]:
        """(p_in, p_out) giving expected average degree d and edge homophily h.

        Intra-class pairs ≈ n²/(2C), inter-class pairs ≈ n²(C−1)/(2C), expected edges n·d/2:
        p_in = h·d·C/n, p_out = (1−h)·d·C/(n(C−1)).
        """
        n, d, c, h = self.n_nodes, self.avg_degree, self.n_classes, self.homophily
        return h * d * c / n, (1 - h) * d * c / (n * (c - 1))

    def as_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


# Frozen a priori (see module docstring). n_nodes comes from the profile (params.yaml).
GRAPH_CONFIGS: dict[str, CSBMConfig] = {
    "gauss_homo": CSBMConfig("gauss_homo", "gaussian", 0.8),
    "gauss_hetero": CSBMConfig("gauss_hetero", "gaussian", 0.2),
    "bow_homo": CSBMConfig("bow_homo", "bow", 0.8),
    "bow_hetero": CSBMConfig("bow_hetero", "bow", 0.2),
}
SANITY_GRAPHS = ("karate",)
ALL_GRAPHS = (*GRAPH_CONFIGS, *SANITY_GRAPHS)


def graph_config(name: str, n_nodes: int) -> CSBMConfig:
    if name not in GRAPH_CONFIGS:
        raise KeyError(f"unknown CSBM graph {name!r}; choose one of {sorted(GRAPH_CONFIGS)}")
    return replace(GRAPH_CONFIGS[name], n_nodes=int(n_nodes))


# ----------------------------------------------------------------------------- generators
def balanced_labels(n: int, n_classes: int, rng: np.random.Generator) -> np.ndarray:
    """(n,) labels with class sizes differing by at most one, in random order."""
    return rng.permutation(np.arange(n) % n_classes).astype(np.int64)


def sample_sbm_edges(y: np.ndarray, p_in: float, p_out: float, rng: np.random.Generator) -> np.ndarray:
    """Undirected SBM edges as a (2, E) directed edge list (both directions), no self-loops,
    no duplicates, sorted.

    Per block pair, the edge count is Binomial(#pairs, p) and the endpoints are drawn uniformly;
    the rare collisions are removed (at average degree 10 and n = 2000 about 0.03% of edges),
    so memory is O(E), not O(n²).
    """
    classes = [np.flatnonzero(y == c) for c in range(int(y.max()) + 1)]
    src, dst = [], []
    for a, nodes_a in enumerate(classes):
        for b in range(a, len(classes)):
            nodes_b = classes[b]
            if a == b:
                pairs, p = len(nodes_a) * (len(nodes_a) - 1) // 2, p_in
            else:
                pairs, p = len(nodes_a) * len(nodes_b), p_out
            count = rng.binomial(pairs, min(p, 1.0)) if pairs > 0 else 0
            if count == 0:
                continue
            src.append(nodes_a[rng.integers(len(nodes_a), size=count)])
            dst.append(nodes_b[rng.integers(len(nodes_b), size=count)])
    if not src:
        return np.zeros((2, 0), dtype=np.int64)
    return canonical_edges(np.concatenate(src), np.concatenate(dst), len(y))


def canonical_edges(src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """Drop self-loops and duplicates, symmetrise, sort: (2, E) int64 with E even."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    keep = src != dst
    lo, hi = np.minimum(src[keep], dst[keep]), np.maximum(src[keep], dst[keep])
    codes = np.unique(lo * n + hi)
    lo, hi = codes // n, codes % n
    both = np.concatenate([np.stack([lo, hi]), np.stack([hi, lo])], axis=1)
    order = np.lexsort((both[1], both[0]))
    return both[:, order]


def gaussian_features(y: np.ndarray, config: CSBMConfig, rng: np.random.Generator) -> np.ndarray:
    """(n, F) float32: informative dims μ_y + N(0,1) first, then N(0,1) noise dims."""
    means = rng.normal(0.0, config.mean_scale, size=(config.n_classes, config.n_informative))
    x = rng.normal(0.0, 1.0, size=(len(y), config.n_features))
    x[:, : config.n_informative] += means[y]
    return x.astype(np.float32)


def bow_features(y: np.ndarray, config: CSBMConfig, rng: np.random.Generator) -> np.ndarray:
    """(n, V) float32 binary bag of words, rows normalised to sum 1 (Cora-like)."""
    vocab = config.n_features
    topics = rng.dirichlet(np.full(vocab, config.topic_concentration), size=config.n_classes)
    background = rng.dirichlet(np.full(vocab, config.topic_concentration))
    n, length = len(y), config.words_per_node
    from_class = rng.random((n, length)) < config.class_word_fraction
    counts = np.zeros((n, vocab), dtype=np.float64)
    for c in range(config.n_classes):
        rows = np.flatnonzero(y == c)
        if len(rows) == 0:
            continue
        class_words = rng.choice(vocab, size=(len(rows), length), p=topics[c])
        background_words = rng.choice(vocab, size=(len(rows), length), p=background)
        words = np.where(from_class[rows], class_words, background_words)
        np.add.at(counts, (np.repeat(rows, length), words.ravel()), 1.0)
    binary = (counts > 0).astype(np.float64)
    return (binary / binary.sum(axis=1, keepdims=True)).astype(np.float32)


def stratified_split(y: np.ndarray, rng: np.random.Generator, train: float = 0.1,
                     val: float = 0.1) -> np.ndarray:
    """(n,) int8 split codes: per class, round(train·n_c) (≥ 1) train, round(val·n_c) (≥ 1)
    validation, the rest test."""
    split = np.full(len(y), TEST, dtype=np.int8)
    for c in np.unique(y):
        nodes = rng.permutation(np.flatnonzero(y == c))
        n_train = max(1, int(round(train * len(nodes))))
        n_val = max(1, int(round(val * len(nodes))))
        split[nodes[:n_train]] = TRAIN
        split[nodes[n_train:n_train + n_val]] = VAL
    return split


def make_csbm(config: CSBMConfig, seed: int) -> dict[str, np.ndarray]:
    """One CSBM graph (see CSBMConfig), deterministic given the seed."""
    rng = np.random.default_rng(seed)
    y = balanced_labels(config.n_nodes, config.n_classes, rng)
    p_in, p_out = config.block_probabilities()
    edge_index = sample_sbm_edges(y, p_in, p_out, rng)
    if config.feature_model == "gaussian":
        x = gaussian_features(y, config, rng)
    elif config.feature_model == "bow":
        x = bow_features(y, config, rng)
    else:
        raise ValueError(f"unknown feature model {config.feature_model!r}")
    return {"edge_index": edge_index, "x": x, "y": y, "split": stratified_split(y, rng)}


def make_karate(seed: int) -> dict[str, np.ndarray]:
    """Zachary's karate club (networkx): 34 nodes, 78 edges, label = club (Mr. Hi 0, Officer 1),
    identity features (the graph ships no features). Smoke/sanity only, too small to benchmark."""
    import networkx as nx

    g = nx.karate_club_graph()
    y = np.array([0 if g.nodes[i]["club"] == "Mr. Hi" else 1 for i in range(g.number_of_nodes())],
                 dtype=np.int64)
    edges = np.array(list(g.edges()), dtype=np.int64).T
    edge_index = canonical_edges(edges[0], edges[1], len(y))
    rng = np.random.default_rng(seed)
    return {"edge_index": edge_index, "x": np.eye(len(y), dtype=np.float32), "y": y,
            "split": stratified_split(y, rng)}


def make_graph(name: str, n_nodes: int, seed: int) -> dict[str, np.ndarray]:
    """Dispatch: a frozen CSBM config by name, or the karate sanity graph."""
    if name == "karate":
        return make_karate(seed)
    return make_csbm(graph_config(name, n_nodes), seed)


def graph_meta(name: str, n_nodes: int) -> dict[str, Any]:
    """Generator settings logged with the dataset (feature model, target homophily, config)."""
    if name == "karate":
        return {"feature_model": "identity", "target_homophily": float("nan"),
                "config_json": json.dumps({"name": "karate", "source": "networkx.karate_club_graph"})}
    config = graph_config(name, n_nodes)
    return {"feature_model": config.feature_model, "target_homophily": config.homophily,
            "config_json": config.as_json()}


# ----------------------------------------------------------------------------- validation
def graph_stats(graph: dict[str, np.ndarray]) -> dict[str, float]:
    """Summary statistics robust to malformed input (used by the asset and its check).

    Out-of-range endpoints are counted and excluded from the homophily and degree statistics
    instead of raising, so the blocking check can name the problem.
    """
    edge_index, x, y = graph["edge_index"], graph["x"], graph["y"]
    n = len(y)
    src, dst = edge_index
    in_range = (src >= 0) & (src < n) & (dst >= 0) & (dst < n)
    s, d = src[in_range], dst[in_range]
    degree = np.bincount(s, minlength=n) if n else np.zeros(0)
    counts = np.bincount(y, minlength=int(y.max()) + 1) if n else np.zeros(1)
    return {
        "n_nodes": int(n), "n_directed_edges": int(edge_index.shape[1]),
        "n_features": int(x.shape[1]) if x.ndim == 2 else 0, "feature_rows": int(x.shape[0]),
        "n_classes": int(len(counts)),
        "out_of_range_endpoints": int((~in_range).sum()),
        "measured_homophily": float((y[s] == y[d]).mean()) if len(s) else float("nan"),
        "isolated_fraction": float((degree == 0).mean()) if n else 1.0,
        "mean_degree": float(degree.mean()) if n else 0.0,
        "min_class_fraction": float(counts.min() / n) if n else 0.0,
    }


def graph_problems(graph: dict[str, np.ndarray], feature_model: str, target_homophily: float,
                   homophily_tolerance: float = 0.05, max_isolated_fraction: float = 0.02) -> list[str]:
    """Every data-quality violation of one graph, as human-readable strings (empty = valid).

    Checks: endpoints in range; no self-loops; no duplicate edges; symmetric edge set;
    isolated-node fraction ≤ max; |measured − target homophily| ≤ tolerance (when a target
    exists); smallest class ≥ 0.5/C of n; one feature row per node; features finite; BoW
    features ≥ 0 with rows summing to 1.
    """
    problems: list[str] = []
    edge_index, x, y = graph["edge_index"], graph["x"], graph["y"]
    n = len(y)
    stats = graph_stats(graph)
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        return [f"edge_index has shape {edge_index.shape}, expected (2, E)"]
    if stats["out_of_range_endpoints"]:
        bad = edge_index[:, (edge_index < 0).any(0) | (edge_index >= n).any(0)]
        problems.append(f"{stats['out_of_range_endpoints']} edges with endpoints outside [0, {n}) "
                        f"(e.g. {bad[:, :3].T.tolist()})")
    src, dst = edge_index
    if (src == dst).any():
        problems.append(f"{int((src == dst).sum())} self-loops")
    codes = src.astype(np.int64) * max(n, 1) + dst
    if len(np.unique(codes)) != len(codes):
        problems.append(f"{len(codes) - len(np.unique(codes))} duplicate edges")
    reverse = dst.astype(np.int64) * max(n, 1) + src
    if not np.isin(reverse, codes).all():
        problems.append(f"edge set not symmetric: {int((~np.isin(reverse, codes)).sum())} edges "
                        "lack their reverse")
    if stats["isolated_fraction"] > max_isolated_fraction:
        problems.append(f"isolated-node fraction {stats['isolated_fraction']:.3f} > "
                        f"{max_isolated_fraction}")
    if np.isfinite(target_homophily):
        measured = stats["measured_homophily"]
        if not np.isfinite(measured) or abs(measured - target_homophily) > homophily_tolerance:
            problems.append(f"measured edge homophily {measured:.3f} differs from target "
                            f"{target_homophily:.2f} by more than {homophily_tolerance}")
    n_classes = stats["n_classes"]
    if stats["min_class_fraction"] < 0.5 / n_classes:
        problems.append(f"smallest class holds {stats['min_class_fraction']:.3f} of the nodes "
                        f"< 0.5/C = {0.5 / n_classes:.3f}")
    if x.ndim != 2 or x.shape[0] != n:
        problems.append(f"feature matrix has {x.shape[0] if x.ndim else 0} rows for {n} nodes")
    if not np.isfinite(x).all():
        problems.append(f"{int((~np.isfinite(x)).sum())} non-finite feature entries")
    if feature_model == "bow" and x.ndim == 2:
        if (x < 0).any():
            problems.append("negative bag-of-words features")
        row_sums = x.sum(axis=1)
        if not np.allclose(row_sums, 1.0, atol=1e-4):
            problems.append(f"{int((~np.isclose(row_sums, 1.0, atol=1e-4)).sum())} BoW rows do not "
                            "sum to 1")
    return problems
