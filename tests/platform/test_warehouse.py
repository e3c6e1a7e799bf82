"""Warehouse: schema, idempotent loads, concurrent writers lose no row, read-only readers."""
from __future__ import annotations

import multiprocessing as mp

import pandas as pd
import pytest

from resources.warehouse import (
    SCHEMA,
    WarehouseResource,
    append_job_record,
    last_duration,
    load_results,
    read_table,
    write_result_rows,
    write_run_record,
)


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
    write_run_record("a", {"run_id": "r1", "profile": "smoke"})
    write_run_record("b", {"run_id": "r1", "profile": "smoke"})
    wh = WarehouseResource()
    first = wh.load()
    second = wh.load()
    assert first == second and first["metrics"] == 12
    write_result_rows("a", "metrics", _metrics("a", 2))  # a re-run of paper a
    write_run_record("a", {"run_id": "r2", "profile": "smoke"})
    assert wh.load()["metrics"] == 9
    got = wh.query("SELECT paper, count(*) AS n, min(run_id) AS run FROM metrics GROUP BY paper ORDER BY paper")
    assert got.to_dict("records") == [{"paper": "a", "n": 2, "run": "r2"}, {"paper": "b", "n": 7, "run": "r1"}]
    tables = set(wh.query("SELECT table_name FROM information_schema.tables")["table_name"])
    assert set(SCHEMA) <= tables


def test_reproducible_rows_carry_no_run_id_and_volatile_rows_keep_theirs(data_dir):
    import pandas as pd

    path = write_result_rows("a", "metrics", _metrics("a", 3, run_id="r9"))
    assert "run_id" not in pd.read_parquet(path).columns and "results" in path.parts
    with pytest.raises(ValueError, match="lack columns"):      # a run record must name its run
        write_result_rows("a", "metrics", _metrics("a", 1).drop(columns="run_id"), volatile=True)
    timed = write_result_rows("a", "metrics", _metrics("a", 1, run_id="r0"), name="metrics_timings", volatile=True)
    assert "runs" in timed.parts
    write_run_record("a", {"run_id": "r5", "profile": "cpu"})
    wh = WarehouseResource()
    wh.load()
    runs = wh.query("SELECT run_id, count(*) AS n FROM metrics GROUP BY run_id ORDER BY run_id")
    assert runs.to_dict("records") == [{"run_id": "r0", "n": 1}, {"run_id": "r5", "n": 3}]


def test_runs_table_joins_job_wall_times_with_the_report_run(data_dir):
    write_run_record("a", {"run_id": "r2", "profile": "cpu", "git_sha": "abc", "params_hash": "h"})
    append_job_record("a", {"run_id": "r1", "profile": "cpu", "wall_seconds": 30.0, "status": "success"})
    append_job_record("a", {"run_id": "r2", "profile": "cpu", "wall_seconds": 42.5, "status": "success"})
    append_job_record("a", {"run_id": "r3", "profile": "smoke", "wall_seconds": 3.0, "status": "failure"})
    assert last_duration("a", "cpu") == 42.5 and last_duration("a", "gpu") is None
    wh = WarehouseResource()
    wh.load()
    runs = wh.query("SELECT run_id, wall_seconds, git_sha, status FROM runs ORDER BY run_id")
    assert runs["run_id"].tolist() == ["r1", "r2", "r3"]
    assert runs.set_index("run_id").loc["r2", "git_sha"] == "abc"
    assert runs.set_index("run_id").loc["r2", "wall_seconds"] == 42.5


def test_an_older_table_layout_is_rebuilt(data_dir):
    import duckdb

    wh = WarehouseResource()
    con = duckdb.connect(str(wh.db_path()))
    con.execute("CREATE TABLE claims (paper VARCHAR, claim_id VARCHAR, holds BOOLEAN)")
    con.execute("INSERT INTO claims VALUES ('old', 'x', true)")
    con.close()
    write_result_rows("b", "metrics", _metrics("b", 2))
    assert wh.load()["claims"] == 0
    columns = wh.query("SELECT column_name FROM information_schema.columns WHERE table_name = 'claims'")
    assert {"kind", "verdict", "premise", "ci"} <= set(columns["column_name"])
    assert "holds" not in set(columns["column_name"])


def _load_in_process(db_path, root, barrier):
    barrier.wait()
    load_results(db_path, root)


def test_concurrent_loads_lose_no_row(data_dir):
    for i in range(4):
        write_result_rows(f"p{i}", "metrics", _metrics(f"p{i}", 100 + i))
    wh = WarehouseResource()
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_load_in_process, args=(wh.db_path(), data_dir, barrier))
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
