"""SPGCL training cost versus graph size: epochs/s and peak memory at n = 2000, 10000, 50000.

For each n, a homophilous BoW CSBM (average degree 10, F = 300) is generated, the energy split
and EPS keep probabilities computed, and SPGCL trained full batch with EPS active from the
first epoch (sparse propagation; the n×n similarity only inside the loss, in row blocks
recomputed in the backward above the chunk size). The `spgcl/training_scaling` asset
measures the same at the profile's sizes with the torch profiler's peak.
After one warm-up epoch, `--epochs` epochs are timed.

Peak memory: on CUDA, torch.cuda.max_memory_allocated; on CPU each size runs in its own
subprocess and reports its peak resident set size (ru_maxrss), which includes the Python
interpreter and torch (~0.3-0.4 GB) — a process-level upper bound, not the tensors alone.
The scaling exponent b is the least-squares slope of log(seconds/epoch) on log(n); the dense
loss makes the asymptotic cost O(n²·D), so b → 2 once the n² term dominates.

No baseline is timed in the same run: the comparison is SPGCL against itself across n (the
exponent b), and a baseline method at n = 50 000 would double an already long run. So this is
a scaling study in benchmarks/_bench.py, not part of `make bench`; no results/bench.csv row.

Usage: python benchmarks/spgcl_scaling.py [--sizes 2000 10000 50000] [--epochs 3]
       [--device auto|cpu|cuda] [--hidden 128] [--threads 2] [--out data/reports/spgcl/scaling.json]
"""
from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def measure(n: int, epochs: int, device: str, hidden: int, threads: int, chunk: int) -> dict:
    """Time `epochs` SPGCL epochs on an n-node CSBM; returns one result row."""
    import torch

    from assets.spgcl import data, method, training

    torch.set_num_threads(threads)
    g = data.make_csbm(data.graph_config("bow_homo", n), seed=0)
    energy = method.dirichlet_energy_per_feature(g["x"], g["edge_index"])
    high = method.high_energy_mask(energy, 64)
    keep = method.edge_keep_probability(g["x"][:, ~high], g["edge_index"], 0.8)
    tensors = training.GraphTensors.from_numpy(g["x"], g["edge_index"], high, keep, device)
    hp = {"hidden": hidden, "proj": hidden, "layers": 2, "dropout": 0.3, "lr": 1e-3, "tau": 0.5,
          "pf": 0.3, "edepoch": 0, "chunk": chunk}
    training.train("spgcl", tensors, {**hp, "epochs": 1}, seed=0)          # warm-up (allocator, kernels)
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    _, losses, seconds = training.train("spgcl", tensors, {**hp, "epochs": epochs}, seed=1)
    if device == "cuda":
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() / 2**30
        kind = "cuda max_memory_allocated"
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20   # KiB → GiB (Linux)
        kind = "process peak RSS"
    return {"n": n, "edges": int(g["edge_index"].shape[1] // 2), "device": device, "hidden": hidden,
            "epochs": epochs, "seconds_per_epoch": seconds / epochs, "epochs_per_second": epochs / seconds,
            "peak_memory_gib": peak, "memory_kind": kind, "final_loss": losses[-1]}


def scaling_exponent(rows: list[dict]) -> float:
    if len(rows) < 2:
        return float("nan")
    n = np.log([r["n"] for r in rows])
    t = np.log([r["seconds_per_epoch"] for r in rows])
    return float(np.polyfit(n, t, 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 10000, 50000])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=4096)
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "reports" / "spgcl" / "scaling.json")
    parser.add_argument("--single", type=int, help=argparse.SUPPRESS)   # child process: one size
    args = parser.parse_args()
    import torch

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    if args.single:
        print(json.dumps(measure(args.single, args.epochs, device, args.hidden, args.threads, args.chunk)))
        return
    rows = []
    for n in args.sizes:
        start = time.perf_counter()
        cmd = [sys.executable, __file__, "--single", str(n), "--epochs", str(args.epochs), "--device", device,
               "--hidden", str(args.hidden), "--threads", str(args.threads), "--chunk", str(args.chunk)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"n={n}: failed ({out.stderr.strip().splitlines()[-1] if out.stderr else out.returncode})")
            continue
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"n={n:>6}: {row['epochs_per_second']:.3f} epochs/s, {row['seconds_per_epoch']:.2f} s/epoch, "
              f"peak {row['peak_memory_gib']:.2f} GiB ({row['memory_kind']}); wall {time.perf_counter() - start:.0f} s")
    result = {"rows": rows, "scaling_exponent_time_vs_n": scaling_exponent(rows),
              "machine": platform.platform(), "processor": platform.processor(), "threads": args.threads}
    print(f"scaling exponent (seconds/epoch ∝ n^b): b = {result['scaling_exponent_time_vs_n']:.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
