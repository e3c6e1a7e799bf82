"""Random structural causal models with do() — the synthetic prior shared by the PFN papers
(pfn_causal draws interventional queries from it, limix draws tabular tasks) — numpy only.

A batch of B SCMs over V node slots. Nodes are in topological index order: node j may be a
parent of node i only when j < i, so one pass i = 0..V−1 is ancestral sampling. Node i:

    raw_i = g_i(x_pa(i)) + bias_i + noise_sd_i · ε_i,      x_i = (raw_i − shift_i) / scale_i

g_i is one of: linear (Σ_j w_ji x_j), a one-hidden-layer MLP (w2 · act(W1 x_pa + b1)), or an
oblivious decision tree of depth D over parent values (piecewise constant, 2^D leaves); a root
has g = 0. ε_i has unit variance (normal, uniform or scaled Student-t). shift / scale
standardise every node on a pilot sample of its observational distribution (`calibrate`), so
mechanisms deeper in the graph see inputs of unit scale; hand-built SCMs keep 0 / 1.

do(X_S = v): every node i ∈ S is set to v_i (standardised node units); its mechanism and
noise are ignored — its incoming edges are cut — and its descendants see the clamped value.
Masks and values are per row, so one call samples many different interventions at once.

Slots i ≥ n_nodes[b] are inactive (value 0, no edges): SCMs of different sizes share a batch.
Everything is a pure function of the arrays and of the numpy Generator passed in.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields, replace

import numpy as np

LINEAR, MLP, TREE = 0, 1, 2
MECHANISMS = {"linear": LINEAR, "mlp": MLP, "tree": TREE}
ACTIVATIONS = ("tanh", "relu", "sin", "square", "abs", "sigmoid", "identity")
NOISE_KINDS = ("normal", "uniform", "student_t")
STUDENT_T_DF = 3.0


def _activation(name: str, z: np.ndarray) -> np.ndarray:
    if name == "tanh":
        return np.tanh(z)
    if name == "relu":
        return np.maximum(z, 0.0)
    if name == "sin":
        return np.sin(z)
    if name == "square":
        return z * z
    if name == "abs":
        return np.abs(z)
    if name == "sigmoid":
        return 1.0 / (1.0 + np.exp(-z))
    if name == "identity":
        return z
    raise ValueError(f"unknown activation {name!r}; known: {ACTIVATIONS}")


@dataclass(frozen=True)
class SCMPriorConfig:
    """The distribution over SCMs. Ranges are inclusive (lo, hi); a per-SCM value is drawn
    uniformly from each. Mechanism kinds of non-root nodes are drawn with `mechanism_probs`."""

    nodes: tuple[int, int] = (5, 5)                  # n_nodes ~ U{lo..hi}
    edge_prob: tuple[float, float] = (0.5, 0.5)      # p_edge ~ U(lo, hi), then each j < i edge ~ Bernoulli
    mechanisms: tuple[str, ...] = ("mlp",)           # of "linear", "mlp", "tree"
    mechanism_probs: tuple[float, ...] = (1.0,)
    hidden: int = 8                                  # MLP hidden units
    activations: tuple[str, ...] = ("tanh",)         # one drawn per MLP node
    mlp_gain: float = 1.0                            # sd of the MLP pre-activations for unit-scale parents
    hidden_bias: float = 1.0                         # b1 ~ U(−hidden_bias, hidden_bias)
    linear_weight: tuple[float, float] = (0.5, 1.5)  # |w| ~ U(lo, hi), random sign, / sqrt(#parents)
    tree_depth: int = 3
    noise_sd: tuple[float, float] = (0.1, 0.5)       # noise_sd ~ U(lo, hi) per node
    noise_kinds: tuple[str, ...] = ("normal",)       # one drawn per node
    pilot_rows: int = 256                            # rows of the calibration (standardisation) sample

    def __post_init__(self):
        if not 1 <= self.nodes[0] <= self.nodes[1]:
            raise ValueError(f"nodes range {self.nodes} must satisfy 1 ≤ lo ≤ hi")
        if len(self.mechanisms) != len(self.mechanism_probs) or not np.isclose(sum(self.mechanism_probs), 1.0):
            raise ValueError("mechanism_probs must pair with mechanisms and sum to 1")
        unknown = ([m for m in self.mechanisms if m not in MECHANISMS] + [a for a in self.activations
                                                                            if a not in ACTIVATIONS]
                   + [k for k in self.noise_kinds if k not in NOISE_KINDS])
        if unknown:
            raise ValueError(f"unknown mechanism / activation / noise kind: {unknown}")


@dataclass(frozen=True)
class SCMBatch:
    """B SCMs over V node slots (module docstring). Shapes: adjacency (B, V, V) bool with
    adjacency[b, j, i] = edge j → i (only j < i); n_nodes (B,); kind, activation, noise_kind
    (B, V) int codes; linear (B, V, V) [parent, child]; w1 (B, V, H, V) [node, unit, parent];
    b1, w2 (B, V, H); tree_feature (B, V, D) parent indices; tree_threshold (B, V, D);
    tree_leaf (B, V, 2^D); bias, noise_sd, shift, scale (B, V). `activations` / `noise_kinds`
    name the codes."""

    adjacency: np.ndarray
    n_nodes: np.ndarray
    kind: np.ndarray
    linear: np.ndarray
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    activation: np.ndarray
    tree_feature: np.ndarray
    tree_threshold: np.ndarray
    tree_leaf: np.ndarray
    bias: np.ndarray
    noise_sd: np.ndarray
    noise_kind: np.ndarray
    shift: np.ndarray
    scale: np.ndarray
    activations: tuple[str, ...] = ACTIVATIONS
    noise_kinds: tuple[str, ...] = NOISE_KINDS

    @property
    def batch(self) -> int:
        return int(self.adjacency.shape[0])

    @property
    def n_slots(self) -> int:
        return int(self.adjacency.shape[1])

    def arrays(self) -> dict[str, np.ndarray]:
        """The numeric arrays by field name (for a state_dict file)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), np.ndarray)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], activations: tuple[str, ...] = ACTIVATIONS,
                    noise_kinds: tuple[str, ...] = NOISE_KINDS) -> SCMBatch:
        out = {k: np.asarray(arrays[k]) for k in (f.name for f in fields(cls)) if k in arrays}
        out["adjacency"] = out["adjacency"].astype(bool)
        return cls(**out, activations=tuple(activations), noise_kinds=tuple(noise_kinds))

    def take(self, index) -> SCMBatch:
        """The SCMs at `index` (an int array or slice) as a new batch."""
        return replace(self, **{k: v[index] for k, v in self.arrays().items()})

    def parents(self, b: int, i: int) -> list[int]:
        return [int(j) for j in np.flatnonzero(self.adjacency[b, :, i])]

    def fingerprints(self) -> list[str]:
        """One 16-hex-digit identity per SCM: a hash of its graph and drawn parameters (not of
        shift/scale, which calibration derives from them). Equal SCMs, equal fingerprints."""
        # whole-batch conversions once (the bytes of SCM b are those of its slice)
        ints = [np.ascontiguousarray(getattr(self, name)).astype(np.int64)
                for name in ("adjacency", "kind", "activation", "noise_kind", "tree_feature")]
        floats = [np.round(np.ascontiguousarray(getattr(self, name), dtype=np.float64), 9)
                  for name in ("linear", "w1", "b1", "w2", "tree_threshold", "tree_leaf", "bias", "noise_sd")]
        nodes = np.asarray(self.n_nodes, dtype=np.int64)
        out = []
        for b in range(self.batch):
            h = hashlib.sha1()
            h.update(nodes[b].tobytes())
            for array in ints + floats:
                h.update(array[b].tobytes())
            out.append(h.hexdigest()[:16])
        return out


