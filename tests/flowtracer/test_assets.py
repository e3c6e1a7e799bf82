"""flowtracer wiring: the smoke group's report, the gates on corrupted inputs, and gating (bad
input stops every downstream asset)."""
from __future__ import annotations

import pandas as pd

from assets.flowtracer import analysis, checks, runs
from tests.conftest import rerun, smoke_run, typed_params

run = smoke_run("flowtracer")


def smoke_params():
    from assets.flowtracer.params import FlowtracerParams

    return typed_params(FlowtracerParams, "flowtracer", "smoke")


def test_smoke_report_has_every_claim_and_the_plots(run):
    report = run.data_dir / "reports" / "flowtracer"
    for name in ("grpo_curves", "masking", "credit"):
        assert (report / "plots" / f"{name}.png").stat().st_size > 1000
    claims = pd.read_parquet(run.data_dir / "results" / "flowtracer" / "claims.parquet")
    volatile = {"overhead"}                  # wall clock: a run record (data/runs), not a reproducible row
    assert set(run.paper.claim_ids) | set(run.paper.observation_ids) == set(claims["claim_id"]) | volatile
    ablation = claims.set_index("claim_id").loc["rl_ablations", "measured_value"]
    assert ablation.startswith("flowtracer (top 40%, layers [1, 2])") and "late20 (top 20%, layers [3])" in ablation
    assert "How this reproduction differs from the paper" in (report / "REPORT.md").read_text()


def test_checkpoint_gate_rejects_another_vocabulary_and_an_out_of_band_seed(run, in_smoke_data):
    frame = run.value("sft_checkpoints")
    p = smoke_params()
    assert checks.checkpoints_valid(frame, params=p).passed
    narrow = type(p.sft)(**{**p.sft.__dict__, "band": (0.9, 1.0)})
    out_of_band = type(p)(**{**p.__dict__, "sft": narrow})
    assert "outside [0.9, 1.0]" in checks.checkpoints_valid(frame, params=out_of_band).message()
    assert not checks.vocab_matches("0" * 32).passed


def test_every_seed_is_calibrated_on_its_own(run, in_smoke_data):
    """Each seed stops at its own first in-band snapshot (the smoke band [0, 1]: the first one)
    and its checkpoint row carries that snapshot's validation accuracy."""
    value, frame = run.value("sft_steps"), run.value("sft_checkpoints")
    p = smoke_params()
    assert [s["seed"] for s in value["seeds"]] == list(p.seeds) == list(frame["seed"])
    assert frame["in_band"].all() and (frame["steps"] == p.sft.snapshot_every).all()
    assert list(frame["val_accuracy"]) == [s["curve"][-1]["val_accuracy"] for s in value["seeds"]]
    assert checks.calibrated(value, params=p).passed


def test_calibration_gate_names_every_seed_that_missed_the_band_and_its_best_snapshot():
    p = smoke_params()
    narrow = type(p)(**{**p.__dict__, "sft": type(p.sft)(**{**p.sft.__dict__, "band": (0.4, 0.6)})})
    stuck = {"seed": 1, "steps": 40, "in_band": False, "curve": [{"step": 20, "val_accuracy": 0.1, "loss": 1.0},
                                                                 {"step": 40, "val_accuracy": 0.2, "loss": 0.9}]}
    fine = {"seed": 0, "steps": 20, "in_band": True, "curve": [{"step": 20, "val_accuracy": 0.5, "loss": 1}]}
    message = checks.calibrated({"seeds": [fine, stuck]}, params=narrow).message()
    assert "seed 1: no 20-step snapshot" in message and "best 0.200 at step 40" in message
    assert "seed 0:" not in message
    assert checks.calibrated({"seeds": [fine]}, params=narrow).passed
    assert not checks.calibrated({"seeds": []}, params=narrow).passed
    empty = checks.calibrated({"seeds": [fine, {**stuck, "curve": []}]}, params=narrow).message()
    assert "seed 1: the calibration recorded no snapshot" in empty


