"""One device check for the papers that have one: `python -m jobs.device_check [--papers …] [--device cuda|cpu]
[--tiny] [--out-dir DIR] [--projection-out PATH]`.

Runs each paper's benchmarks/<slug>_device_check.py `main` (cpu/device parity of its model's forward
pass, gradient and optimizer step with the script's stated tolerances, its timed slice and the projected
full gpu-profile time from it, `report["projection"]`), then writes one table: DIR/device_check.json
(every report, plus each paper's projected_gpu_profile_s) and DIR/device_check.md (one row per paper,
with the projection as h:mm:ss). `--projection-out PATH` also writes the projections alone as a small
markdown table (paper | projected gpu-profile time | measured on | phases): what results/gpu_projection.md
is generated from. Exit code 1 when any paper's parity fails or its script raises, 2 when CUDA was
asked for and none is seen, else 0. Papers without a script are listed as such.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

from assets.common.device_check import NO_DEVICE

ROOT = Path(__file__).resolve().parents[1]
PARITY_MARKS = ("diff", "max_abs", "max_rel", "agreement", "error")
RATE_MARKS = ("per_s", "seconds")


def script_for(slug: str) -> Path:
    return ROOT / "benchmarks" / f"{slug}_device_check.py"


def papers_with_a_check() -> list[str]:
    from jobs.papers import PAPERS

    return [slug for slug in PAPERS if script_for(slug).exists()]


def _load(slug: str):
    spec = importlib.util.spec_from_file_location(f"{slug}_device_check", script_for(slug))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def flatten(report: dict, prefix: str = "") -> dict:
    """Scalar leaves of a nested report, by dotted key."""
    out = {}
    for key, value in report.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        elif isinstance(value, (bool, int, float, str)) or value is None:
            out[name] = value
    return out


def check_one(slug: str, device: str, tiny: bool, work: Path) -> dict:
    """Run one paper's script: {paper, status, exit_code, wall_s, report}."""
    out = work / f"{slug}.json"
    argv = ["--device", device, "--out", str(out), *(["--tiny"] if tiny else [])]
    started = time.perf_counter()
    try:
        code = int(_load(slug).main(argv))
        error = None
    except Exception:                                   # noqa: BLE001 - a crash is a failed check, reported
        code, error = 1, traceback.format_exc(limit=5)
    wall = time.perf_counter() - started
    report = json.loads(out.read_text()) if out.exists() else {}
    status = {0: "ok", 1: "FAILED", NO_DEVICE: "no device"}.get(code, f"exit {code}")
    if error:
        status = "ERROR"
    return {"paper": slug, "status": status, "exit_code": code, "wall_s": round(wall, 2), "report": report,
            **({"error": error} if error else {})}


def projected_seconds(report: dict) -> float | None:
    """report["projection"]["gpu_profile_s"], or None when the script reports no projection."""
    value = (report.get("projection") or {}).get("gpu_profile_s")
    return float(value) if isinstance(value, (int, float)) else None


def hms(seconds: float | None) -> str:
    """Seconds as h:mm:ss (rounded to the second); "—" for None."""
    if seconds is None:
        return "—"
    total = int(round(seconds))
    return f"{total // 3600}:{total % 3600 // 60:02d}:{total % 60:02d}"


def _numbers(flat: dict, marks: tuple[str, ...]) -> str:
    parts = [f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in flat.items()
             if any(m in k.rsplit(".", 1)[-1] for m in marks) and isinstance(v, (int, float, bool))]
    return ", ".join(parts) or "—"


def markdown(rows: list[dict], device: str, tiny: bool, missing: list[str]) -> str:
    lines = [f"# Device check ({device}{', tiny' if tiny else ''})", "",
             "| paper | status | wall s | parity (cpu vs device) | timed slice | projected gpu profile |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        flat = {k: v for k, v in flatten(r["report"]).items() if not k.startswith("projection.")}
        lines.append(f"| {r['paper']} | {r['status']} | {r['wall_s']:.1f} | {_numbers(flat, PARITY_MARKS)} | "
                     f"{_numbers(flat, RATE_MARKS)} | {hms(projected_seconds(r['report']))} |")
    if missing:
        lines += ["", f"No device-check script yet: {', '.join(missing)}."]
    return "\n".join(lines) + "\n"


def projection_markdown(rows: list[dict], device: str, tiny: bool) -> str:
    """The projections alone: paper | projected gpu-profile time | measured on | phases (each phase's
    share of the projection, largest first), and each paper's note below the table."""
    measured = f"{device}{' (tiny sizes)' if tiny else ''}"
    lines = ["# Projected gpu-profile time per paper", "",
             "From each paper's timed slice (`python -m jobs.device_check`): seconds per unit measured on the "
             "device × the units (steps × runs × seeds) its gpu profile runs. What each projection leaves out "
             "is noted below the table.", "",
             "| paper | projected gpu-profile time | measured on | phases |", "|---|---|---|---|"]
    notes = []
    for r in rows:
        projection = r["report"].get("projection") or {}
        total = projected_seconds(r["report"])
        parts = sorted(projection.get("parts", []), key=lambda x: -x["seconds"])
        phases = "; ".join(f"{x['what']}: {hms(x['seconds'])} ({x['units']:,.0f} × {x['seconds_per_unit']:.3g} s)"
                           for x in parts) or "—"
        lines.append(f"| {r['paper']} | {hms(total)} | {measured} | {phases} |")
        if projection.get("note"):
            notes.append(f"- {r['paper']}: {projection['note']}")
    if notes:
        lines += ["", "Left out of the projections:", *notes]
    return "\n".join(lines) + "\n"


def exit_code(rows: list[dict]) -> int:
    codes = [r["exit_code"] for r in rows]
    if any(c not in (0, NO_DEVICE) for c in codes):
        return 1
    return NO_DEVICE if codes and all(c == NO_DEVICE for c in codes) else 0


def main(argv: list[str] | None = None) -> int:
    from jobs.papers import PAPERS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--papers", nargs="*", default=None, help="slugs (default: every paper with a script)")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--tiny", action="store_true", help="small sizes (tests)")
    ap.add_argument("--out-dir", default=str(ROOT / "data" / "device_check"))
    ap.add_argument("--projection-out", default="", help="also write the projections as a markdown table here")
    args = ap.parse_args(argv)
    available = papers_with_a_check()
    wanted = list(args.papers) if args.papers else available
    unknown = [s for s in wanted if s not in PAPERS]
    if unknown:
        ap.error(f"unknown papers {unknown}; known: {', '.join(PAPERS)}")
    missing = [s for s in (wanted if args.papers else PAPERS) if s not in available]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for slug in [s for s in wanted if s in available]:
            print(f"== {slug}", file=sys.stderr, flush=True)
            rows.append(check_one(slug, args.device, args.tiny, Path(tmp)))
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    code = exit_code(rows)
    for r in rows:
        r["projected_gpu_profile_s"] = projected_seconds(r["report"])
        r["projected_gpu_profile"] = hms(r["projected_gpu_profile_s"])
    (out_dir / "device_check.json").write_text(json.dumps(
        {"device": args.device, "tiny": args.tiny, "exit_code": code, "papers": rows, "no_script": missing},
        indent=1, default=str))
    (out_dir / "device_check.md").write_text(markdown(rows, args.device, args.tiny, missing))
    if args.projection_out:
        Path(args.projection_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.projection_out).write_text(projection_markdown(rows, args.device, args.tiny))
    print((out_dir / "device_check.md").read_text())
    return code


if __name__ == "__main__":
    sys.exit(main())
