"""fair_selective wiring: the smoke group is complete, bad input is stopped by a blocking check
before anything downstream runs, and the predicates name what is wrong."""
from __future__ import annotations

import pandas as pd

from assets.fair_selective import runs, static
from tests.conftest import rerun, smoke_run

run = smoke_run("fair_selective")


def test_smoke_report_names_every_claim(run):
    report = run.data_dir / "reports" / "fair_selective"
    assert (report / "plots" / "training_delta.png").stat().st_size > 1000
    claims = pd.read_parquet(run.data_dir / "results" / "fair_selective" / "claims.parquet")
    assert set(claims["claim_id"]) == set(run.paper.claim_ids) | set(run.paper.observation_ids)
    assert "How this reproduction differs from the paper" in (report / "REPORT.md").read_text()


def test_leaked_labels_stop_the_estimates(run, tmp_path, monkeypatch):
    real = static.observe

    def leaky(full):
        out = real(full)
        rows = out.index[out["action"] == 0][:5]
        out.loc[rows, "label"] = full.loc[rows, "label"]
        return out

    monkeypatch.setattr(static, "observe", leaky)
    seen = rerun(run, ["behavior_logs_observed", "fairness_estimates"], tmp_path / "data")
    assert seen["checks"]["no_label_leakage"] is False
    assert "leakage: 5 rejected row(s)" in seen["details"]["fair_selective/behavior_logs_observed:no_label_leakage"][1]
    assert "fair_selective/fairness_estimates" not in seen["assets"]


def test_a_fair_environment_stops_the_pool(run, tmp_path, monkeypatch):
    monkeypatch.setattr(runs.envs, "myopic_tpr_gap", lambda spec: 0.01)
    seen = rerun(run, ["env_spec", "applicant_pool"], tmp_path / "data")
    assert seen["checks"]["valid_and_unfair"] is False
    assert "fair_selective/applicant_pool" not in seen["assets"]


def test_a_broken_identity_stops_training(run, tmp_path, monkeypatch):
    real = runs.fairness_estimates
    monkeypatch.setattr(runs, "fairness_estimates", lambda *a, **k: real(*a, **k).assign(residual=1e-3))
    seen = rerun(run, ["fairness_estimates", "agent_checkpoint"], tmp_path / "data")
    assert seen["checks"]["identity_and_ranges"] is False
    assert "fair_selective/agent_checkpoint" not in seen["assets"]


def test_non_finite_checkpoints_stop_the_selection(run, tmp_path, monkeypatch):
    real = runs.checkpoint_row
    monkeypatch.setattr(runs, "checkpoint_row", lambda *a, **k: {**real(*a, **k), "finite": False})
    seen = rerun(run, ["agent_checkpoint", "selected_config"], tmp_path / "data")
    assert seen["checks"]["finite_with_memory"] is False
    assert "fair_selective/selected_config" not in seen["assets"]


def test_smoke_rollouts_hold_labels_only_for_accepted(run):
    rollouts = run.value("eval_rollouts")
    assert not (rollouts["label"].notna() & (rollouts["action"] == 0)).any()
    assert set(rollouts["agent"]) == {"ppo", "oracle", "naive_acc", "naive_imp", "sellf"}
