"""SPGCL experiment loops: graphs, annotations, training, embeddings, probes, scaling — no Dagster import.

Each public function is what one asset computes. Method × graph × seed are table columns and
parts of the file names (`run_name`). Torch is imported lazily (training.py imports it).
Wall-clock numbers (training seconds, epochs/s) are returned apart from the tables, as
timing rows: the tables are reproducible outputs, the timings are run records.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from assets.common.progress import Progress
from assets.spgcl import benchmark, data, method
from assets.spgcl.params import SPGCLParams
from resources.artifacts import data_ref, load_checkpoint, resolve_data_ref, save_checkpoint
from resources.versioning import file_md5

HIGH_MASK_KEY = "__high_mask__"      # the high-energy mask H, stored in the state_dict beside the weights
Log = Callable[[str], None]
TorchFor = Callable[..., Any]        # compute.torch: (seed=None) -> the torch module


# ------------------------------------------------------------------------------ helpers
def run_name(method_name: str, graph: str, seed: int) -> str:
    return f"{method_name}__{graph}__seed{int(seed)}"


def method_hparams(params: SPGCLParams, method_name: str) -> dict[str, Any]:
    """Encoder sizes + the method family's hyper-parameters (what the checkpoint sidecar holds)."""
    from assets.spgcl.training import METHODS

    return params.method_hparams(METHODS[method_name][0])


