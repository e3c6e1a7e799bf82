"""What each vcot asset computes: corpus verification, queries, proofs, budgets, lifting,
blocks, tasks, completions and scores — pure code (no Dagster), worker functions at module
level (assets.common.parallel.spawn_imap spawns them)."""
from __future__ import annotations

import json
import time
from typing import Any, Callable

import numpy as np
import pandas as pd

from assets.common.parallel import spawn_imap
from assets.vcot import bench, judge, lift, smt, vc
from assets.vcot import completers as C
from assets.vcot import lang as L

Log = Callable[[str], None]


# ----------------------------------------------------------------------------- corpus, queries

def corpus_verdicts(corpus: pd.DataFrame, rlimit: int) -> pd.DataFrame:
    """One row per program: parses, round-trips, verifies (failing obligations named)."""
    rows = []
    for r in corpus.itertuples():
        row = {"program_id": r.program_id, "round_trip": False, "verifies": False, "failing": ""}
        try:
            program = L.parse(r.text)
            row["round_trip"] = L.print_program(program) == r.text and L.parse(L.print_program(program)) == program
            problems = L.check_names(program)
            if problems:
                row["failing"] = "; ".join(problems[:3])
            else:
                bad = [ob for ob, v in vc.verify(program, rlimit) if not v.proved]
                row["verifies"] = not bad
                row["failing"] = "; ".join(f"{ob.fn}: {ob.label}" for ob in bad[:3])
        except L.MiniVerusError as err:
            row["failing"] = str(err)
        rows.append(row)
    return pd.DataFrame(rows)


def vc_queries(corpus: pd.DataFrame, rlimit: int, seed: int = 0) -> pd.DataFrame:
    """Every obligation of every program: SMT-LIB2 text (spec-fn axioms + path + ¬goal),
    status and rlimit used under Verus's options at the provisional cap."""
    rows = []
    for r in corpus.itertuples():
        program = L.parse(r.text)
        vcs = vc.generate(program)
        for ob in vcs.obligations:
            assertions = vcs.assertions(ob)
            solver = smt.make_solver(vcs.ctx, "verus", rlimit, seed)
            for a in assertions:
                solver.add(a)
            verdict = smt.run(solver)
            rows.append({"program_id": r.program_id, "query_id": f"{r.program_id}/{ob.oid}", "fn": ob.fn,
                         "kind": ob.kind, "label": ob.label, "status": verdict.status, "rlimit": verdict.rlimit,
                         "reason": verdict.reason, "n_assertions": len(assertions),
                         "smt2": smt.smt2_text(assertions, vcs.ctx)})
    return pd.DataFrame(rows)


def proof_summary(smt2: str, rlimit: int, seed: int = 0) -> dict:
    """Replay one query with proofs on: rule histogram, tier counts, liftable high-tier
    nodes (facts of the context), or the unknown rule / missing proof."""
    ctx = smt.proof_context()
    assertions = smt.parse_smt2(smt2, ctx)
    verdict, proof = smt.prove_with_proof(assertions, ctx, rlimit, seed)
    out = {"status": verdict.status, "has_proof": proof is not None, "unknown_rule": "", "nodes": 0,
           "histogram": "{}", "high": 0, "medium": 0, "low": 0, "liftable": 0}
    if proof is None:
        return out
    try:
        nodes = smt.proof_dag(proof, assertions[-1])
    except smt.SolverError as err:
        out["unknown_rule"] = str(err)
        return out
    hist = smt.rule_histogram(nodes)
    goal_quants = lift.goal_quantifiers(nodes)
    out.update(nodes=len(nodes), histogram=json.dumps(hist, sort_keys=True), **smt.tier_counts(hist),
               liftable=sum(lift._usable(n, goal_quants) for n in nodes))
    return out


def z3_proofs(queries: pd.DataFrame, rlimit: int) -> pd.DataFrame:
    rows = []
    for r in queries.itertuples():
        rows.append({"program_id": r.program_id, "query_id": r.query_id, "kind": r.kind,
                     **proof_summary(r.smt2, rlimit), "z3_version": smt.Z3_VERSION})
    return pd.DataFrame(rows)


