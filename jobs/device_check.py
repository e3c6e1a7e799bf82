"""One device check for the papers that have one: `python -m jobs.device_check [--papers …] [--device cuda|cpu]
[--tiny] [--out-dir DIR]`.

Runs each paper's benchmarks/<slug>_device_check.py `main` (cpu/device parity of its model's forward
pass, gradient and optimizer step with the script's stated tolerances, and its timed slice), then writes
one table: DIR/device_check.json (every report) and DIR/device_check.md (one row per paper). Exit code
1 when any paper's parity fails or its script raises, 2 when CUDA was asked for and none is seen, else 0.
Papers without a script are listed as such (issue 49: the other papers' checks are still to write).
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


def _numbers(flat: dict, marks: tuple[str, ...]) -> str:
    parts = [f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in flat.items()
             if any(m in k.rsplit(".", 1)[-1] for m in marks) and isinstance(v, (int, float, bool))]
    return ", ".join(parts) or "—"


def markdown(rows: list[dict], device: str, tiny: bool, missing: list[str]) -> str:
    lines = [f"# Device check ({device}{', tiny' if tiny else ''})", "",
             "| paper | status | wall s | parity (cpu vs device) | timed slice |", "|---|---|---|---|---|"]
    for r in rows:
        flat = flatten(r["report"])
        lines.append(f"| {r['paper']} | {r['status']} | {r['wall_s']:.1f} | {_numbers(flat, PARITY_MARKS)} | "
                     f"{_numbers(flat, RATE_MARKS)} |")
    if missing:
        lines += ["", f"No device-check script yet: {', '.join(missing)}."]
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
    (out_dir / "device_check.json").write_text(json.dumps(
        {"device": args.device, "tiny": args.tiny, "exit_code": code, "papers": rows, "no_script": missing},
        indent=1, default=str))
    (out_dir / "device_check.md").write_text(markdown(rows, args.device, args.tiny, missing))
    print((out_dir / "device_check.md").read_text())
    return code


if __name__ == "__main__":
    sys.exit(main())
