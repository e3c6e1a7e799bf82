"""vcot cost ratios on one core: lifting vs plain verification, judging vs re-verifying.

For the first n programs of the corpus generator (cpu profile's seed-free default, 2 per
family by default) this measures, in CPU seconds of this process (`time.process_time`, so
the numbers do not depend on the other load of a shared machine; Z3 runs single-threaded):

- verify: checking every obligation of the program once under Verus's options;
- lift: the whole deterministic VCoT-Lift (proofs, transform → check, prune, repair);
- complete: each offline completer on every task of the program (solver-guided: ≤ budget
  Z3 checks per task);
- judge: SynAcc + SemAcc of each completion, and Verified (re-verifying the completed
  program) separately.

It reports the ratios the issue asks for (lifting cost per program vs plain verification;
judge tasks/s vs re-verifying the program) and, from the per-program costs, an estimate of
the cpu profile's wall time alone on 2 cores (40 programs, 2 worker processes). Both ratios are
rows of results/bench.csv (benchmarks/_bench.py): lifting vs verifying a program, and judging
one task vs re-verifying one program (lower is better, so ratio < 1 says lifting costs more).

Usage: python benchmarks/vcot_cost.py [--programs 8] [--out /tmp/vcot_cost.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assets.vcot import bench, data, judge, lift, vc  # noqa: E402
from assets.vcot import completers as C  # noqa: E402
from assets.vcot import lang as L  # noqa: E402
from benchmarks._bench import record  # noqa: E402


def cpu(fn, *args):
    t0 = time.process_time()
    out = fn(*args)
    return out, time.process_time() - t0


def _each(fn, tasks):
    return [fn(t) for t in tasks]


def _judge(scorer, tasks, comps):
    return [scorer.score(t, c, check_verified=False) for t, c in zip(tasks, comps)]


def _verified(scorer, tasks, comps):
    return [scorer.verified_with_stubs(t, c) for t, c in zip(tasks, comps)]


def _retrieve(retrieval, text):
    return lambda task: retrieval.complete(task, text)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=8)
    ap.add_argument("--rlimit", type=int, default=30_000)
    ap.add_argument("--trivial-rlimit", type=int, default=1_000)
    ap.add_argument("--budget", type=int, default=40)
    ap.add_argument("--cpu-programs", type=int, default=40)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    corpus = data.generate_corpus(args.programs, 0)
    cfg = lift.LiftConfig(rlimit=args.rlimit, trivial_rlimit=args.trivial_rlimit)
    rows, lifted = [], []
    for r in corpus.itertuples():
        program = L.parse(r.text)
        _, t_verify = cpu(vc.verify, program, args.rlimit)
        res, t_lift = cpu(lift.lift, program, cfg)
        lifted.append({"program_id": r.program_id, "family": r.family, "text": res.text})
        rows.append({"program_id": r.program_id, "verify_s": t_verify, "lift_s": t_lift})
    programs = pd.DataFrame(lifted)
    tasks = bench.build_tasks(programs, (0,), lambda pid, seed, k: 1000 * seed + k)
    pool = programs.to_dict("records")
    retrieval = C.Retrieval(pool)
    for row, prog in zip(rows, lifted):
        mine = [{**t, "holes": json.loads(t["holes"])} for t in tasks[tasks["program_id"] == prog["program_id"]]
                .to_dict("records")]
        solver = C.SolverGuided(prog["text"], args.rlimit, args.trivial_rlimit, args.budget)
        context, t_ctx = cpu(judge.ProgramContext, prog["text"], args.rlimit)
        scorer = judge.Judge(context)
        row.update(tasks=len(mine), judge_context_s=t_ctx)
        completers = {"null": C.null, "oracle": C.oracle, "trivial": C.trivial, "solver": solver.complete,
                      "retrieval": _retrieve(retrieval, prog["text"])}
        for name, fn in completers.items():
            comps, t_complete = cpu(_each, fn, mine)
            _, t_judge = cpu(_judge, scorer, mine, comps)
            _, t_verified = cpu(_verified, scorer, mine, comps)
            row.update({f"{name}_complete_s": t_complete, f"{name}_judge_s": t_judge,
                        f"{name}_verified_s": t_verified})
        _, t_reverify = cpu(vc.verify, context.program, args.rlimit)
        row["reverify_s"] = t_reverify
    frame = pd.DataFrame(rows)
    n_tasks = frame["tasks"].sum()
    names = ("null", "oracle", "trivial", "retrieval", "solver")
    judge_s = sum(frame[f"{n}_judge_s"].sum() for n in names)
    per_program = (frame["lift_s"] + frame["judge_context_s"]
                   + sum(frame[f"{n}_{k}_s"] for n in names for k in ("complete", "judge", "verified")))
    summary = {
        "programs": int(len(frame)), "tasks": int(n_tasks),
        "lift_vs_verify": float(frame["lift_s"].sum() / frame["verify_s"].sum()),
        "verify_s_per_program": float(frame["verify_s"].mean()), "lift_s_per_program": float(frame["lift_s"].mean()),
        "judge_tasks_per_s": float(len(names) * n_tasks / judge_s),
        "reverify_programs_per_s": float(len(frame) / frame["reverify_s"].sum()),
        "judge_vs_reverify": float((frame["reverify_s"].sum() / len(frame)) / (judge_s / (len(names) * n_tasks))),
        "solver_complete_s_per_task": float(frame["solver_complete_s"].sum() / n_tasks),
        "cpu_s_per_program": float(per_program.mean()),
        "cpu_profile_estimate_s_2_workers": float(per_program.mean() * args.cpu_programs / 2),
        "per_program": json.loads(frame.round(3).to_json(orient="records")),
    }
    print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in summary.items()
                      if k != "per_program"}, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1, default=float))
    record("vcot_cost", "cpu_s_per_program@lift_vs_verify", summary["lift_s_per_program"],
           summary["verify_s_per_program"], "cpu-s", "lower")
    record("vcot_cost", "cpu_s@judge_task_vs_reverify_program", 1.0 / summary["judge_tasks_per_s"],
           1.0 / summary["reverify_programs_per_s"], "cpu-s", "lower")
    return summary


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