def test_flow_gate_catches_broken_conservation_and_nan_scores(run, in_smoke_data):
    value = run.value("flow_annotations")
    assert checks.flow_annotations_valid(value).passed
    diagnostics = pd.DataFrame(value["diagnostics"])
    tokens = checks._read(value["tokens"])
    broken = diagnostics.assign(conservation_error=1e-3)
    assert "conservation error" in checks.flow_valid(broken, tokens).message()
    nan = tokens.copy()
    nan.loc[nan.index[0], "flow"] = float("nan")
    assert "NaN token scores" in checks.flow_valid(diagnostics, nan).message()


def test_runs_gate_catches_a_missing_run_and_a_short_evaluation(run, in_smoke_data):
    value = run.value("grpo_runs")
    p = smoke_params()
    table, evals, steps = pd.DataFrame(value["runs"]), checks._read(value["evals"]), checks._read(value["steps"])
    assert checks.runs_valid(table, evals, steps, params=p).passed
    assert set(table["method"]) == set(p.run_methods) and "flowtracer-late20" in set(evals["method"])
    message = checks.runs_valid(table.iloc[1:], evals[evals["step"] != 1], steps, params=p).message()
    assert "runs missing" in message and "evaluated at steps" in message


# ----------------------------------------------------------------------------- gating

def test_a_wrong_gold_answer_stops_the_sft(run, tmp_path, monkeypatch):
    real = runs.dataset

    def corrupted(*args, **kwargs):
        frame = real(*args, **kwargs)
        frame.loc[frame.index[0], "answer"] = (int(frame.loc[frame.index[0], "answer"]) + 1) % 10
        return frame

    monkeypatch.setattr(runs, "dataset", corrupted)
    seen = rerun(run, ["trace_dataset", "sft_steps"], tmp_path / "data")
    assert seen["checks"]["valid_traces"] is False
    assert "flowtracer/sft_steps" not in seen["assets"]


def test_unsound_flow_stops_the_rl_runs(run, tmp_path, monkeypatch):
    real = runs.flow_annotations

    def broken(*args, **kwargs):
        tokens, masking, diagnostics = real(*args, **kwargs)
        return tokens, masking, diagnostics.assign(absorbed_mass_error=0.5)

    monkeypatch.setattr(runs, "flow_annotations", broken)
    seen = rerun(run, ["flow_annotations", "grpo_runs"], tmp_path / "data")
    assert seen["checks"]["conservation"] is False
    assert "flowtracer/grpo_runs" not in seen["assets"]


def test_score_rules_are_the_masking_rules():
    assert {"flow", "random", "bottom"} <= set(analysis.SCORE_RULES)


def test_the_group_runs_on_arithchain_through_its_gates(run, tmp_path):
    """The gpu profile's task through the Dagster wiring at smoke size: the dataset stream, every
    blocking gate (dataset, calibration, checkpoints on ArithChain's vocabulary, conservation,
    GRPO runs) and the report."""
    on = {"flowtracer": {"data": {"task": "arithchain", "min_ops": 3, "max_ops": 4, "held_out_ops": [5, 6]},
                         "model": {"context": 112}}}
    names = ["trace_dataset", "sft_steps", "sft_checkpoints", "flow_annotations", "flow_validation", "grpo_runs",
             "benchmark_report"]
    seen = rerun(run, names, tmp_path / "data", params_overrides=on)
    gates = {k: v for k, v in seen["checks"].items() if not k.startswith("claim_")}
    assert seen["success"] and len(gates) == 5 and all(gates.values()), seen["checks"]
    frame = pd.read_parquet(tmp_path / "data" / "flowtracer" / "trace_dataset.parquet")
    assert frame["prompt"].str.contains("*", regex=False).any()
    assert set(frame.loc[frame["split"] == "test", "n_ops"]) <= {5, 6}
    text = (tmp_path / "data" / "reports" / "flowtracer" / "REPORT.md").read_text()
    assert "ArithChain (assignment chains mod 10" in text
