"""vcot data-quality predicates: pure functions returning the problems found (empty = pass).

definitions.py turns each into a blocking Dagster check (assets/common/checks.gate); tests
call them directly on corrupted inputs.
"""
from __future__ import annotations

import json

import pandas as pd

from assets.common.findings import Finding, expectations, finding
from assets.vcot import bench, smt
from assets.vcot import lang as L
from resources.quality import expect

# a lifted program's blocks: the real corpus has 7.7 per program (4.2 / 1.65 / 2.05); ours
# must be a usable benchmark: every program ≥ 2 blocks, mean within this range
BLOCKS_PER_PROGRAM = (3.0, 15.0)
ORACLE_ACC = 1.0
TRIVIAL_SEMACC_MAX = 0.02


def corpus_valid(frame: pd.DataFrame) -> Finding:
    """GX: unique ids and texts, known families; every program round-trips and verifies
    (the corpus asset's round_trip / verifies columns; the failing obligation is named)."""
    bad = frame[~frame["verifies"] | ~frame["round_trip"]]
    problems = [f"{r.program_id} does not {'round-trip' if not r.round_trip else 'verify'}: {r.failing}"
                for r in bad.itertuples()]
    return expectations(frame, [
        expect("ExpectColumnValuesToBeUnique", column="program_id"),
        expect("ExpectColumnValuesToBeUnique", column="md5"),
        expect("ExpectColumnValuesToBeInSet", column="family", value_set=["diffy", "mbpp", "clover", "bsearch"]),
        expect("ExpectColumnValuesToNotBeNull", column="text"),
        expect("ExpectTableRowCountToBeBetween", min_value=1),
    ], name="vcot_program_corpus", problems=problems)


def queries_unsat(frame: pd.DataFrame, params=None) -> Finding:
    """Every query is unsat (proved) within the provisional cap."""
    problems = []
    for r in frame[frame["status"] != "unsat"].itertuples():
        what = "rlimit exhausted" if "canceled" in r.reason or "resource" in r.reason else r.status
        problems.append(f"{r.query_id} ({r.label}): {what}{' — ' + r.reason if r.reason else ''}")
    if params is not None and len(frame) and int(frame["rlimit"].max()) >= params.rlimit_probe:
        problems.append(f"largest rlimit {int(frame['rlimit'].max())} reaches the cap {params.rlimit_probe}")
    largest = int(frame["rlimit"].max()) if len(frame) else 0
    return finding(problems, ok=f"{len(frame)} queries unsat; largest rlimit {largest}",
                   queries=len(frame))


def proofs_complete(frame: pd.DataFrame) -> Finding:
    """A proof for every unsat query, only the 36 tiered rules, z3 version recorded."""
    problems = [f"{r.query_id}: no proof" for r in frame[~frame["has_proof"]].itertuples()]
    problems += [f"{r.query_id}: {r.unknown_rule}" for r in frame[frame["unknown_rule"] != ""].itertuples()]
    for r in frame.itertuples():
        rules = set(json.loads(r.histogram))
        outside = rules - set(smt.RULE_TIER)
        if outside:
            problems.append(f"{r.query_id}: rules outside the 36: {sorted(outside)}")
    if "z3_version" not in frame or frame["z3_version"].isna().any() or (frame["z3_version"] == "").any():
        problems.append("z3 version not recorded")
    return finding(problems, ok=f"{len(frame)} proofs; z3 {smt.Z3_VERSION}", z3_version=smt.Z3_VERSION)


def budget_sane(value: dict) -> Finding:
    problems = []
    if not 0 < value["trivial_rlimit"] <= value["rlimit_cap"]:
        problems.append(f"triviality rlimit {value['trivial_rlimit']} must be in (0, cap {value['rlimit_cap']}]")
    if value["corpus_max_rlimit"] >= value["rlimit_cap"]:
        problems.append(f"corpus max rlimit {value['corpus_max_rlimit']} ≥ cap {value['rlimit_cap']}")
    return finding(problems, ok=f"cap {value['rlimit_cap']}, triviality budget {value['trivial_rlimit']}")


def lifted_valid(frame: pd.DataFrame, params=None) -> Finding:
    """100 % of lifted programs verify; every category's coverage ≥ target; every kept step
    has provenance to a high-tier proof node; the lift excluded no program."""
    from assets.vcot.runs import lift_steps

    steps = lift_steps(frame)
    target = params.lift.coverage_target if params is not None else 0.9
    problems = [f"{r.program_id} excluded: {r.reason}" for r in frame[frame["status"] != "lifted"].itertuples()]
    lifted = frame[frame["status"] == "lifted"]
    problems += [f"{r.program_id}: the lifted program does not verify"
                 for r in lifted[~lifted["verified"]].itertuples()]
    for r in lifted.itertuples():
        low = {k: v for k, v in json.loads(r.coverage).items() if v < target}
        if low:
            problems.append(f"{r.program_id}: coverage below {target} in {low}")
    kept = steps[steps["status"] == "kept"] if len(steps) else steps
    for r in kept.itertuples():
        prov = [p for p in str(r.provenance).split(";") if p]
        if not prov or not all(smt.RULE_TIER.get(p.rsplit(":", 1)[-1]) == "high" for p in prov):
            problems.append(f"{r.program_id}/{r.step_id}: no provenance to a high-tier proof node ({r.provenance!r})")
    return finding(problems, ok=f"{len(lifted)} lifted programs verify; {len(kept)} steps traced",
                   programs=len(lifted), steps=len(kept))


