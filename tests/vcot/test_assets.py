"""vcot wiring: the smoke group's report, the predicates on corrupted inputs, and gating —
bad input stops the downstream asset (re-running only the gated asset and one downstream on
the stored smoke outputs, after patching the pure function that feeds it)."""
from __future__ import annotations

import json

import pandas as pd

from assets.vcot import bench, checks, data, runs
from tests.conftest import rerun, smoke_run
from tests.vcot import programs as P

run = smoke_run("vcot")


def test_smoke_report_names_every_claim_and_has_the_bucket_plot(run):
    report = run.data_dir / "reports" / "vcot"
    assert (report / "plots" / "acc_by_bucket.png").stat().st_size > 1000
    claims = pd.read_parquet(run.data_dir / "results" / "vcot" / "claims.parquet")
    assert set(run.paper.claim_ids) <= set(claims["claim_id"])
    text = (report / "REPORT.md").read_text()
    assert "How this reproduction differs from the paper" in text
    assert "LLM results are not reproduced" in text


def test_smoke_scores_oracle_and_trivial(run):
    scores = run.value("scores")
    assert scores[scores["completer"] == "oracle"]["acc"].eq(1.0).all()
    assert scores[scores["completer"] == "trivial"]["sem"].mean() <= checks.TRIVIAL_SEMACC_MAX
    assert set(scores["acc"].unique()) <= {0.0, 0.25, 1.0}          # 0.5 cannot occur (SemAcc needs a parse)


# ----------------------------------------------------------------------------- predicates

def test_corpus_check_names_duplicates_and_the_failing_obligation(run):
    corpus = run.value("program_corpus")
    assert checks.corpus_valid(corpus).passed
    bad = pd.concat([corpus, corpus.iloc[[0]]], ignore_index=True)
    bad.loc[1, ["verifies", "failing"]] = [False, "one: postcondition `r == 1` (line 12)"]
    message = checks.corpus_valid(bad).message()
    assert "postcondition `r == 1`" in message and "unique" in message.lower()


def test_query_check_names_rlimit_exhaustion(run):
    queries = run.value("vc_queries")
    assert checks.queries_unsat(queries).passed
    bad = queries.copy()
    bad.loc[0, ["status", "reason"]] = ["unknown", "max. resource limit exceeded"]
    found = checks.queries_unsat(bad)
    assert not found.passed and "rlimit exhausted" in found.message()


def test_proof_check_refuses_unknown_rules_and_missing_proofs(run):
    proofs = run.value("z3_proofs")
    assert checks.proofs_complete(proofs).passed
    bad = proofs.copy()
    bad.loc[0, "histogram"] = json.dumps({"mp": 2, "frobnicate": 1})
    bad.loc[1, "has_proof"] = False
    message = checks.proofs_complete(bad).message()
    assert "frobnicate" in message and "no proof" in message


def test_lift_check_refuses_untraced_steps_and_unverified_programs(run):
    lifted = run.value("lifted_programs")
    assert checks.lifted_valid(lifted).passed
    bad = lifted.copy()
    steps = json.loads(bad.loc[0, "steps_json"])
    kept = [s for s in steps if s["status"] == "kept"]
    assert kept, "the first smoke program has kept steps"
    kept[0]["provenance"] = kept[0]["provenance"].rsplit(":", 1)[0] + ":rewrite"     # a medium-tier node
    bad.loc[0, "steps_json"] = json.dumps(steps)
    bad.loc[1, "verified"] = False
    message = checks.lifted_valid(bad).message()
    assert "no provenance to a high-tier proof node" in message and "does not verify" in message


def test_task_check_counts_ids_and_gold(run):
    tasks, lifted = run.value("bench_tasks"), run.value("lifted_programs")
    assert checks.tasks_valid(tasks, lifted).passed
    bad = pd.concat([tasks.iloc[2:], tasks.iloc[[2]]], ignore_index=True)          # one lost, one twice
    bad.loc[3, "masked"] = bad.loc[3, "masked"].replace("\n", "\n\n", 1)
    message = checks.tasks_valid(bad, lifted).message()
    assert "duplicate task ids" in message and "gold blocks" in message and "expected" in message


def test_completion_check_refuses_assume_and_unknown_holes(run):
    comps, tasks = run.value("completions"), run.value("bench_tasks")
    assert checks.completions_clean(comps, tasks).passed
    bad = comps.copy()
    bad.loc[0, "completion"] = json.dumps({"h0": "assume(false);"})
    bad.loc[1, "completion"] = json.dumps({"h99": "assert(true);"})
    bad.loc[2, "task_id"] = "nope/ratio/k1/m0"
    message = checks.completions_clean(bad, tasks).message()
    assert "uses assume/admit" in message and "unknown holes ['h99']" in message and "unknown task" in message


