"""Training cost of SPGCL versus graph size: epochs/s, peak memory, and the scaling exponent.

For each n a CSBM of the frozen config (bow_homo by default: average degree 10, F = 300) is
generated, its energy split and EPS keep probabilities computed, and SPGCL trained full batch
with EPS active from the first epoch: sparse propagation (torch sparse Â, never a dense n×n
adjacency) and the n×n similarity only inside the loss, in row chunks above `chunk` rows.

Measured, per n:
  - seconds per epoch (wall and process CPU time) over `epochs` epochs after one warm-up epoch;
  - peak memory of one epoch: on CUDA torch.cuda.max_memory_allocated (after
    reset_peak_memory_stats); on CPU the peak of live tensor bytes reconstructed from the torch
    profiler's memory events (profile_memory=True: every allocation and free, in time order).
    Both count the tensors alive during the epoch, including the graph and the model.
The scaling exponent b is the least-squares slope of log(seconds/epoch) on log(n) (and of
log(peak bytes) on log(n)); the dense-similarity loss makes the cost O(n²·D), so b → 2 once
the n² term dominates, and memory grows as O(chunk·n) + O(n·F) once n exceeds the chunk.
Torch only; no Dagster.
"""
from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
import torch

from assets.spgcl import data, method, training


def _cpu_peak_bytes(run_epoch) -> int:
    """Peak live CPU tensor bytes while run_epoch() executes (torch profiler memory events:
    each op's own allocations net of its own frees, plus the frees outside any op)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run_epoch()
    live = peak = 0
    for event in sorted(prof.events(), key=lambda e: e.time_range.start):
        live += event.cpu_memory_usage if event.name == "[memory]" else event.self_cpu_memory_usage
        peak = max(peak, live)
    return int(peak)


def measure(n: int, hp: dict[str, Any], epochs: int, device: str = "cpu", graph: str = "bow_homo",
            dim_keep: int = 64, alpha: float = 0.8, seed: int = 0) -> dict[str, Any]:
    """Time SPGCL on an n-node CSBM; one result row (seconds, epochs/s, peak bytes)."""
    g = data.make_csbm(data.graph_config(graph, n), seed=seed)
    energy = method.dirichlet_energy_per_feature(g["x"], g["edge_index"])
    high = method.high_energy_mask(energy, dim_keep)
    keep = method.edge_keep_probability(g["x"][:, ~high], g["edge_index"], alpha)
    hp = {**hp, "edepoch": 0}
    # the graph lives inside the measured region so that the peak includes it
    def run(n_epochs: int, run_seed: int) -> tuple[list[float], float]:
        tensors = training.GraphTensors.from_numpy(g["x"], g["edge_index"], high, keep, device)
        _, losses, seconds = training.train("spgcl", tensors, {**hp, "epochs": n_epochs}, run_seed)
        return losses, seconds

    run(1, seed)                                                   # warm-up (allocator, kernels)
    if device == "cuda":
        torch.cuda.synchronize()
    cpu_start = time.process_time()
    losses, seconds = run(epochs, seed + 1)
    if device == "cuda":
        torch.cuda.synchronize()
    cpu_seconds = time.process_time() - cpu_start
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        run(1, seed + 2)
        torch.cuda.synchronize()
        peak, kind = torch.cuda.max_memory_allocated() - base, "torch.cuda.max_memory_allocated"
    else:
        peak, kind = _cpu_peak_bytes(lambda: run(1, seed + 2)), "torch profiler live CPU tensor bytes"
    chunk = int(hp.get("chunk", 4096))
    return {"n": int(n), "directed_edges": int(g["edge_index"].shape[1]), "graph": graph, "device": device,
            "hidden": int(hp["hidden"]), "chunk": chunk, "similarity_chunked": bool(n > chunk),
            "epochs": int(epochs), "seconds_per_epoch": seconds / epochs, "epochs_per_second": epochs / seconds,
            "cpu_seconds_per_epoch": cpu_seconds / epochs, "peak_memory_bytes": int(peak),
            "peak_memory_mib": peak / 2 ** 20, "memory_kind": kind, "torch_threads": torch.get_num_threads(),
            "load_average_1min": float(os.getloadavg()[0]), "final_loss": float(losses[-1])}


def loglog_slope(n: np.ndarray, values: np.ndarray) -> float:
    """Least-squares slope b of log(values) = a + b·log(n); NaN for fewer than 2 sizes."""
    n, values = np.asarray(n, dtype=float), np.asarray(values, dtype=float)
    if len(n) < 2:
        return float("nan")
    return float(np.polyfit(np.log(n), np.log(values), 1)[0])
