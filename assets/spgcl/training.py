"""Training loops of SPGCL, its ablations and the baselines; rebuilding a model from a
checkpoint's config; embedding a graph. Torch; no Dagster.

Every method trains full batch on one graph and returns (model, loss per epoch). Randomness
(init, dropout, augmentations, EPS sampling) comes from the seed only.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from assets.common.parallel import spawn_imap
from assets.common.worker import torch_worker
from assets.spgcl import model as M

# method → (family, options). "non-learned" methods have no encoder and no checkpoint.
METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "spgcl": ("spgcl", {"eap": True, "eps": True}),
    "spgcl_wo_eap": ("spgcl", {"eap": False, "eps": True}),
    "spgcl_wo_eps": ("spgcl", {"eap": True, "eps": False}),
    "spgcl_wo_both": ("spgcl", {"eap": False, "eps": False}),
    "grace": ("grace", {"positives": True, "mlp": False}),
    "grace_nopos": ("grace", {"positives": False, "mlp": False}),
    "grace_mlp": ("grace", {"positives": True, "mlp": True}),
    "grace_nopos_mlp": ("grace", {"positives": False, "mlp": True}),
    "dgi": ("dgi", {}),
    "bgrl": ("bgrl", {}),
}
NON_LEARNED = ("raw_features", "sgc_features")
METHOD_LABELS = {
    "spgcl": "SPGCL", "spgcl_wo_eap": "SPGCL w/o EAP", "spgcl_wo_eps": "SPGCL w/o EPS",
    "spgcl_wo_both": "SPGCL w/o both", "grace": "GRACE (GCN)", "grace_nopos": "GRACE-noPos (GCN)",
    "grace_mlp": "GRACE (MLP)", "grace_nopos_mlp": "GRACE-noPos (MLP)", "dgi": "DGI", "bgrl": "BGRL",
    "raw_features": "LogReg on raw X", "sgc_features": "LogReg on Â²X (SGC)",
}


@dataclass
class GraphTensors:
    """x (n, F) float32, edge_index (2, E) int64, the full-graph Â, and SPGCL's annotations:
    high_mask (F,) float {0,1} (None = propagate all) and keep_prob (E,) per edge entry."""

    x: torch.Tensor
    edge_index: torch.Tensor
    adj: torch.Tensor
    high_mask: torch.Tensor | None = None
    keep_prob: torch.Tensor | None = None

    @classmethod
    def from_numpy(cls, x: np.ndarray, edge_index: np.ndarray, high_mask: np.ndarray | None = None,
                   keep_prob: np.ndarray | None = None, device: str = "cpu") -> "GraphTensors":
        xt = torch.as_tensor(np.asarray(x, dtype=np.float32), device=device)
        ei = torch.as_tensor(np.asarray(edge_index, dtype=np.int64), device=device)
        def optional(values: np.ndarray | None) -> torch.Tensor | None:
            return None if values is None else torch.as_tensor(np.asarray(values, dtype=np.float32), device=device)

        return cls(xt, ei, M.normalized_adjacency(ei, xt.shape[0]), optional(high_mask), optional(keep_prob))


def build_model(method: str, in_dim: int, hp: dict[str, Any]) -> torch.nn.Module:
    """A fresh model for `method` with hyper-parameters hp (the checkpoint's sidecar config)."""
    family, opts = METHODS[method]
    if family == "spgcl":
        return M.SPGCLModel(in_dim, int(hp["hidden"]), int(hp["proj"]), int(hp["layers"]), float(hp["dropout"]))
    if family == "grace":
        return M.GRACEModel(in_dim, int(hp["hidden"]), int(hp["proj"]), int(hp["layers"]), mlp=opts["mlp"])
    if family == "dgi":
        return M.DGIModel(in_dim, int(hp["hidden"]))
    if family == "bgrl":
        return M.BGRLModel(in_dim, int(hp["hidden"]), int(hp["layers"]), int(hp["predictor_hidden"]))
    raise KeyError(method)


@torch.no_grad()
def embed(model: torch.nn.Module, method: str, g: GraphTensors) -> torch.Tensor:
    """Evaluation embedding Z (n, D): eval mode, unmasked X, the full graph (no EPS).
    SPGCL variants with EAP use the same high/low split as in training."""
    model.eval()
    family, opts = METHODS[method]
    if family == "spgcl":
        return model.embed(g.x, g.adj, g.high_mask if opts["eap"] else None)
    return model.embed(g.x, g.adj)


def train(method: str, g: GraphTensors, hp: dict[str, Any], seed: int,
          log: Callable[[str], None] = lambda _: None) -> tuple[torch.nn.Module, list[float], float]:
    """Train `method` on graph g. Returns (model, loss per epoch, seconds)."""
    torch.manual_seed(seed)
    generator = torch.Generator(device=g.x.device).manual_seed(seed)
    family, opts = METHODS[method]
    model = build_model(method, g.x.shape[1], hp).to(g.x.device)
    start = time.perf_counter()
    runner = {"spgcl": _train_spgcl, "grace": _train_grace, "dgi": _train_dgi, "bgrl": _train_bgrl}[family]
    losses = runner(model, g, hp, opts, generator, log)
    return model, losses, time.perf_counter() - start


def _log_progress(log, epoch: int, epochs: int, loss: float) -> None:
    if epoch == 0 or (epoch + 1) % max(1, epochs // 4) == 0:
        log(f"epoch {epoch + 1}/{epochs} loss {loss:.4f}")


def _train_spgcl(model, g, hp, opts, generator, log) -> list[float]:
    """Single view: mask H dims element-wise (p = pf); from epoch `edepoch` on, sample EPS
    edges each epoch, used both for message passing and as positives."""
    if opts["eps"] and g.keep_prob is None:
        raise ValueError("SPGCL with EPS needs per-edge keep probabilities")
    high = g.high_mask if opts["eap"] else None
    optimizer = torch.optim.AdamW(model.parameters(), lr=float(hp["lr"]), weight_decay=0.0)
    epochs, edepoch = int(hp["epochs"]), int(hp["edepoch"])
    chunk = int(hp.get("chunk", 4096))
    losses = []
    for epoch in range(epochs):
        model.train()
        optimizer.zero_grad()
        x_view = M.mask_high_entries(g.x, float(hp["pf"]), g.high_mask, generator)
        if opts["eps"] and epoch >= edepoch:
            edges = M.sample_kept_edges(g.edge_index, g.keep_prob, generator)
            adj = M.normalized_adjacency(edges, g.x.shape[0])
        else:
            edges, adj = g.edge_index, g.adj
        z = model.embed(x_view, adj, high)
        loss = M.neighbour_infonce(model.project(z), edges, float(hp["tau"]), chunk)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
        _log_progress(log, epoch, epochs, losses[-1])
    return losses


def _train_grace(model, g, hp, opts, generator, log) -> list[float]:
    """Two views: edge dropping (p_e1, p_e2) and feature-column masking (p_f1, p_f2)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=float(hp["lr"]),
                                 weight_decay=float(hp["weight_decay"]))
    epochs, chunk = int(hp["epochs"]), int(hp.get("chunk", 4096))
    n = g.x.shape[0]
    losses = []
    for epoch in range(epochs):
        model.train()
        optimizer.zero_grad()
        views = []
        for pe, pf in ((hp["drop_edge_1"], hp["drop_feature_1"]), (hp["drop_edge_2"], hp["drop_feature_2"])):
            adj = None if opts["mlp"] else M.normalized_adjacency(M.drop_edges(g.edge_index, float(pe), generator), n)
            x = M.mask_feature_columns(g.x, float(pf), generator)
            views.append(model.project(model.embed(x, adj)))
        loss = M.grace_loss(views[0], views[1], float(hp["tau"]), opts["positives"], chunk)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
        _log_progress(log, epoch, epochs, losses[-1])
    return losses


def _train_dgi(model, g, hp, opts, generator, log) -> list[float]:
    """Adam; early stopping on the training loss (patience), restoring the best weights."""
    optimizer = torch.optim.Adam(model.parameters(), lr=float(hp["lr"]), weight_decay=0.0)
    epochs, patience = int(hp["epochs"]), int(hp["patience"])
    best, best_state, wait, losses = float("inf"), None, 0, []
    for epoch in range(epochs):
        model.train()
        optimizer.zero_grad()
        loss = M.dgi_loss(model, g.x, g.adj, generator)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
        _log_progress(log, epoch, epochs, losses[-1])
        if losses[-1] < best:
            best, wait = losses[-1], 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            wait += 1
            if wait >= patience:
                log(f"early stop at epoch {epoch + 1} (best loss {best:.4f})")
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    return losses


def _train_bgrl(model, g, hp, opts, generator, log) -> list[float]:
    """Two views (edge drop, feature-column mask), predictor on the online branch, EMA target
    with a cosine momentum schedule; AdamW with linear warm-up then cosine decay."""
    params = [*model.online.parameters(), *model.predictor.parameters()]
    optimizer = torch.optim.AdamW(params, lr=float(hp["lr"]), weight_decay=float(hp["weight_decay"]))
    epochs, warmup, base_lr = int(hp["epochs"]), int(hp["warmup"]), float(hp["lr"])
    n = g.x.shape[0]
    losses = []
    for epoch in range(epochs):
        lr = base_lr * (epoch + 1) / warmup if epoch < warmup else \
            base_lr * (1 + np.cos(np.pi * (epoch - warmup) / max(1, epochs - warmup))) / 2
        for group in optimizer.param_groups:
            group["lr"] = lr
        model.train()
        optimizer.zero_grad()
        views = []
        for pe, pf in ((hp["drop_edge_1"], hp["drop_feature_1"]), (hp["drop_edge_2"], hp["drop_feature_2"])):
            adj = M.normalized_adjacency(M.drop_edges(g.edge_index, float(pe), generator), n)
            views.append((M.mask_feature_columns(g.x, float(pf), generator), adj))
        online = [model.online(x, a) for x, a in views]
        with torch.no_grad():
            target = [model.target(x, a) for x, a in views]
        q = [model.predictor(o) for o in online]
        loss = M.bgrl_loss(q[0], target[1]) + M.bgrl_loss(q[1], target[0])
        loss.backward()
        optimizer.step()
        model.update_target(M.bgrl_momentum(epoch, epochs, float(hp["momentum"])))
        losses.append(float(loss.detach()))
        _log_progress(log, epoch, epochs, losses[-1])
    return losses


# ----------------------------------------------------------------------------- batches of runs
@dataclass
class RunSpec:
    """One training run (method × graph × seed). The graph is read from its npz file
    (keys x, edge_index) inside whichever process trains it; high_mask (F,) bool and
    keep_prob (E,) are SPGCL's annotations for that graph."""

    method: str
    graph_path: str
    high_mask: np.ndarray
    keep_prob: np.ndarray
    hp: dict[str, Any]
    run_seed: int
    device: str = "cpu"
    threads: int = 1
    deterministic: bool = True


def run_one(spec: RunSpec) -> dict[str, Any]:
    """Train one run and return its CPU state_dict, loss curve, seconds and the first four
    rows of its evaluation embedding (the fingerprint the reload check compares against)."""
    torch_worker(spec.threads, deterministic=spec.deterministic)
    with np.load(spec.graph_path, allow_pickle=False) as stored:
        x, edge_index = stored["x"], stored["edge_index"]
    g = GraphTensors.from_numpy(x, edge_index, spec.high_mask, spec.keep_prob, spec.device)
    model, losses, seconds = train(spec.method, g, spec.hp, spec.run_seed)
    z = embed(model, spec.method, g).cpu().numpy()
    return {"state": {k: v.detach().cpu() for k, v in model.state_dict().items()}, "losses": losses,
            "seconds": seconds, "z_fingerprint": z[:4].ravel().astype(float).tolist(), "z_dim": int(z.shape[1])}


def run_many(specs: list[RunSpec], workers: int = 1,
             on_done: Callable[[int, dict[str, Any]], None] = lambda i, r: None) -> list[dict[str, Any]]:
    """Train every spec; workers > 1 trains them in that many spawned processes (one torch
    thread each: independent runs use the cores better than intra-op threads on small
    matrices). Each run is seeded by its own spec, so results do not depend on `workers`;
    on_done(index, result) is called in spec order as results arrive."""
    results = []
    for i, result in enumerate(spawn_imap(run_one, specs, workers)):
        results.append(result)
        on_done(i, result)
    return results


def non_learned_features(method: str, x: np.ndarray, edge_index: np.ndarray) -> np.ndarray:
    """The references without training: raw X, or SGC's Â²X."""
    from assets.spgcl.method import smooth_embeddings

    if method == "raw_features":
        return np.asarray(x, dtype=np.float64)
    if method == "sgc_features":
        return smooth_embeddings(x, edge_index, 2)
    raise KeyError(method)


@torch.no_grad()
def prealignment_diagnostics(x: np.ndarray, edge_index: np.ndarray, hp: dict[str, Any],
                             seed: int) -> list[dict[str, Any]]:
    """P1 at initialisation: one randomly initialised SPGCL encoder stack (eval mode), run once
    WITH propagation (GCN) and once WITHOUT (MLP, the same weights). Returns one row per
    encoder: mean edge cosine of the outputs and their normalised Dirichlet energy on the GCN's
    normalized graph (L̃ = I − Â; and on I − D^{-1/2}AD^{-1/2} as a variant); the input
    X's values are given as the "input" row for reference."""
    from assets.spgcl import method as E

    torch.manual_seed(seed)
    g = GraphTensors.from_numpy(x, edge_index)
    encoder = M.GraphStack(g.x.shape[1], M.stack_dims(int(hp["hidden"]), int(hp["layers"])), "prelu", "layer",
                           float(hp["dropout"])).eval()
    outputs = {"gcn": encoder(g.x, g.adj).numpy(), "mlp": encoder(g.x, None).numpy(), "input": np.asarray(x)}
    return [{"encoder": name, "edge_cosine": E.mean_edge_cosine(z, edge_index),
             "rayleigh_quotient": E.normalized_dirichlet_energy(z, edge_index),
             "rayleigh_quotient_no_self_loops": E.normalized_dirichlet_energy(z, edge_index, self_loops=False)}
            for name, z in outputs.items()]