def test_score_check_needs_a_perfect_oracle_and_a_strict_judge(run):
    scores = run.value("scores")
    assert checks.scores_sane(scores).passed
    bad = scores.copy()
    bad.loc[bad.index[bad["completer"] == "oracle"][0], "acc"] = 0.25
    bad.loc[bad["completer"] == "trivial", "sem"] = True
    message = checks.scores_sane(bad).message()
    assert "oracle Acc" in message and "trivial completer SemAcc" in message


# ----------------------------------------------------------------------------- gating (reruns)

def test_a_program_that_does_not_verify_stops_the_queries(run, tmp_path, monkeypatch):
    real = data.generate_corpus

    def with_broken(*args, **kwargs):
        frame = real(*args, **kwargs)
        frame.loc[0, "text"] = P.UNFOLD.replace("    assert(tri(0) == 0);\n", "")
        frame.loc[0, "md5"] = data.md5(frame.loc[0, "text"])
        return frame

    monkeypatch.setattr(data, "generate_corpus", with_broken)
    seen = rerun(run, ["program_corpus", "vc_queries"], tmp_path / "data")
    assert seen["checks"]["unique_round_trip_verifies"] is False
    assert "postcondition `r == 1`" in seen["details"]["vcot/program_corpus:unique_round_trip_verifies"][1]
    assert "vcot/vc_queries" not in seen["assets"]


def test_an_exhausted_rlimit_stops_the_proofs(run, tmp_path, monkeypatch):
    real = runs.vc_queries
    monkeypatch.setattr(runs, "vc_queries", lambda corpus, rlimit, seed=0: real(corpus, 200, seed))
    seen = rerun(run, ["vc_queries", "z3_proofs"], tmp_path / "data")
    assert seen["checks"]["all_unsat_under_cap"] is False
    assert "rlimit exhausted" in seen["details"]["vcot/vc_queries:all_unsat_under_cap"][1]
    assert "vcot/z3_proofs" not in seen["assets"]


def test_an_unverified_lift_stops_the_blocks(run, tmp_path, monkeypatch):
    real = runs.lift_corpus

    def unverified(*args, **kwargs):
        frame, timings = real(*args, **kwargs)
        frame.loc[0, "verified"] = False
        return frame, timings

    monkeypatch.setattr(runs, "lift_corpus", unverified)
    seen = rerun(run, ["lifted_programs", "semantic_blocks"], tmp_path / "data")
    assert seen["checks"]["verify_coverage_provenance"] is False
    assert "vcot/semantic_blocks" not in seen["assets"]


def test_a_lost_task_stops_the_completions(run, tmp_path, monkeypatch):
    real = bench.build_tasks
    monkeypatch.setattr(bench, "build_tasks", lambda *a, **k: real(*a, **k).iloc[1:].reset_index(drop=True))
    seen = rerun(run, ["bench_tasks", "completions"], tmp_path / "data")
    assert seen["checks"]["holes_gold_counts"] is False
    assert "expected" in seen["details"]["vcot/bench_tasks:holes_gold_counts"][1]
    assert "vcot/completions" not in seen["assets"]


def test_an_assume_in_a_completion_stops_the_scores(run, tmp_path, monkeypatch):
    real = runs.complete_all

    def cheating(*args, **kwargs):
        frame, timings = real(*args, **kwargs)
        frame.loc[0, "completion"] = json.dumps({"h0": "        assume(false);"})
        return frame, timings

    monkeypatch.setattr(runs, "complete_all", cheating)
    seen = rerun(run, ["completions", "scores"], tmp_path / "data")
    assert seen["checks"]["no_assume_known_holes"] is False
    assert "vcot/scores" not in seen["assets"]


def test_a_broken_oracle_stops_the_report(run, tmp_path, monkeypatch):
    real = runs.score_all

    def broken(*args, **kwargs):
        frame, timings = real(*args, **kwargs)
        frame.loc[frame.index[frame["completer"] == "oracle"][0], ["sem", "acc"]] = [False, 0.25]
        return frame, timings

    monkeypatch.setattr(runs, "score_all", broken)
    seen = rerun(run, ["scores", "benchmark_report"], tmp_path / "data")
    assert seen["checks"]["oracle_100_trivial_vacuous"] is False
    assert "vcot/benchmark_report" not in seen["assets"]