def draw_scms(config: SCMPriorConfig, rng: np.random.Generator, batch: int) -> SCMBatch:
    """`batch` SCMs from the prior, uncalibrated (shift 0, scale 1). Every draw comes from
    `rng` in a fixed order, so the same Generator state gives the same SCMs."""
    B, V, H, D = int(batch), int(config.nodes[1]), int(config.hidden), int(config.tree_depth)
    n_nodes = rng.integers(config.nodes[0], config.nodes[1] + 1, size=B)
    p_edge = rng.uniform(config.edge_prob[0], config.edge_prob[1], size=B)
    active = np.arange(V)[None, :] < n_nodes[:, None]                           # (B, V)
    upper = np.triu(np.ones((V, V), dtype=bool), k=1)
    adjacency = (rng.random((B, V, V)) < p_edge[:, None, None]) & upper & active[:, :, None] & active[:, None, :]
    n_parents = adjacency.sum(axis=1)                                          # (B, V)
    codes = np.array([MECHANISMS[m] for m in config.mechanisms])
    kind = codes[rng.choice(len(codes), size=(B, V), p=np.asarray(config.mechanism_probs))]
    kind = np.where(n_parents > 0, kind, LINEAR).astype(np.int64)
    norm = 1.0 / np.sqrt(np.maximum(n_parents, 1))                             # (B, V)
    magnitude = rng.uniform(config.linear_weight[0], config.linear_weight[1], size=(B, V, V))
    linear = magnitude * rng.choice([-1.0, 1.0], size=(B, V, V)) * adjacency * norm[:, None, :]
    w1 = rng.standard_normal((B, V, H, V)) * config.mlp_gain * norm[:, :, None, None]
    w1 = w1 * np.transpose(adjacency, (0, 2, 1))[:, :, None, :]                # row i keeps i's parents
    b1 = rng.uniform(-config.hidden_bias, config.hidden_bias, size=(B, V, H))
    w2 = rng.standard_normal((B, V, H)) / np.sqrt(H)
    act_codes = np.array([ACTIVATIONS.index(a) for a in config.activations])
    activation = act_codes[rng.integers(0, len(act_codes), size=(B, V))]
    # tree splits on random parents (a node without parents is a root: its tree is never used)
    choice = rng.random((B, V, D))
    rank = np.minimum((choice * n_parents[:, :, None]).astype(np.int64), np.maximum(n_parents - 1, 0)[:, :, None])
    running = np.cumsum(np.transpose(adjacency, (0, 2, 1)), axis=2)            # (B, child, parent)
    tree_feature = np.argmax(running[:, :, None, :] > rank[..., None], axis=3)  # the (rank+1)-th parent
    tree_feature = np.where(n_parents[:, :, None] > 0, tree_feature, 0).astype(np.int64)
    tree_threshold = rng.standard_normal((B, V, D)) * 0.5
    tree_leaf = rng.standard_normal((B, V, 2 ** D))
    bias = np.zeros((B, V))
    noise_sd = rng.uniform(config.noise_sd[0], config.noise_sd[1], size=(B, V)) * active
    kind_codes = np.array([NOISE_KINDS.index(k) for k in config.noise_kinds])
    noise_kind = kind_codes[rng.integers(0, len(kind_codes), size=(B, V))]
    return SCMBatch(adjacency=adjacency, n_nodes=n_nodes.astype(np.int64), kind=kind, linear=linear, w1=w1, b1=b1,
                    w2=w2, activation=activation.astype(np.int64), tree_feature=tree_feature,
                    tree_threshold=tree_threshold, tree_leaf=tree_leaf, bias=bias, noise_sd=noise_sd,
                    noise_kind=noise_kind.astype(np.int64), shift=np.zeros((B, V)), scale=np.ones((B, V)))