def blocks_plausible(frame: pd.DataFrame) -> Finding:
    per = frame.groupby("program_id").size()
    problems = [f"{pid}: {n} blocks (need ≥ 2)" for pid, n in per.items() if n < 2]
    low, high = BLOCKS_PER_PROGRAM
    if len(per) and not low <= per.mean() <= high:
        problems.append(f"mean blocks per program {per.mean():.2f} outside [{low}, {high}]")
    bad_types = set(frame["type"]) - set(bench.BLOCK_TYPES)
    if bad_types:
        problems.append(f"unknown block types {sorted(bad_types)}")
    return finding(problems, ok=f"{per.mean():.2f} blocks per program" if len(per) else "no blocks",
                   mean_blocks=float(per.mean()) if len(per) else 0.0)


def tasks_valid(frame: pd.DataFrame, programs: pd.DataFrame, params=None) -> Finding:
    """≥ 1 hole per task; gold re-insertion = the lifted program (byte for byte); buckets in
    {10..100}; task ids unique; counts = Σ N_p (Ratio), types present (Type), 3 × Loc-eligible."""
    problems = []
    if frame["task_id"].duplicated().any():
        problems.append(f"duplicate task ids: {frame.loc[frame['task_id'].duplicated(), 'task_id'].head(3).tolist()}")
    texts = dict(zip(programs["program_id"], programs["text"]))
    for r in frame.itertuples():
        holes = json.loads(r.holes)
        if not holes:
            problems.append(f"{r.task_id}: no hole")
            continue
        if bench.fill(r.masked, {h["hole_id"]: h["gold"] for h in holes}, holes) != texts.get(r.program_id):
            problems.append(f"{r.task_id}: re-inserting the gold blocks does not give the program back")
        if r.dimension == "ratio" and r.bucket not in range(10, 101, 10):
            problems.append(f"{r.task_id}: bucket {r.bucket} not in 10..100")
    seeds = tuple(params.mask_seeds) if params is not None else (0,)
    lifted = programs[programs["status"] == "lifted"] if "status" in programs else programs
    expected = bench.expected_counts(lifted, seeds)
    got = frame["dimension"].value_counts().to_dict()
    for dim, n in expected.items():
        if got.get(dim, 0) != n:
            problems.append(f"{dim}: {got.get(dim, 0)} tasks, expected {n}")
    return finding(problems, ok=f"{len(frame)} tasks: {got}", **{f"tasks_{k}": int(v) for k, v in got.items()})


def completions_clean(frame: pd.DataFrame, tasks: pd.DataFrame) -> Finding:
    """No assume / admit in any completion; every completion names only its task's holes."""
    problems = []
    holes = {r.task_id: {h["hole_id"] for h in json.loads(r.holes)} for r in tasks.itertuples()}
    for r in frame.itertuples():
        comp = json.loads(r.completion)
        if r.task_id not in holes:
            problems.append(f"{r.completer}: unknown task {r.task_id}")
            continue
        extra = set(comp) - holes[r.task_id]
        if extra:
            problems.append(f"{r.completer}/{r.task_id}: unknown holes {sorted(extra)}")
        for hid, text in comp.items():
            if _uses_assume(text):
                problems.append(f"{r.completer}/{r.task_id}/{hid}: uses assume/admit")
    return finding(problems, ok=f"{len(frame)} completions clean")


def _uses_assume(text: str) -> bool:
    import re

    return re.search(r"\b(assume|admit)\s*\(", text) is not None


def scores_sane(frame: pd.DataFrame) -> Finding:
    """The oracle scores Acc 100 on every task; the trivial completer's SemAcc ≤ 2 % (the
    judge does not accept vacuous blocks)."""
    problems = []
    oracle = frame[frame["completer"] == "oracle"]
    if len(oracle) and oracle["acc"].mean() < ORACLE_ACC:
        bad = oracle[oracle["acc"] < 1]
        problems.append(f"oracle Acc {100 * oracle['acc'].mean():.1f} < 100 ({len(bad)} tasks, e.g. "
                        f"{bad['task_id'].head(3).tolist()}: {bad['reason'].head(1).tolist()})")
    trivial = frame[frame["completer"] == "trivial"]
    if len(trivial) and trivial["sem"].mean() > TRIVIAL_SEMACC_MAX:
        problems.append(f"trivial completer SemAcc {100 * trivial['sem'].mean():.1f} % > "
                        f"{100 * TRIVIAL_SEMACC_MAX:.0f} %")
    if frame.empty:
        problems.append("no scores")
    return finding(problems, ok=f"oracle Acc 100 on {len(oracle)} tasks; trivial SemAcc "
                   f"{100 * trivial['sem'].mean() if len(trivial) else 0:.1f} %")


def learned_valid(value: dict) -> Finding:
    if not value.get("enabled"):
        return finding([], ok="learned completer disabled at this profile")
    from resources.artifacts import load_checkpoint

    state, sidecar = load_checkpoint(value)
    import math

    problems = [f"{f}: loss {v}" for f, v in sidecar.get("losses", {}).items() if not math.isfinite(v)]
    if not state:
        problems.append("empty checkpoint")
    return finding(problems, ok=f"{len(sidecar.get('losses', {}))} models reload (weights_only)")


def program_text_valid(text: str) -> list[str]:
    """For the CLI: parse and name problems of one user file (line:col each)."""
    try:
        return L.check_names(L.parse(text))
    except L.MiniVerusError as err:
        return [str(err)]
