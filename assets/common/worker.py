"""Torch set-up of one job, in the caller's process or in a spawned worker process.

Jobs sent to worker processes carry plain values (threads, seed, determinism, device) instead of
the `compute` resource; each job calls `torch_worker` first. `to_device` moves a batch (a tensor,
or a dict / list / tuple of them) onto the job's device, leaving other values as they are.
"""
from __future__ import annotations

import multiprocessing
import os
import random
from typing import Any

_BLAS_LIMIT: list = []   # keeps a spawned worker's BLAS thread limit alive for the process


def torch_worker(threads: int, seed: int | None = None, deterministic: bool = False, cap_blas: bool = False):
    """Import torch with `threads` intra-op threads, deterministic algorithms (warn only) when asked,
    and torch's and `random`'s seeds set when `seed` is given; returns the torch module.

    cap_blas: in a spawned worker, also limit numpy/scipy BLAS to `threads` for the worker's life,
    so that batch building does not oversubscribe the cores. In the caller's process (workers = 1)
    it does nothing: the limit would outlive the job and change later numpy results in that process
    (the oscs smoke rerun's Ledoit–Wolf fit differed in its last bits after pfn_causal had run
    in-process)."""
    import torch

    torch.set_num_threads(max(1, int(threads)))
    if cap_blas and not _BLAS_LIMIT and multiprocessing.parent_process() is not None:
        from threadpoolctl import threadpool_limits

        _BLAS_LIMIT.append(threadpool_limits(limits=max(1, int(threads))))
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")   # deterministic cuBLAS on a GPU
        torch.use_deterministic_algorithms(True, warn_only=True)
    if seed is not None:
        torch.manual_seed(int(seed))
        random.seed(int(seed))
    return torch


def to_device(batch: Any, device: Any) -> Any:
    """`batch` with every tensor in it (top level, or inside dicts, lists and tuples) on `device`."""
    import torch

    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(v, device) for v in batch)
    return batch


def cpu_workers(jobs: int, requested: int = 1) -> int:
    """Worker processes for `jobs` independent CPU-only jobs (models that stay on the CPU at every
    profile): min(requested, jobs, CPU count), also on a GPU machine, where `compute.workers` gives
    1 because a CUDA context cannot be shared with spawned workers."""
    return max(1, min(int(requested), int(jobs), os.cpu_count() or 1))


__all__ = ["torch_worker", "to_device", "cpu_workers"]
