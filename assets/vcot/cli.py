"""Bring your own: lift, mask and score a user's MiniVerus program (or any model's completions).

    python -m assets.vcot.cli lift prog.rs [--out lifted.rs] [--steps steps.jsonl] [--rlimit N]
    python -m assets.vcot.cli mask lifted.rs --out tasks.jsonl [--seed 0]
    python -m assets.vcot.cli score lifted.rs --tasks tasks.jsonl --completions completions.jsonl
                                    [--out scores.jsonl] [--no-verified]

`lift` verifies the program under Verus's options (a failing obligation is named), lifts its Z3
proofs into checked, pruned, repaired steps and prints the VCoT program. `mask` builds the Ratio /
Type / Loc tasks of a (lifted, canonical) program as JSONL: task_id, dimension, bucket, type, loc,
masked (the prompt) and holes ([{hole_id, block_id, kind, gold}]). `score` reads completions as
JSONL, one object per task: {"task_id": ..., "completion": {"h0": text, ...}} (or the hole ids at
the top level), and writes SynAcc / SemAcc / Acc / Verified per task plus a summary. Bad input
(parse errors with line:col, unknown names, assume / admit, a program that does not verify,
rlimit exhaustion, unknown task or hole ids; a missing, empty, binary or non-UTF-8 file; a JSONL
with no records; --rlimit < 1) exits with status 2 and a one-line reason naming the file.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from assets.common import inputs as I
from assets.common.inputs import InputError, check_range, read_text, run_cli
from assets.vcot import bench, judge, lift, vc
from assets.vcot import lang as L

DEFAULT_RLIMIT = 200_000       # per query; the corpus's largest query needs ≈ 10⁴ (solver_budget's cap is 4×)
DEFAULT_TRIVIAL = 1_200      # ≈ the median corpus query (solver_budget's triviality budget)


class CliError(InputError, RuntimeError):
    """Bad user input: reported as one line, exit status 2."""


def load_program(path: str | Path) -> tuple[str, L.Program]:
    text = read_text(path)
    try:
        program = L.parse(text)
    except L.MiniVerusError as err:
        raise CliError(f"{path}: {err}") from None
    problems = L.check_names(program)
    if problems:
        raise CliError(f"{path}: " + "; ".join(problems))
    return text, program


def require_verifies(program: L.Program, rlimit: int, path: str | Path) -> None:
    bad = [(ob, v) for ob, v in vc.verify(program, rlimit) if not v.proved]
    if bad:
        ob, v = bad[0]
        why = f"rlimit {rlimit} exhausted" if v.status == "unknown" else "counterexample (sat)"
        raise CliError(f"{path}: does not verify: {ob.fn}: {ob.label} ({why})"
                       + (f" and {len(bad) - 1} more" if len(bad) > 1 else ""))


def cmd_lift(args: argparse.Namespace) -> dict:
    _, program = load_program(args.program)
    require_verifies(program, args.rlimit, args.program)
    try:
        res = lift.lift(program, lift.LiftConfig(rlimit=args.rlimit, trivial_rlimit=args.trivial_rlimit))
    except lift.LiftFailure as err:
        raise CliError(f"{args.program}: {err}") from None
    if args.out:
        Path(args.out).write_text(res.text)
    else:
        sys.stdout.write(res.text)
    if args.steps:
        with open(args.steps, "w") as f:
            for s in res.steps:
                f.write(json.dumps(s.row(), sort_keys=True) + "\n")
    return {"steps_kept": len(res.kept), "coverage": res.coverage, "proof_lines_before": res.proof_lines_before,
            "proof_lines_after": res.proof_lines_after, "repair_rounds": res.repair_rounds}


def cmd_mask(args: argparse.Namespace) -> dict:
    text, program = load_program(args.program)
    canonical = L.print_program(program)
    if canonical != text:
        raise CliError(f"{args.program}: not in canonical layout; write it with `lift --out` first")
    import pandas as pd

    pid = Path(args.program).stem
    tasks = bench.build_tasks(pd.DataFrame([{"program_id": pid, "family": "user", "text": text}]), (args.seed,),
                              lambda p, seed, k: 1_000_003 * seed + k)
    with open(args.out, "w") as f:
        for t in tasks.to_dict("records"):
            f.write(json.dumps({**t, "holes": json.loads(t["holes"])}, sort_keys=True) + "\n")
    return {"tasks": tasks["dimension"].value_counts().to_dict() if len(tasks) else {}}


def read_jsonl(path: str | Path) -> list[dict]:
    rows = I.read_jsonl(path)        # missing / empty / not UTF-8 / line N column C / no records
    for k, row in enumerate(rows):
        if not isinstance(row, dict):
            raise CliError(f"{path}: record {k + 1}: a JSON object is needed, got {type(row).__name__}")
    return rows


def completion_of(row: dict) -> dict[str, str]:
    comp = row.get("completion", {k: v for k, v in row.items() if k != "task_id"})
    if not isinstance(comp, dict) or not all(isinstance(v, str) for v in comp.values()):
        raise CliError(f"task {row.get('task_id')!r}: completion must map hole ids to text")
    return comp


def cmd_score(args: argparse.Namespace) -> dict:
    text, _ = load_program(args.program)
    tasks = {t["task_id"]: t for t in read_jsonl(args.tasks)}
    scorer = judge.Judge(judge.ProgramContext(text, args.rlimit))
    rows = []
    for row in read_jsonl(args.completions):
        task = tasks.get(row.get("task_id"))
        if task is None:
            raise CliError(f"unknown task id {row.get('task_id')!r} (not in {args.tasks})")
        comp = completion_of(row)
        unknown = sorted(set(comp) - {h["hole_id"] for h in task["holes"]})
        if unknown:
            raise CliError(f"task {task['task_id']}: unknown hole ids {unknown}")
        s = scorer.score(task, comp, check_verified=not args.no_verified)
        rows.append({"task_id": task["task_id"], "dimension": task["dimension"], "bucket": task["bucket"],
                     "syn": s.syn, "sem": s.sem, "acc": s.acc, "verified": s.verified,
                     "unknown_holes": s.unknown_holes, "reasons": s.reasons})
    if args.out:
        with open(args.out, "w") as f:
            for r in rows:
                f.write(json.dumps(r, sort_keys=True) + "\n")
    n = max(1, len(rows))
    return {"tasks": len(rows), "SynAcc": 100 * sum(r["syn"] for r in rows) / n,
            "SemAcc": 100 * sum(r["sem"] for r in rows) / n, "Acc": 100 * sum(r["acc"] for r in rows) / n}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m assets.vcot.cli", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("lift", help="verify and lift a MiniVerus program")
    p.add_argument("program")
    p.add_argument("--out")
    p.add_argument("--steps", help="JSONL of every candidate step with its provenance")
    p.add_argument("--rlimit", type=int, default=DEFAULT_RLIMIT)
    p.add_argument("--trivial-rlimit", type=int, default=DEFAULT_TRIVIAL)
    p = sub.add_parser("mask", help="build Ratio / Type / Loc completion tasks (JSONL)")
    p.add_argument("program")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("score", help="score completions (JSONL) of the tasks of a program")
    p.add_argument("program")
    p.add_argument("--tasks", required=True)
    p.add_argument("--completions", required=True)
    p.add_argument("--out")
    p.add_argument("--rlimit", type=int, default=DEFAULT_RLIMIT)
    p.add_argument("--no-verified", action="store_true", help="skip re-verifying each completed program")
    return ap


@run_cli
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    for name in ("rlimit", "trivial_rlimit"):
        if hasattr(args, name):
            check_range(f"--{name.replace('_', '-')}", getattr(args, name), 1)
    try:
        summary = {"lift": cmd_lift, "mask": cmd_mask, "score": cmd_score}[args.command](args)
    except (bench.TaskError, L.MiniVerusError, OSError) as err:
        raise InputError(str(err)) from None
    print(json.dumps(summary, sort_keys=True), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
