"""Warehouse: schema, idempotent loads, concurrent writers lose no row, read-only readers."""
from __future__ import annotations

import multiprocessing as mp

import pandas as pd
import pytest

from resources.warehouse import SCHEMA, WarehouseResource, load_results, read_table, write_result_rows


def _metrics(paper: str, n: int, run_id: str = "r1") -> pd.DataFrame:
    return pd.DataFrame({"paper": paper, "asset": f"{paper}/report", "partition": "", "seed": range(n),
                         "dataset": "d", "method": "m", "metric": "acc", "value": [i / n for i in range(n)],
                         "run_id": run_id})


def test_rows_must_match_the_schema(data_dir):
    with pytest.raises(ValueError, match="lack columns"):
        write_result_rows("p", "metrics", _metrics("p", 3).drop(columns="value"))
    with pytest.raises(KeyError, match="unknown warehouse table"):
        write_result_rows("p", "nope", _metrics("p", 3))
    with pytest.raises(ValueError, match="name another paper"):
        write_result_rows("p", "metrics", _metrics("q", 3))


def test_load_is_idempotent_and_replaces_a_papers_rows(data_dir):
    write_result_rows("a", "metrics", _metrics("a", 5))
    write_result_rows("b", "metrics", _metrics("b", 7))
    wh = WarehouseResource()
    first = wh.load()
    second = wh.load()
    assert first == second and first["metrics"] == 12
    write_result_rows("a", "metrics", _metrics("a", 2, run_id="r2"))  # a re-run of paper a
    assert wh.load()["metrics"] == 9
    got = wh.query("SELECT paper, count(*) AS n, min(run_id) AS run FROM metrics GROUP BY paper ORDER BY paper")
    assert got.to_dict("records") == [{"paper": "a", "n": 2, "run": "r2"}, {"paper": "b", "n": 7, "run": "r1"}]
    tables = set(wh.query("SELECT table_name FROM information_schema.tables")["table_name"])
    assert set(SCHEMA) <= tables


def _load_in_process(db_path, results_dir, barrier):
    barrier.wait()
    load_results(db_path, results_dir)


def test_concurrent_loads_lose_no_row(data_dir):
    for i in range(4):
        write_result_rows(f"p{i}", "metrics", _metrics(f"p{i}", 100 + i))
    wh = WarehouseResource()
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_load_in_process, args=(wh.db_path(), data_dir / "results", barrier))
             for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    counts = read_table(wh.db_path(), "SELECT paper, count(*) AS n FROM metrics GROUP BY paper ORDER BY paper")
    assert counts["n"].tolist() == [100, 101, 102, 103]


def test_reader_is_read_only(data_dir):
    write_result_rows("a", "metrics", _metrics("a", 3))
    wh = WarehouseResource()
    wh.load()
    with pytest.raises(Exception, match="(?i)read-only|read only"):
        wh.query("DELETE FROM metrics")