def draw_noise(scm: SCMBatch, rng: np.random.Generator, rows: int) -> np.ndarray:
    """Unit-variance noise ε (B, rows, V) of each node's kind (normal; uniform on ±√3;
    Student-t with 3 degrees of freedom scaled by 1/√3)."""
    eps = rng.standard_normal((scm.batch, int(rows), scm.n_slots))
    kinds = set(np.unique(scm.noise_kind).tolist())
    if kinds - {scm.noise_kinds.index("normal")}:
        uniform = np.broadcast_to((scm.noise_kind == scm.noise_kinds.index("uniform"))[:, None, :], eps.shape)
        eps = np.where(uniform, rng.uniform(-np.sqrt(3.0), np.sqrt(3.0), size=eps.shape), eps)
        student = np.broadcast_to((scm.noise_kind == scm.noise_kinds.index("student_t"))[:, None, :], eps.shape)
        t = rng.standard_t(STUDENT_T_DF, size=eps.shape) / np.sqrt(STUDENT_T_DF / (STUDENT_T_DF - 2.0))
        eps = np.where(student, t, eps)
    return eps


def _mechanism(scm: SCMBatch, x: np.ndarray, i: int) -> np.ndarray:
    """g_i(x_pa(i)) for every SCM and row: x (B, R, V) with nodes < i filled → (B, R)."""
    B, R, _ = x.shape
    kind = scm.kind[:, i]
    if np.all(kind == MLP) and np.all(scm.activation[:, i] == scm.activation[0, i]):      # the common fast path
        pre = np.matmul(x, np.transpose(scm.w1[:, i], (0, 2, 1))) + scm.b1[:, i][:, None, :]
        hidden = _activation(scm.activations[int(scm.activation[0, i])], pre)
        return np.matmul(hidden, scm.w2[:, i][:, :, None])[:, :, 0]
    if np.all(kind == LINEAR):
        return np.matmul(x, scm.linear[:, :, i][:, :, None])[:, :, 0]
    out = np.zeros((B, R))
    lin = kind == LINEAR
    if lin.any():
        out[lin] = np.matmul(x[lin], scm.linear[lin, :, i][:, :, None])[:, :, 0]
    mlp = kind == MLP
    if mlp.any():
        pre = np.matmul(x[mlp], np.transpose(scm.w1[mlp, i], (0, 2, 1))) + scm.b1[mlp, i][:, None, :]
        hidden = np.empty_like(pre)
        acts = scm.activation[mlp, i]
        for code in np.unique(acts):
            sel = acts == code
            hidden[sel] = _activation(scm.activations[int(code)], pre[sel])
        out[mlp] = np.matmul(hidden, scm.w2[mlp, i][:, :, None])[:, :, 0]
    tree = kind == TREE
    if tree.any():
        feat = scm.tree_feature[tree, i]                                        # (b, D)
        values = np.take_along_axis(x[tree], np.broadcast_to(feat[:, None, :], (int(tree.sum()), R, feat.shape[1])),
                                    axis=2)                                     # (b, R, D)
        bits = values > scm.tree_threshold[tree, i][:, None, :]
        leaf = (bits * (2 ** np.arange(feat.shape[1]))).sum(axis=2)             # (b, R)
        out[tree] = np.take_along_axis(scm.tree_leaf[tree, i], leaf, axis=1)
    return out


