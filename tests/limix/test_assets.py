"""limix wiring: the smoke group materializes completely (report, plots, rows), bad input is
stopped by a blocking check before anything downstream consumes it, and the predicates catch
corrupted values."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.limix import checks, runs
from assets.limix.params import LimiXParams
from tests.conftest import assert_group_complete, rerun, smoke_run, typed_params

SLUG = "limix"


run = smoke_run(SLUG)


def typed(profile: str = "smoke") -> LimiXParams:
    return typed_params(LimiXParams, SLUG, profile)


def test_every_profile_parses_and_cpu_trains_the_five_main_variants_on_three_seeds():
    cpu = typed("cpu")
    assert set(cpu.variants) == {"linear_fsn", "linear_snf", "rabel_fsn", "rabel_snf", "linear_fsn_wide"}
    assert len(cpu.seeds) == 3 and cpu.workers == 2
    assert cpu.gate_min_auc == 0.65 and cpu.gate_min_loss_drop == 0.2        # the gate is not lowered
    assert {"mlp_snf", "periodic_snf", "ple_snf"} <= set(typed("gpu").variants)
    assert typed("gpu").gate_min_auc == 0.65


def test_smoke_group_is_complete_with_report_plots_and_rows(run):
    assert_group_complete(run)
    root = run.data_dir
    text = (root / "reports" / SLUG / "REPORT.md").read_text()
    assert "## Claims" in text and "learning gate" in text
    assert "## How this reproduction differs from the paper" in text
    for name in ("pretraining_loss", "embedding_rank", "feature_attention", "auc_by_suite"):
        assert (root / "reports" / SLUG / "plots" / f"{name}.png").stat().st_size > 1000
    claims = pd.read_parquet(root / "results" / SLUG / "claims.parquet")
    assert "best_embedding" in set(claims["claim_id"])
    row = claims.set_index("claim_id").loc["best_embedding"]
    assert row["verdict"] == "inconclusive" and "gpu profile only" in row["measured_value"]
    ck = run.value("checkpoints")
    assert set(ck["variant"]) == set(typed().variants) and {"learned", "val_auc", "loss_drop"} <= set(ck.columns)
    pred = run.value("predictions")
    assert set(zip(pred["variant"], pred["seed"])) <= set(zip(ck[ck["learned"]]["variant"], ck[ck["learned"]]["seed"]))


def test_prop31_holds_on_the_trained_affine_embeddings(run):
    prop = pd.DataFrame(run.value("embedding_rank")["prop31"])
    assert (prop[prop["embedding"] == "linear"]["rank"] <= 2).all()
    assert (prop[prop["embedding"] == "rabel"]["rank"] >= 12).all()


# ------------------------------------------------------------------------------ gating
def test_a_task_with_one_query_class_stops_the_checkpoints(run, tmp_path, monkeypatch):
    real = runs.task_bank

    def broken(*args, **kwargs):
        arrays, meta = real(*args, **kwargs)
        n = meta[0]["n_context"]
        arrays["0.y"][0, n:] = arrays["0.y"][0, n]
        return arrays, meta

    monkeypatch.setattr(runs, "task_bank", broken)
    seen = rerun(run, ["val_tasks", "checkpoints"], tmp_path / "data")
    assert seen["checks"]["classes_nan_scales"] is False
    assert f"{SLUG}/checkpoints" not in seen["assets"]


def test_a_leaking_real_column_stops_the_baselines(run, tmp_path, monkeypatch):
    real = runs.real_bank

    def leaky(*args, **kwargs):
        arrays, meta = real(*args, **kwargs)
        arrays["0.x"][0, :, 0] = arrays["0.y"][0] * 3.0 + 1.0
        return arrays, meta

    monkeypatch.setattr(runs, "real_bank", leaky)
    seen = rerun(run, ["real_suite", "baseline_predictions"], tmp_path / "data")
    assert seen["checks"]["packaged_rows_no_leakage"] is False
    assert f"{SLUG}/baseline_predictions" not in seen["assets"]


# ------------------------------------------------------------------------------ predicates
def _bank(n_tasks=8, seed=3):
    arrays, meta = runs.task_bank(typed(), seed, "val", n_tasks)
    return runs.unpack(arrays, meta)


def test_prior_tasks_predicate_catches_nan_outside_the_mask_and_the_pretraining_stream():
    batches = _bank()
    assert checks.prior_tasks_problems(batches, "val") == []
    batches[0]["x"][0, 0, 0] = np.nan
    batches[0]["missing"][0, 0, 0] = False
    problems = checks.prior_tasks_problems(batches, "pretrain")
    assert any("outside" in p for p in problems) and any("pretraining stream" in p for p in problems)


def test_prior_tasks_predicate_needs_three_decades_in_thirty_percent_of_tasks():
    batches = _bank()
    for b in batches:
        b["log10_spread"] = np.zeros_like(b["log10_spread"])
    assert any("decades" in p for p in checks.prior_tasks_problems(batches, "val"))


def test_real_suite_predicate_catches_overlap_and_wrong_row_counts():
    arrays, meta = runs.real_bank(typed(), 0)
    tasks = runs.unpack(arrays, meta)
    assert checks.real_suite_problems(tasks) == []
    tasks[0]["index"] = [tasks[0]["index"][0]] * len(tasks[0]["index"])
    tasks[1]["rows"] = 7
    problems = checks.real_suite_problems(tasks)
    assert any("in both context and query" in p for p in problems) and any("the package holds" in p for p in problems)
