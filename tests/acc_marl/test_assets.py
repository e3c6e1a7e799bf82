"""acc_marl wiring: the smoke group is complete, bad input is stopped by a blocking check
before anything downstream runs, and the report names every claim."""
from __future__ import annotations

import pandas as pd

from assets.acc_marl import runs
from tests.conftest import rerun, smoke_run

run = smoke_run("acc_marl")


def test_smoke_report_names_every_claim(run):
    report = run.data_dir / "reports" / "acc_marl"
    assert (report / "plots" / "training_success.png").stat().st_size > 1000
    claims = pd.read_parquet(run.data_dir / "results" / "acc_marl" / "claims.parquet")
    assert set(claims["claim_id"]) == set(run.paper.claim_ids) | set(run.paper.observation_ids) - {"progression_speed"}
    assert "How this reproduction differs from the paper" in (report / "REPORT.md").read_text()


def test_smoke_eval_grid_shares_tasks_and_counts_conjunction(run):
    ev = run.value("eval")
    assert not (ev["success"] & ~ev["all_accept"]).any()
    assert set(ev["variant"]) == {"pbrs", "no_pbrs", "gru", "random"}


def test_an_unreachable_token_stops_the_pool(run, tmp_path, monkeypatch):
    real = runs.layouts_table

    def walled(p):
        table = real(p)
        # Rooms-2 with token 0 walled in: its neighbours (1, 2) and (2, 1) become walls
        rows = table.loc[table["layout"] == "rooms2", "text"].iloc[0].split("|")
        rows[1] = rows[1][:2] + "#" + rows[1][3:]
        rows[2] = rows[2][:1] + "#" + rows[2][2:]
        table.loc[table["layout"] == "rooms2", "text"] = "|".join(rows)
        return table

    monkeypatch.setattr(runs, "layouts_table", walled)
    seen = rerun(run, ["layouts", "dfa_pool"], tmp_path / "data")
    assert seen["checks"]["playable"] is False
    assert "tokens [0] unreachable" in seen["details"]["acc_marl/layouts:playable"][1]
    assert "acc_marl/dfa_pool" not in seen["assets"]


def test_a_test_dfa_seen_in_training_stops_the_policies(run, tmp_path, monkeypatch):
    real = runs.build_pool

    def leaky(p, layouts, rng_for):
        pool = real(p, layouts, rng_for)
        row = pool[pool["role"] == "train"].iloc[[0]].assign(role="test")
        return pd.concat([pool, row], ignore_index=True)

    monkeypatch.setattr(runs, "build_pool", leaky)
    seen = rerun(run, ["dfa_pool", "policy"], tmp_path / "data")
    assert seen["checks"]["minimal_disjoint_closed"] is False
    assert "test ∩ train ≠ ∅" in seen["details"]["acc_marl/dfa_pool:minimal_disjoint_closed"][1]
    assert "acc_marl/policy" not in seen["assets"]


def test_a_collapsed_policy_stops_the_evaluation(run, tmp_path, monkeypatch):
    real = runs.policy_row
    monkeypatch.setattr(runs, "policy_row", lambda *a, **k: {**real(*a, **k), "final_entropy": 0.0})
    seen = rerun(run, ["policy", "eval"], tmp_path / "data")
    assert seen["checks"]["finite_and_exploring"] is False
    assert "acc_marl/eval" not in seen["assets"]


def test_success_without_acceptance_stops_the_report(run, tmp_path, monkeypatch):
    real = runs.eval_job

    def lying(job):
        frame = real(job)
        frame.loc[frame.index[:1], ["success", "all_accept"]] = [True, False]
        return frame

    monkeypatch.setattr(runs, "eval_job", lying)
    seen = rerun(run, ["eval", "benchmark_report"], tmp_path / "data")
    assert seen["checks"]["complete_and_conjunctive"] is False
    assert "acc_marl/benchmark_report" not in seen["assets"]