def load_graph(ref: str) -> dict[str, np.ndarray]:
    """A stored graph from its data-root-relative reference (see resources.artifacts.data_ref)."""
    with np.load(resolve_data_ref(ref), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def graph_rows(frame: pd.DataFrame) -> Iterator[tuple[str, int, Any]]:
    for row in frame.itertuples(index=False):
        yield row.graph, int(row.seed), row


def high_mask(feature_energy: pd.DataFrame, graph: str, seed: int) -> np.ndarray:
    sub = feature_energy[(feature_energy["graph"] == graph) & (feature_energy["seed"] == seed)].sort_values("dim")
    return sub["in_high"].to_numpy(dtype=bool)


def keep_prob(frame: pd.DataFrame, graph: str, seed: int) -> np.ndarray:
    return frame[(frame["graph"] == graph) & (frame["seed"] == seed)].sort_values("edge")["keep_prob"].to_numpy()


def training_runs(params: SPGCLParams, graph_dataset: pd.DataFrame) -> list[tuple[str, str, int]]:
    """(method, graph, seed) of every run whose graph is in the dataset."""
    present = set(graph_dataset["graph"])
    return [run for run in params.planned_runs() if run[1] in present]


# ------------------------------------------------------------------------------ dataset
def make_graphs(params: SPGCLParams, seed_for: Callable[..., int], out_dir: Path, log: Log) -> pd.DataFrame:
    """Every graph × seed as an npz file (edges, features, labels, split) and one manifest row
    with the generator config and measured statistics."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for graph in params.graphs:
        for seed in params.seeds:
            g = data.make_graph(graph, params.n_nodes, seed_for("graph", graph, seed))
            path = out_dir / f"{graph}__seed{int(seed)}.npz"
            np.savez_compressed(path, **g)
            stats = data.graph_stats(g)
            rows.append({"graph": graph, "seed": int(seed), "path": data_ref(path), "md5": file_md5(path),
                         **data.graph_meta(graph, params.n_nodes), **stats})
            log(f"{graph}/seed {seed}: n={stats['n_nodes']}, {stats['n_directed_edges'] // 2} edges, "
                f"homophily {stats['measured_homophily']:.3f}")
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ annotations
def feature_energy(graph_dataset: pd.DataFrame, k: int, log: Log) -> pd.DataFrame:
    """Per-feature Dirichlet energy (degree-normalised, unnormalised, Rayleigh), rank, the
    high-energy set H (top k) and which dims are informative (Gaussian CSBMs)."""
    frames = []
    for graph, seed, row in graph_rows(graph_dataset):
        g = load_graph(row.path)
        energy = method.dirichlet_energy_per_feature(g["x"], g["edge_index"])
        config = json.loads(row.config_json)
        informative = np.zeros(len(energy), dtype=bool)
        if config.get("feature_model") == "gaussian":
            informative[: int(config["n_informative"])] = True
        frames.append(pd.DataFrame({
            "graph": graph, "seed": seed, "dim": np.arange(len(energy)), "energy": energy,
            "energy_no_degree": method.dirichlet_energy_per_feature(g["x"], g["edge_index"], degree_normalized=False),
            "energy_rayleigh": method.rayleigh_energy_per_feature(g["x"], g["edge_index"]),
            "rank": method.energy_ranks(energy), "in_high": method.high_energy_mask(energy, k),
            "informative": informative, "k": k, "n_features": len(energy)}))
        high = method.high_energy_mask(energy, k)
        if seed == graph_dataset["seed"].min() and high.any() and (~high).any():
            share = informative[high].mean() if informative.any() else float("nan")
            log(f"{graph}: mean E(H) {energy[high].mean():.4g}, mean E(L) {energy[~high].mean():.4g}, "
                f"informative share of H {share:.2f}")
    return pd.concat(frames, ignore_index=True)


def positive_keep_probs(graph_dataset: pd.DataFrame, feature_energy: pd.DataFrame, alpha: float,
                        log: Log) -> pd.DataFrame:
    """EPS keep probability per edge entry on the low-energy dims L."""
    frames = []
    for graph, seed, row in graph_rows(graph_dataset):
        g = load_graph(row.path)
        high = high_mask(feature_energy, graph, seed)
        keep = method.edge_keep_probability(g["x"][:, ~high], g["edge_index"], alpha)
        frames.append(pd.DataFrame({"graph": graph, "seed": seed, "edge": np.arange(len(keep)),
                                    "src": g["edge_index"][0], "dst": g["edge_index"][1],
                                    "keep_prob": keep.astype(np.float32), "alpha": alpha}))
        log(f"{graph}/seed {seed}: expected kept-edge fraction {keep.mean():.3f}")
    return pd.concat(frames, ignore_index=True)


def prealignment(graph_dataset: pd.DataFrame, params: SPGCLParams, seed_for: Callable[..., int],
                 torch_for: TorchFor) -> pd.DataFrame:
    """Edge cosine and normalised Dirichlet energy of a randomly initialised encoder, with
    (GCN) and without (MLP, same weights) message passing, per graph × seed."""
    from assets.spgcl import training

    hp = method_hparams(params, "spgcl")
    rows = []
    for graph, seed, row in graph_rows(graph_dataset):
        g = load_graph(row.path)
        torch_for(seed_for("init", graph, seed))
        for r in training.prealignment_diagnostics(g["x"], g["edge_index"], hp, seed_for("init", graph, seed)):
            rows.append({"graph": graph, "seed": seed, **r})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ training
def train_encoders(graph_dataset: pd.DataFrame, feature_energy: pd.DataFrame, positive_keep_probs: pd.DataFrame,
                   params: SPGCLParams, *, seed_for: Callable[..., int], torch_for: TorchFor, device: str,
                   workers: int, threads: int, deterministic: bool, checkpoint_path: Callable[[str], Path],
                   provenance: dict, log: Log) -> tuple[pd.DataFrame, list[dict]]:
    """Every method × graph × seed encoder, trained in `workers` processes, checkpointed with
    its high-energy mask. Returns (table, timing rows: train seconds and epochs/s per run)."""
    from assets.spgcl import training

    paths = graph_dataset.set_index(["graph", "seed"])["path"]
    runs = training_runs(params, graph_dataset)
    specs = [training.RunSpec(
        method=name, graph_path=str(resolve_data_ref(paths[(graph, seed)])),
        high_mask=high_mask(feature_energy, graph, seed), keep_prob=keep_prob(positive_keep_probs, graph, seed),
        hp=method_hparams(params, name), run_seed=seed_for("train", name, graph, seed), device=device,
        threads=threads, deterministic=deterministic) for name, graph, seed in runs]
    torch = torch_for(0)
    rows: list[dict | None] = [None] * len(runs)
    timings: list[dict | None] = [None] * len(runs)
    progress = Progress(log, len(runs), "training")

    def save(index: int, result: dict) -> None:
        name, graph, seed = runs[index]
        spec, losses, seconds = specs[index], result["losses"], result["seconds"]
        state = {**result["state"], HIGH_MASK_KEY: torch.as_tensor(spec.high_mask.astype(np.float32))}
        saved = save_checkpoint(checkpoint_path(run_name(name, graph, seed)), state, provenance=provenance,
                                config=spec.hp, seed=seed, device=device, method=name, graph=graph,
                                run_seed=spec.run_seed, in_dim=int(len(spec.high_mask)))
        rows[index] = {"method": name, "graph": graph, "seed": seed, "checkpoint": saved["checkpoint"],
                       "md5": saved["md5"], "hparams_json": json.dumps(spec.hp, sort_keys=True),
                       "epochs_run": len(losses), "first_loss": losses[0], "final_loss": losses[-1],
                       "loss_curve": losses, "z_fingerprint": result["z_fingerprint"], "z_dim": result["z_dim"]}
        timings[index] = {"method": name, "graph": graph, "seed": seed, "train_seconds": seconds,
                          "epochs_per_second": len(losses) / max(seconds, 1e-9)}
        progress.step(f"{name} on {graph}/seed {seed}: {len(losses)} epochs in {seconds:.1f} s, "
                      f"loss {losses[0]:.3f} → {losses[-1]:.3f}")

    log(f"training {len(runs)} runs on {device} with {workers} worker process(es)")
    training.run_many(specs, workers, save)
    return pd.DataFrame(rows), list(timings)


def load_encoder(ref: str | dict) -> tuple[Any, np.ndarray, dict]:
    """(model, high mask, sidecar) rebuilt from a checkpoint (weights_only load)."""
    from assets.spgcl import training

    state, sidecar = load_checkpoint(ref)
    high = state.pop(HIGH_MASK_KEY).numpy().astype(bool)
    model = training.build_model(sidecar["method"], int(sidecar["in_dim"]), sidecar["config"])
    model.load_state_dict(state)
    return model, high, sidecar


def node_embeddings(graph_dataset: pd.DataFrame, gcl_encoder: pd.DataFrame, params: SPGCLParams,
                    out_dir: Path, torch_for: TorchFor) -> pd.DataFrame:
    """Z of every trained run (recomputed from the reloaded checkpoint) and of the non-learned
    references, smoothed Â^h Z for every numhop (npz), with collapse statistics and the
    reload-reproduction error."""
    from assets.spgcl import training

    paths = graph_dataset.set_index(["graph", "seed"])["path"]
    out_dir.mkdir(parents=True, exist_ok=True)
    torch_for(0)
    jobs = [(r.method, r.graph, int(r.seed), r) for r in gcl_encoder.itertuples(index=False)]
    jobs += [(m, graph, seed, None) for graph, seed, _ in graph_rows(graph_dataset) for m in params.non_learned]
    rows = []
    for name, graph, seed, enc in jobs:
        g = load_graph(paths[(graph, seed)])
        if enc is None:
            z, diff = training.non_learned_features(name, g["x"], g["edge_index"]), 0.0
        else:
            model, high, _ = load_encoder(enc.checkpoint)
            tensors = training.GraphTensors.from_numpy(g["x"], g["edge_index"], high)
            z = training.embed(model, name, tensors).numpy()
            diff = float(np.abs(z[:4].ravel() - np.asarray(enc.z_fingerprint)).max())
        path = out_dir / f"{run_name(name, graph, seed)}.npz"
        np.savez(path, **{f"numhop{h}": method.smooth_embeddings(z, g["edge_index"], h).astype(np.float32)
                          for h in params.numhops})
        rows.append({"method": name, "graph": graph, "seed": seed, "path": data_ref(path), "md5": file_md5(path),
                     "dim": int(z.shape[1]), "learned": enc is not None, "reload_max_abs_diff": diff,
                     "finite": bool(np.isfinite(z).all()), **benchmark.collapse_stats(z)})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ probe
def linear_probe(graph_dataset: pd.DataFrame, node_embeddings: pd.DataFrame, params: SPGCLParams) -> pd.DataFrame:
    """liblinear LR on every stored embedding × numhop, C chosen on the validation nodes."""
    c_grid = params.c_grid()
    paths = graph_dataset.set_index(["graph", "seed"])["path"]
    rows = []
    for r in node_embeddings.itertuples(index=False):
        g = load_graph(paths[(r.graph, int(r.seed))])
        with np.load(resolve_data_ref(r.path), allow_pickle=False) as z:
            for name in z.files:
                result = benchmark.linear_probe(z[name], g["y"], g["split"], c_grid)
                rows.append({"method": r.method, "graph": r.graph, "seed": int(r.seed),
                             "numhop": int(name.removeprefix("numhop")), **result})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ performance
def training_scaling(params: SPGCLParams, device: str, torch_for: TorchFor, log: Log) -> pd.DataFrame:
    """SPGCL training cost versus n (wall clock): one row per size, with the log-log exponents."""
    from assets.spgcl import scaling

    torch_for(0)
    hp = method_hparams(params, "spgcl")
    rows = []
    for n in params.scaling.sizes:
        row = scaling.measure(int(n), hp, params.scaling.epochs, device, dim_keep=params.dim_keep, alpha=params.alpha)
        rows.append(row)
        log(f"n={row['n']}: {row['epochs_per_second']:.3f} epochs/s, peak {row['peak_memory_mib']:.1f} MiB "
            f"({row['memory_kind']}), load average {row['load_average_1min']:.2f}")
    frame = pd.DataFrame(rows)
    frame["time_exponent"] = scaling.loglog_slope(frame["n"], frame["seconds_per_epoch"])
    frame["memory_exponent"] = scaling.loglog_slope(frame["n"], frame["peak_memory_bytes"])
    return frame
