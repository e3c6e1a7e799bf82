"""run_jobs: longest-first start order, results still in job order."""
from __future__ import annotations

from assets.dispat.runs import run_jobs, sft_cost


def _echo(job: dict) -> int:
    return job["id"]


def test_longest_first_keeps_results_in_job_order():
    started = []
    jobs = [{"id": i, "w": w} for i, w in enumerate([1.0, 5.0, 3.0, 5.0])]
    out = run_jobs(lambda j: started.append(j["id"]) or j["id"], jobs, 1, lambda m: None, "x", cost=lambda j: j["w"])
    assert out == [0, 1, 2, 3]
    assert started == [1, 3, 2, 0]                       # longest first, ties in job order
    assert run_jobs(_echo, jobs, 1, lambda m: None, "x") == [0, 1, 2, 3]


def test_sft_cost_grows_with_steps_batch_and_row_length():
    short = {"steps": 10, "batch": 4, "train": [{"a": "1"}] * 3}
    long = {"steps": 10, "batch": 4, "train": [{"a": "12345"}] * 3}
    assert sft_cost(long) > sft_cost(short) > 0
    assert sft_cost({**short, "steps": 20}) == 2 * sft_cost(short)