def sample(scm: SCMBatch, noise: np.ndarray, mask: np.ndarray | None = None,
           values: np.ndarray | None = None) -> np.ndarray:
    """Ancestral sampling, observational or under do(): x (B, R, V) in standardised node units.

    noise: (B, R, V) unit-variance draws (`draw_noise`; pass the same array to every query for
    common-noise Monte Carlo). mask: bool, broadcastable to (B, R, V) — True clamps that node
    in that row; values: broadcastable to (B, R, V), read where mask is True.
    """
    B, R, V = noise.shape
    if (B, V) != (scm.batch, scm.n_slots):
        raise ValueError(f"noise is {noise.shape}, the SCM batch needs (B={scm.batch}, R, V={scm.n_slots})")
    if (mask is None) != (values is None):
        raise ValueError("pass both mask and values, or neither")
    if mask is not None:
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), (B, R, V))
        values = np.broadcast_to(np.asarray(values, dtype=float), (B, R, V))
    active = np.arange(V)[None, :] < scm.n_nodes[:, None]
    x = np.zeros((B, R, V))
    for i in range(V):
        raw = _mechanism(scm, x, i) + scm.bias[:, i][:, None] + scm.noise_sd[:, i][:, None] * noise[:, :, i]
        node = (raw - scm.shift[:, i][:, None]) / scm.scale[:, i][:, None]
        if mask is not None:
            node = np.where(mask[:, :, i], values[:, :, i], node)
        x[:, :, i] = np.where(active[:, i][:, None], node, 0.0)
    return x