def solver_budget(queries: pd.DataFrame, cap_factor: float, probe: int) -> dict:
    """The decision rule: cap = cap_factor × the corpus's largest rlimit; the restricted
    (triviality) solver gets the median rlimit of a corpus query."""
    used = queries["rlimit"].to_numpy(dtype=float)
    cap = int(np.ceil(cap_factor * used.max())) if used.size else probe
    trivial = int(np.median(used)) if used.size else probe
    return {"rlimit_cap": cap, "trivial_rlimit": trivial, "corpus_max_rlimit": int(used.max()) if used.size else 0,
            "corpus_median_rlimit": trivial, "cap_factor": float(cap_factor), "probe": int(probe),
            "z3_version": smt.Z3_VERSION, "arith_solver_proofs": 2}


# ----------------------------------------------------------------------------- lifting

def lift_job(job: tuple) -> dict:
    """Worker: lift one program → {row, steps, seconds}; a failure is an `excluded` row."""
    program_id, family, text, cfg = job
    t0 = time.perf_counter()
    program = L.parse(text)
    t_verify = time.perf_counter()
    lift.require_verifies(program, cfg.rlimit, cfg.seed)
    verify_seconds = time.perf_counter() - t_verify
    try:
        res = lift.lift(program, cfg)
    except lift.LiftFailure as err:
        return {"row": {"program_id": program_id, "family": family, "status": "excluded", "reason": str(err),
                        "text": "", "verified": False, "steps_json": "[]"}, "steps": [],
                "seconds": time.perf_counter() - t0, "verify_seconds": verify_seconds}
    verified = not lift.failing(res.program, cfg.rlimit, cfg.seed)
    counts = bench.block_counts(res.text)
    row = {"program_id": program_id, "family": family, "status": "lifted", "reason": "; ".join(res.repair_log),
           "text": res.text, "verified": verified, "queries": res.queries,
           "coverage": json.dumps(res.coverage, sort_keys=True),
           "candidates": json.dumps(res.candidates, sort_keys=True),
           "min_coverage": float(min(res.coverage.values())), "histogram": json.dumps(res.histogram, sort_keys=True),
           "rounds": res.rounds, "repair_rounds": res.repair_rounds,
           "proof_lines_before": res.proof_lines_before, "proof_lines_after": res.proof_lines_after,
           "steps_kept": len(res.kept), "steps_total": sum(s.status != "trivial" for s in res.steps),
           "trivial_conclusions": res.trivial_conclusions, "untranslatable": res.untranslatable,
           "unpruned_lines": res.proof_lines_after + sum(s.text.count("\n") + 1 for s in res.steps
                                                          if s.status != "kept"),
           **{f"{k}_blocks": v for k, v in counts.items()}}
    steps = [{"program_id": program_id, **s.row()} for s in res.steps]
    row["steps_json"] = json.dumps(steps, sort_keys=True)
    return {"row": row, "steps": steps, "seconds": time.perf_counter() - t0, "verify_seconds": verify_seconds}


