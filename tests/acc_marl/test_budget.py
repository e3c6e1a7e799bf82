"""The budget curve (report-only): snapshot iterations from the params' fractions, snapshots that do
not change the run, a table of paired CIs with known answers, and, in the smoke group, a snapshot
at the last iteration that reproduces the eval's premise cell."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from assets.acc_marl import benchmark, runs
from assets.acc_marl.params import AccMarlParams, BudgetParams
from assets.common.params import parse
from resources.profiles import load_params
from tests.conftest import smoke_run

run = smoke_run("acc_marl")


def _params(profile: str) -> AccMarlParams:
    return parse(AccMarlParams, load_params("acc_marl", profile), f"acc_marl.{profile}")


def test_snapshot_iterations_are_the_fractions_of_the_run():
    cpu = _params("cpu")
    assert runs.iterations(cpu) == 48 and runs.snapshot_iterations(cpu) == (6, 12, 24, 36)
    assert runs.snapshot_iterations(_params("smoke")) == (1,)          # one iteration: every fraction maps to it
    odd = dataclasses.replace(cpu, budget=BudgetParams((0.01, 0.5, 0.5, 2.0)))
    assert runs.snapshot_iterations(odd) == (1, 24, 48)                # clipped to [1, 48], each once
    jobs = runs.training_jobs(dataclasses.replace(cpu, variants=("pbrs", "gru")), runs.layouts_table(cpu),
                              pd.DataFrame(), lambda *k: 0)
    assert {j["variant"]: j["snapshots"] for j in jobs} == {"pbrs": (6, 12, 24, 36), "gru": ()}


@pytest.fixture(scope="module")
def three_iterations():
    p = _params("smoke")
    layouts = runs.layouts_table(p)
    pool = runs.build_pool(p, layouts, lambda *k: np.random.default_rng([5, len(k)]))
    job = runs.training_jobs(p, layouts, pool, lambda *k: 11)[0]
    cfg = dataclasses.replace(job["cfg"], total_steps=3 * job["cfg"].n_envs * job["cfg"].n_steps)
    return {**job, "cfg": cfg}


def test_snapshots_do_not_change_the_run_and_the_last_is_the_final_policy(three_iterations):
    plain = runs.train_job({**three_iterations, "snapshots": ()})
    kept = runs.train_job({**three_iterations, "snapshots": (1, 3)})
    assert plain["snapshots"] == {} and sorted(kept["snapshots"]) == [1, 3]
    for k, v in plain["state"].items():
        torch.testing.assert_close(kept["state"][k], v, atol=0, rtol=0)
        torch.testing.assert_close(kept["snapshots"][3][k], v, atol=0, rtol=0)
    moved = [k for k, v in plain["state"].items() if not torch.equal(kept["snapshots"][1][k], v)]
    assert moved, "the iteration-1 snapshot equals the final weights: it was not taken during training"


def _cells(layout: str, variant: str, successes) -> list[dict]:
    return [{"layout": layout, "variant": variant, "seed": s, "sampler": "RAD", "split": "in", "assignment": "random",
             "success": v, "length": 10.0, "episodes": 4} for s, v in enumerate(successes)]


def test_budget_table_pairs_snapshots_and_the_end_of_training_with_random_by_seed():
    cells = pd.DataFrame(_cells("rooms2", "pbrs", [0.6, 0.7, 0.8]) + _cells("rooms2", "random", [0.5, 0.5, 0.6]))
    # iteration 2 snapshot: per-episode rows, seed means 0.5, 0.25, 0.75
    budget = pd.DataFrame({"layout": "rooms2", "iteration": 2, "steps": 100, "seed": [0, 0, 1, 1, 2, 2],
                           "success": [1.0, 0.0, 0.5, 0.0, 1.0, 0.5]})
    table = benchmark.budget_table(budget, cells, ["rooms2"], final_iteration=4, final_steps=200)
    assert list(table["iteration"]) == [2, 4] and list(table["steps"]) == [100, 200]
    snap, end = table.iloc[0], table.iloc[1]
    assert snap["acc_marl"] == pytest.approx(0.5) and snap["random"] == pytest.approx(16 / 30)
    assert snap["delta"] == pytest.approx(np.mean([0.0, -0.25, 0.15]))
    diffs = np.array([0.1, 0.2, 0.2])                      # end of training: 0.6−0.5, 0.7−0.5, 0.8−0.6
    half = 2.919986 * diffs.std(ddof=1) / np.sqrt(3)       # t_{0.95, 2}
    assert end["delta"] == pytest.approx(diffs.mean())
    assert (end["ci_low"], end["ci_high"]) == pytest.approx((diffs.mean() - half, diffs.mean() + half), rel=1e-5)
    text = benchmark.budget_observation(table, (0, 1, 2)).measured_value
    assert "first above at 200 steps" in text and "100: -0.033" in text


def test_budget_table_without_snapshots_still_shows_the_end_of_training():
    cells = pd.DataFrame(_cells("buttons2", "pbrs", [0.4, 0.4]) + _cells("buttons2", "random", [0.5, 0.6]))
    table = benchmark.budget_table(pd.DataFrame(), cells, ["buttons2"], final_iteration=1, final_steps=64)
    assert len(table) == 1 and table["delta"].iloc[0] == pytest.approx(-0.15)
    assert "never above" in benchmark.budget_observation(table, (0, 1)).measured_value


def test_smoke_snapshot_at_the_last_iteration_reproduces_the_eval_cell(run):
    budget, ev = run.value("budget_curve"), run.value("eval")
    assert set(budget["iteration"]) == {1} and set(budget["variant"]) == {"pbrs"}
    final = ev[(ev["variant"] == "pbrs") & (ev["sampler"] == "RAD") & (ev["split"] == "in")
               & (ev["assignment"] == "random")]
    keys = ["layout", "seed", "episode"]
    merged = budget.merge(final, on=keys, suffixes=("", "_eval"))
    assert len(merged) == len(final) == len(budget)
    assert (merged["success"] == merged["success_eval"]).all() and (merged["length"] == merged["length_eval"]).all()