def calibrate(scm: SCMBatch, rng: np.random.Generator, rows: int) -> SCMBatch:
    """shift / scale from a pilot observational sample of `rows` rows, node by node in
    topological order (node i's scale is measured with its parents already standardised)."""
    noise = draw_noise(scm, rng, rows)
    B, R, V = noise.shape
    shift, scale = np.zeros((B, V)), np.ones((B, V))
    x = np.zeros((B, R, V))
    active = np.arange(V)[None, :] < scm.n_nodes[:, None]
    for i in range(V):
        raw = _mechanism(scm, x, i) + scm.bias[:, i][:, None] + scm.noise_sd[:, i][:, None] * noise[:, :, i]
        shift[:, i] = raw.mean(axis=1)
        sd = raw.std(axis=1)
        scale[:, i] = np.where(active[:, i] & (sd > 1e-8), sd, 1.0)
        x[:, :, i] = np.where(active[:, i][:, None], (raw - shift[:, i][:, None]) / scale[:, i][:, None], 0.0)
    return replace(scm, shift=shift, scale=scale)


def sample_scms(config: SCMPriorConfig, rng: np.random.Generator, batch: int) -> SCMBatch:
    """draw_scms, then calibrate on `config.pilot_rows` pilot rows (the same Generator)."""
    return calibrate(draw_scms(config, rng, batch), rng, config.pilot_rows)


def linear_scm(weights: np.ndarray, bias: np.ndarray | None = None, noise_sd: np.ndarray | None = None) -> SCMBatch:
    """One hand-built linear SCM with unit-variance Gaussian noise scaled by noise_sd:
    x = Wᵀx + bias + noise_sd·ε. weights (V, V) [parent, child], strictly upper-triangular."""
    W = np.asarray(weights, dtype=float)
    V = W.shape[0]
    if W.shape != (V, V) or np.any(np.tril(W) != 0):
        raise ValueError("weights must be a strictly upper-triangular (V, V) matrix (topological order)")
    bias = np.zeros(V) if bias is None else np.asarray(bias, dtype=float)
    noise_sd = np.ones(V) if noise_sd is None else np.asarray(noise_sd, dtype=float)
    z = np.zeros((1, V))
    return SCMBatch(adjacency=(W != 0)[None], n_nodes=np.array([V]), kind=np.zeros((1, V), dtype=np.int64),
                    linear=W[None], w1=np.zeros((1, V, 1, V)), b1=np.zeros((1, V, 1)), w2=np.zeros((1, V, 1)),
                    activation=np.zeros((1, V), dtype=np.int64), tree_feature=np.zeros((1, V, 1), dtype=np.int64),
                    tree_threshold=np.zeros((1, V, 1)), tree_leaf=np.zeros((1, V, 2)), bias=bias[None],
                    noise_sd=noise_sd[None], noise_kind=np.zeros((1, V), dtype=np.int64), shift=z.copy(),
                    scale=np.ones((1, V)))


def linear_interventional_mean(weights: np.ndarray, bias: np.ndarray, mask: np.ndarray,
                               values: np.ndarray) -> np.ndarray:
    """Closed form E[x | do(x_S = v)] (V,) of the linear SCM x = Wᵀx + bias + ε:
    cut the incoming edges of S, then μ = (I − W_cutᵀ)⁻¹ (b_cut), b_cut = bias off S, v on S."""
    W = np.array(weights, dtype=float)
    m = np.asarray(mask, dtype=bool)
    W[:, m] = 0.0
    b = np.where(m, np.asarray(values, dtype=float), np.asarray(bias, dtype=float))
    return np.linalg.solve(np.eye(len(b)) - W.T, b)


def to_networkx(scm: SCMBatch, b: int):
    """SCM b's graph as a networkx DiGraph over its active nodes (edge j → i)."""
    import networkx as nx

    n = int(scm.n_nodes[b])
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from((int(j), int(i)) for j, i in zip(*np.nonzero(scm.adjacency[b, :n, :n])))
    return graph
