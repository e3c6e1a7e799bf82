"""The results warehouse: tidy tables in data/results.duckdb.

DuckDB allows a single writer across processes (a read-write connection even blocks
read-only ones elsewhere). So paper assets never open the database: they write Parquet rows
under data/results/<slug>/<table>.parquet with `write_result_rows`, and the one `warehouse`
asset (pool "duckdb") loads them with `load_results`. Loads are idempotent (a paper's rows
are replaced, never appended twice) and serialised by a file lock, so two concurrent loads
lose no row. Readers open the file read_only.
"""
from __future__ import annotations

import fcntl
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import dagster as dg
import pandas as pd

from resources.artifacts import data_root, write_parquet

# table -> ordered (column, DuckDB type). Every table has `paper` and `run_id`.
SCHEMA: dict[str, list[tuple[str, str]]] = {
    "runs": [("paper", "VARCHAR"), ("run_id", "VARCHAR"), ("profile", "VARCHAR"),
             ("git_sha", "VARCHAR"), ("params_hash", "VARCHAR"), ("created_at", "VARCHAR")],
    "metrics": [("paper", "VARCHAR"), ("asset", "VARCHAR"), ("partition", "VARCHAR"),
                ("seed", "BIGINT"), ("dataset", "VARCHAR"), ("method", "VARCHAR"),
                ("metric", "VARCHAR"), ("value", "DOUBLE"), ("run_id", "VARCHAR")],
    "thresholds": [("paper", "VARCHAR"), ("name", "VARCHAR"), ("seed", "BIGINT"),
                   ("dataset", "VARCHAR"), ("method", "VARCHAR"), ("value", "DOUBLE"),
                   ("run_id", "VARCHAR")],
    "artifacts": [("paper", "VARCHAR"), ("path", "VARCHAR"), ("md5", "VARCHAR"),
                  ("bytes", "BIGINT"), ("run_id", "VARCHAR")],
    "checks": [("paper", "VARCHAR"), ("asset", "VARCHAR"), ("check_name", "VARCHAR"),
               ("passed", "BOOLEAN"), ("blocking", "BOOLEAN"), ("detail", "VARCHAR"),
               ("run_id", "VARCHAR")],
    "claims": [("paper", "VARCHAR"), ("claim_id", "VARCHAR"), ("claim", "VARCHAR"),
               ("paper_value", "VARCHAR"), ("measured_value", "VARCHAR"), ("holds", "BOOLEAN"),
               ("profile", "VARCHAR"), ("run_id", "VARCHAR")],
}


def results_root(root: str | Path = "data") -> Path:
    return data_root(root) / "results"


def conform(table: str, rows: pd.DataFrame) -> pd.DataFrame:
    """Rows with exactly the table's columns in order; raises naming missing columns."""
    if table not in SCHEMA:
        raise KeyError(f"unknown warehouse table {table!r}; known: {', '.join(SCHEMA)}")
    columns = [name for name, _ in SCHEMA[table]]
    missing = [c for c in columns if c not in rows.columns]
    if missing:
        raise ValueError(f"rows for table {table!r} lack columns {missing}")
    return rows[columns].reset_index(drop=True)


def write_result_rows(slug: str, table: str, rows: pd.DataFrame,
                      root: str | Path = "data", name: str | None = None) -> Path:
    """Write one paper's rows for one table as Parquet (read later by load_results).

    `name` lets a paper keep several files for one table (e.g. one per asset); the warehouse
    reads data/results/<slug>/<table>*.parquet.
    """
    rows = conform(table, rows)
    if (rows["paper"] != slug).any():
        raise ValueError(f"rows written for paper {slug!r} name another paper")
    path = results_root(root) / slug / f"{name or table}.parquet"
    return write_parquet(path, rows)


@contextmanager
def _writer_lock(db_path: Path, timeout_s: float = 300.0) -> Iterator[None]:
    """An exclusive inter-process lock next to the database file."""
    lock_path = db_path.with_suffix(db_path.suffix + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as fh:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another process holds the warehouse writer lock {lock_path}")
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def create_tables(con) -> None:
    for table, columns in SCHEMA.items():
        cols = ", ".join(f"{name} {dtype}" for name, dtype in columns)
        con.execute(f"CREATE TABLE IF NOT EXISTS {table} ({cols})")


def load_results(db_path: Path, results_dir: Path, papers: list[str] | None = None) -> dict[str, int]:
    """Load every paper's Parquet rows into DuckDB, replacing that paper's previous rows.

    Idempotent: loading the same files twice leaves the same table contents. Serialised by a
    file lock, in one transaction per load. Returns {table: rows now in the table}.
    """
    import duckdb

    slugs = papers if papers is not None else sorted(p.name for p in results_dir.iterdir()
                                                     if p.is_dir()) if results_dir.exists() else []
    with _writer_lock(db_path):
        con = duckdb.connect(str(db_path))
        try:
            con.execute("BEGIN TRANSACTION")
            create_tables(con)
            for slug in slugs:
                for table in SCHEMA:
                    files = sorted((results_dir / slug).glob(f"{table}*.parquet"))
                    con.execute(f"DELETE FROM {table} WHERE paper = ?", [slug])
                    if not files:
                        continue
                    columns = ", ".join(name for name, _ in SCHEMA[table])
                    file_list = "[" + ", ".join(f"'{f.as_posix()}'" for f in files) + "]"
                    con.execute(f"INSERT INTO {table} SELECT {columns} FROM "
                                f"read_parquet({file_list}, union_by_name=true) WHERE paper = ?",
                                [slug])
            con.execute("COMMIT")
            return {t: int(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in SCHEMA}
        except Exception:
            con.execute("ROLLBACK")
            raise
        finally:
            con.close()


def read_table(db_path: Path, sql: str, params: list | None = None) -> pd.DataFrame:
    """Run a query on a read-only connection (never blocks another reader)."""
    import duckdb

    with _writer_lock(db_path):  # a reader must not meet the writer mid-transaction
        con = duckdb.connect(str(db_path), read_only=True)
        try:
            return con.execute(sql, params or []).df()
        finally:
            con.close()


class WarehouseResource(dg.ConfigurableResource):
    """DuckDB warehouse at data/results.duckdb; only the `warehouse` asset writes."""

    path: str = "results.duckdb"
    root: str = "data"

    def db_path(self) -> Path:
        """<data root>/results.duckdb unless `path` is absolute."""
        path = Path(self.path)
        return path if path.is_absolute() else data_root(self.root) / path

    def load(self, papers: list[str] | None = None) -> dict[str, int]:
        return load_results(self.db_path(), results_root(self.root), papers)

    def query(self, sql: str, params: list | None = None) -> pd.DataFrame:
        return read_table(self.db_path(), sql, params)