def lift_corpus(corpus: pd.DataFrame, budget: dict, params: Any, workers: int, seed: int, log: Log
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(programs with their steps as JSON, timings) for the whole corpus."""
    cfg = lift.LiftConfig(rlimit=budget["rlimit_cap"], trivial_rlimit=budget["trivial_rlimit"],
                          coverage_target=params.lift.coverage_target, max_rounds=params.lift.max_rounds,
                          max_repair=params.lift.max_repair, seed=seed)
    jobs = [(r.program_id, r.family, r.text, cfg) for r in corpus.itertuples()]
    rows, timings = [], []
    for k, out in enumerate(spawn_imap(lift_job, jobs, workers), 1):
        rows.append(out["row"])
        timings.append({"program_id": out["row"]["program_id"], "lift_seconds": out["seconds"],
                        "verify_seconds": out["verify_seconds"]})
        log(f"[{k}/{len(jobs)}] lifted {out['row']['program_id']}: {out['row']['status']}, "
            f"{out['row'].get('steps_kept', 0)} steps, {out['seconds']:.1f} s")
    return pd.DataFrame(rows), pd.DataFrame(timings)


STEP_COLUMNS = ["program_id", "step_id", "text", "slot", "rule", "category", "status", "round", "provenance"]


def lift_steps(programs: pd.DataFrame) -> pd.DataFrame:
    """Every candidate step of every lifted program, with its status and provenance."""
    rows = [s for js in programs["steps_json"] for s in json.loads(js)]
    return pd.DataFrame(rows, columns=STEP_COLUMNS)


def semantic_blocks(programs: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for p in programs.itertuples():
        found = bench.blocks(p.text)
        exec_blocks = [b for b in found if b.exec_block]
        third_of = {b.block_id: name for name, bs in bench.thirds(exec_blocks).items() for b in bs} \
            if len(exec_blocks) >= 3 else {}
        for chain, b in enumerate(found):
            rows.append({"program_id": p.program_id, "family": p.family, "block_id": b.block_id, "type": b.kind,
                         "chain_index": chain, "third": third_of.get(b.block_id, ""), "start": b.start,
                         "end": b.end, "lines": b.end - b.start})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- completions and scores

def complete_job(job: tuple) -> dict:
    """Worker: every completer's completion of every task of one program."""
    program_id, text, tasks, pool, names, rlimit, trivial_rlimit, budget, learned, seed = job
    retrieval = C.Retrieval(pool) if "retrieval" in names else None
    solver = C.SolverGuided(text, rlimit, trivial_rlimit, budget, seed) if "solver" in names else None
    model = None
    if learned is not None and "learned" in names:
        import torch

        from assets.vcot import learned as LC

        torch.set_num_threads(1)
        model = learned["models"].get(learned["family_of"][program_id])
    rows, seconds = [], {}
    for task in tasks:
        task = {**task, "holes": json.loads(task["holes"])}
        for name in names:
            t0 = time.perf_counter()
            if name == "null":
                comp = C.null(task)
            elif name == "oracle":
                comp = C.oracle(task)
            elif name == "trivial":
                comp = C.trivial(task)
            elif name == "retrieval":
                comp = retrieval.complete(task, text)
            elif name == "solver":
                comp = solver.complete(task)
            elif name == "learned" and model is not None:
                comp = LC.complete(model, learned["vocab"], task, learned["cfg"], torch)
            else:
                comp = C.null(task)
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - t0
            rows.append({"task_id": task["task_id"], "program_id": program_id, "completer": name,
                         "dimension": task["dimension"], "completion": json.dumps(comp, sort_keys=True)})
    return {"program_id": program_id, "rows": rows, "seconds": seconds, "tasks": len(tasks)}


def score_job(job: tuple) -> dict:
    """Worker: score one program's completions (SynAcc, SemAcc, Acc, Verified)."""
    program_id, text, tasks, completions, verified_for, default_z3, rlimit, seed = job
    context = judge.ProgramContext(text, rlimit, seed)
    scorer = judge.Judge(context)
    by_id = {t["task_id"]: {**t, "holes": json.loads(t["holes"])} for t in tasks}
    rows, seconds, counts = [], {}, {}
    for c in completions:
        task = by_id[c["task_id"]]
        comp = json.loads(c["completion"])
        name = c["completer"]
        t0 = time.perf_counter()
        s = scorer.score(task, comp, check_verified=name in verified_for)
        verified_default = _verified_default(context, task, comp) if default_z3 and name == "null" else None
        seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - t0
        counts[name] = counts.get(name, 0) + 1
        rows.append({"task_id": task["task_id"], "program_id": program_id, "family": task["family"],
                     "completer": name, "dimension": task["dimension"], "bucket": task["bucket"],
                     "type": task["type"], "loc": task["loc"], "n_holes": task["n_holes"],
                     "syn": s.syn, "sem": s.sem, "acc": s.acc, "parses": s.parses,
                     "verified": s.verified, "verified_default": verified_default,
                     "unknown_holes": s.unknown_holes, "holes_equivalent": sum(v.equivalent for v in s.holes),
                     "reason": "; ".join(s.reasons)[:300]})
    t0 = time.perf_counter()
    vc.verify(context.program, rlimit, "verus", seed)       # the judge's speed vs re-verifying the program
    return {"program_id": program_id, "rows": rows, "seconds": seconds, "counts": counts,
            "reverify_seconds": time.perf_counter() - t0}


def _verified_default(context: judge.ProgramContext, task: dict, comp: dict) -> bool:
    """The null completion's program under Z3's default options (MBQI, auto-config on)."""
    filled = dict(comp)
    for h in task["holes"]:
        if h["kind"] == "lemma" and not filled.get(h["hole_id"], "").strip():
            filled[h["hole_id"]] = "{\n}"
    try:
        program = L.parse(bench.fill(task["masked"], filled, task["holes"]))
    except L.MiniVerusError:
        return False
    return all(v.proved for _, v in vc.verify(program, context.rlimit, "default", context.seed))


def scored_subset(tasks: pd.DataFrame, per_dimension: int) -> pd.DataFrame:
    """The tasks that are completed and scored: all (per_dimension = 0), or per program and
    dimension `per_dimension` evenly spaced ones in task order (first and last included)."""
    if per_dimension <= 0:
        return tasks
    keep = []
    for _, g in tasks.groupby(["program_id", "dimension"], sort=True):
        idx = np.unique(np.linspace(0, len(g) - 1, min(per_dimension, len(g))).round().astype(int))
        keep += list(g.index[idx])
    return tasks.loc[sorted(keep)]


def complete_all(programs: pd.DataFrame, tasks: pd.DataFrame, params: Any, budget: dict, learned: dict | None,
                 workers: int, seed: int, log: Log) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(completions, timings): every completer on every task (on `scored_subset` of them)."""
    tasks = scored_subset(tasks, params.tasks_per_dimension)
    names = list(params.completers) + (["learned"] if learned is not None else [])
    pool = programs[["program_id", "family", "text"]].to_dict("records")
    texts = dict(zip(programs["program_id"], programs["text"]))
    by_program = {pid: g.to_dict("records") for pid, g in tasks.groupby("program_id", sort=True)}
    jobs = [(pid, texts[pid], by_program[pid], pool, names, budget["rlimit_cap"], budget["trivial_rlimit"],
             params.solver_budget, learned, seed) for pid in sorted(by_program)]
    rows, timings = [], []
    for k, out in enumerate(spawn_imap(complete_job, jobs, workers if learned is None else 1), 1):
        rows += out["rows"]
        timings += [{"program_id": out["program_id"], "completer": n, "complete_seconds": t, "tasks": out["tasks"]}
                    for n, t in out["seconds"].items()]
        log(f"[{k}/{len(jobs)}] completed {out['program_id']} ({out['tasks']} tasks × {len(names)} completers)")
    return pd.DataFrame(rows), pd.DataFrame(timings)


def score_all(programs: pd.DataFrame, tasks: pd.DataFrame, completions: pd.DataFrame, params: Any, budget: dict,
              workers: int, seed: int, log: Log) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(scores, timings) of every completion."""
    texts = dict(zip(programs["program_id"], programs["text"]))
    by_program = {pid: g.to_dict("records") for pid, g in tasks.groupby("program_id", sort=True)}
    comps = {pid: g.to_dict("records") for pid, g in completions.groupby("program_id", sort=True)}
    jobs = [(pid, texts[pid], by_program[pid], comps.get(pid, []), tuple(params.verified_completers),
             params.default_z3, budget["rlimit_cap"], seed) for pid in sorted(by_program)]
    rows, timings = [], []
    for k, out in enumerate(spawn_imap(score_job, jobs, workers), 1):
        rows += out["rows"]
        timings += [{"program_id": out["program_id"], "completer": n, "judge_seconds": t,
                     "tasks": out["counts"][n], "reverify_seconds": out["reverify_seconds"]}
                    for n, t in out["seconds"].items()]
        log(f"[{k}/{len(jobs)}] scored {out['program_id']}")
    return pd.DataFrame(rows), pd.DataFrame(timings)


# ----------------------------------------------------------------------------- learned completer

def train_learned(programs: pd.DataFrame, cfg: Any, torch: Any, seed: int, log: Log, device: str = "cpu"
                  ) -> tuple[dict, dict]:
    """One model per held-out family, trained on `device`: (CPU state dict with "<family>.<param>" keys,
    sidecar info)."""
    from assets.vcot import learned as LC

    records = programs[["program_id", "family", "text"]].to_dict("records")
    vocab = LC.vocabulary(records)
    state, info = {}, {"vocab": vocab, "losses": {}}
    for family in sorted(programs["family"].unique()):
        train_on = [r for r in records if r["family"] != family]
        if not train_on:
            continue
        torch.manual_seed(seed)
        model, loss = LC.train(train_on, vocab, cfg, torch, seed, log, device)
        info["losses"][family] = loss
        state.update({f"{family}.{k}": v for k, v in model.state_dict().items()})
    return state, info


def load_learned(state: dict, sidecar: dict, cfg: Any, programs: pd.DataFrame) -> dict:
    from assets.common.tiny_lm import TinyLM, TinyLMConfig

    vocab = sidecar["vocab"]
    models = {}
    for family in sidecar["losses"]:
        model = TinyLM(TinyLMConfig(vocab_size=len(vocab), d_model=cfg.d_model, n_heads=cfg.n_heads,
                                    n_layers=cfg.n_layers, context=cfg.context))
        model.load_state_dict({k[len(family) + 1:]: v for k, v in state.items() if k.startswith(family + ".")})
        model.eval()
        models[family] = model
    return {"models": models, "vocab": vocab, "cfg": cfg,
            "family_of": dict(zip(programs["program_id"], programs["family"]))}
