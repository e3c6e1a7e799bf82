"""Shared scaffolding of the gpu-machine device checks (`benchmarks/<slug>_device_check.py`):
the command line, float32 matmuls on CUDA, and the JSON report — no Dagster.

    args = device_check.arguments(argv, out_default="")          # --device --tiny --out (+ extra)
    torch = device_check.prepare(args.device)                     # None: CUDA asked for, none seen
    ...
    return device_check.finish(report, ok, args.out)

A script inserts the repo root into sys.path before importing this module, so it runs from any
directory.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

NO_DEVICE = 2           # exit code: CUDA was asked for and torch sees no GPU


def arguments(argv: Sequence[str] | None, out_default: str = "",
              extra: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse.Namespace:
    """--device (default cuda), --tiny (small sizes: tests), --out (JSON path), plus `extra`'s."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="small sizes (tests)")
    ap.add_argument("--out", default=out_default)
    if extra is not None:
        extra(ap)
    return ap.parse_args(argv)


def prepare(device: str):
    """torch, set for a parity check on `device`: one CPU thread, TF32 off (CUDA matmuls in
    float32). None, after a message on stderr, when CUDA is asked for and there is none."""
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device: nothing to check (run with --device cpu to exercise the code)", file=sys.stderr)
        return None
    torch.set_num_threads(1)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def synchronizer(device: str) -> Callable[[], None]:
    """A function that waits for the device's queued work (a no-op on the CPU): call it around timings."""
    if device.startswith("cuda"):
        import torch

        return torch.cuda.synchronize
    return lambda: None


def finish(report: dict, ok: bool, out: str = "") -> int:
    """Print the report as JSON (and write it to `out` when given); 0 when ok, else 1."""
    text = json.dumps(report, indent=1)
    print(text, flush=True)
    if out:
        Path(out).write_text(text)
    return 0 if ok else 1


def projection(parts: Sequence[tuple[str, float, float]], note: str = "") -> dict:
    """The projected full gpu-profile time from timed slices.

    parts: (what, measured seconds per unit on the device, units the gpu profile runs), e.g.
    ("rabel_snf training step", 0.012, 4000 * 3), one per phase that costs time. Returns the report's
    `projection` entry: {"gpu_profile_s": Σ seconds·units, "parts": [...], "note": note}, where `note`
    names what the projection leaves out (set-up, evaluation, data generation).
    """
    rows = [{"what": what, "seconds_per_unit": float(s), "units": float(u), "seconds": float(s) * float(u)}
            for what, s, u in parts]
    if any(r["seconds_per_unit"] < 0 or r["units"] < 0 for r in rows):
        raise ValueError(f"projection parts must be non-negative: {rows}")
    return {"gpu_profile_s": round(sum(r["seconds"] for r in rows), 3), "parts": rows, "note": note}
