"""The results warehouse: tidy tables in data/results.duckdb.

DuckDB allows a single writer across processes (a read-write connection even blocks
read-only ones elsewhere). So paper assets never open the database: they write Parquet rows
with `write_result_rows`, and the one `warehouse` asset (pool "duckdb") loads them with
`load_results`. Loads are idempotent (a paper's rows are replaced, never appended twice) and
serialised by a file lock, so two concurrent loads lose no row. Readers open the file
read_only.

Two places per paper:
- data/results/<slug>/<table>*.parquet — reproducible rows (DVC-tracked): no run id, no time;
- data/runs/<slug>/ — run records: run.json (run id, git sha, created_at, written by the
  report), jobs.jsonl (one line per job run: wall time, status, written by jobs.run),
  check rows, and volatile (wall-clock) metric and claim rows, which carry their run id.
The loader stamps reproducible rows with the run id of the paper's last report run.
"""
from __future__ import annotations

import fcntl
import json
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
             ("git_sha", "VARCHAR"), ("params_hash", "VARCHAR"), ("created_at", "VARCHAR"),
             ("wall_seconds", "DOUBLE"), ("status", "VARCHAR")],
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
    "claims": [("paper", "VARCHAR"), ("claim_id", "VARCHAR"), ("kind", "VARCHAR"), ("claim", "VARCHAR"),
               ("paper_value", "VARCHAR"), ("measured_value", "VARCHAR"), ("verdict", "VARCHAR"),
               ("premise", "VARCHAR"), ("ci", "VARCHAR"), ("estimate", "DOUBLE"), ("ci_low", "DOUBLE"),
               ("ci_high", "DOUBLE"), ("margin", "DOUBLE"), ("rule", "VARCHAR"), ("reason", "VARCHAR"),
               ("seeds", "VARCHAR"), ("detail", "VARCHAR"), ("volatile", "BOOLEAN"),
               ("profile", "VARCHAR"), ("run_id", "VARCHAR")],
}
RUN_RECORD = "run.json"
JOB_LOG = "jobs.jsonl"


def results_root(root: str | Path = "data") -> Path:
    return data_root(root) / "results"


def runs_root(root: str | Path = "data") -> Path:
    return data_root(root) / "runs"


def conform(table: str, rows: pd.DataFrame, with_run_id: bool = True) -> pd.DataFrame:
    """Rows with exactly the table's columns in order (run_id optional for reproducible
    rows); raises naming missing columns."""
    if table not in SCHEMA:
        raise KeyError(f"unknown warehouse table {table!r}; known: {', '.join(SCHEMA)}")
    columns = [name for name, _ in SCHEMA[table] if with_run_id or name != "run_id"]
    missing = [c for c in columns if c not in rows.columns]
    if missing:
        raise ValueError(f"rows for table {table!r} lack columns {missing}")
    return rows[columns].reset_index(drop=True)


def write_result_rows(slug: str, table: str, rows: pd.DataFrame, root: str | Path = "data",
                      name: str | None = None, volatile: bool = False) -> Path:
    """Write one paper's rows for one table as Parquet (read later by load_results).

    Reproducible rows (default) go to data/results/<slug>/ without a run id (any run_id
    column is dropped); volatile rows (run records, wall-clock measurements) go to
    data/runs/<slug>/ and must carry their run id. `name` lets a paper keep several files
    for one table; the loader reads <table>*.parquet in both places.
    """
    rows = conform(table, rows, with_run_id=volatile)
    if (rows["paper"] != slug).any():
        raise ValueError(f"rows written for paper {slug!r} name another paper")
    base = runs_root(root) if volatile else results_root(root)
    return write_parquet(base / slug / f"{name or table}.parquet", rows)


def write_run_record(slug: str, record: dict, root: str | Path = "data") -> Path:
    """data/runs/<slug>/run.json: the run that produced the paper's current results."""
    path = runs_root(root) / slug / RUN_RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, sort_keys=True, indent=1) + "\n", encoding="utf-8")
    return path


def append_job_record(slug: str, record: dict, root: str | Path = "data") -> Path:
    """One line in data/runs/<slug>/jobs.jsonl per job run (wall time, status, profile)."""
    path = runs_root(root) / slug / JOB_LOG
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
    return path


def job_records(slug: str, root: str | Path = "data") -> list[dict]:
    path = runs_root(root) / slug / JOB_LOG
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def last_duration(slug: str, profile: str, root: str | Path = "data") -> float | None:
    """Wall seconds of the paper's last successful job run at this profile (an estimate)."""
    done = [r for r in job_records(slug, root) if r.get("status") == "success" and r.get("profile") == profile]
    return float(done[-1]["wall_seconds"]) if done else None


def _run_rows(slug: str, root: Path) -> tuple[pd.DataFrame, str | None]:
    """The runs table rows of one paper and the run id of its current results."""
    record_path = runs_root(root) / slug / RUN_RECORD
    record = json.loads(record_path.read_text(encoding="utf-8")) if record_path.exists() else None
    columns = [name for name, _ in SCHEMA["runs"]]
    rows = [{**{c: None for c in columns}, **{k: v for k, v in r.items() if k in columns},
             "created_at": r.get("started_at"), "paper": slug} for r in job_records(slug, root)]
    if record and record.get("run_id") not in {r["run_id"] for r in rows}:
        rows.append({**{c: None for c in columns}, **{k: v for k, v in record.items() if k in columns},
                     "paper": slug})
    for row in rows:  # job lines lack what the report recorded about the same run
        if record and row["run_id"] == record.get("run_id"):
            for k in ("git_sha", "params_hash", "created_at"):
                row[k] = row[k] or record.get(k)
    frame = pd.DataFrame(rows, columns=columns)
    return frame, (record or {}).get("run_id")


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
            except BlockingIOError as err:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another process holds the warehouse writer lock {lock_path}") from err
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def create_tables(con) -> bool:
    """Create every table; a table whose columns differ from SCHEMA (an older layout) is
    dropped and recreated: the warehouse is derived data, reloaded from the files. Returns
    whether a table was recreated (then every paper must be reloaded)."""
    recreated = False
    for table, columns in SCHEMA.items():
        have = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                          "WHERE table_name = ? ORDER BY ordinal_position", [table]).fetchall()]
        if have and have != [name for name, _ in columns]:
            con.execute(f"DROP TABLE {table}")
            recreated = True
        cols = ", ".join(f"{name} {dtype}" for name, dtype in columns)
        con.execute(f"CREATE TABLE IF NOT EXISTS {table} ({cols})")
    return recreated


def _paper_rows(slug: str, table: str, root: Path, run_id: str | None) -> pd.DataFrame:
    frames = []
    for base in (results_root(root), runs_root(root)):
        for path in sorted((base / slug).glob(f"{table}*.parquet")):
            frame = pd.read_parquet(path)
            if "run_id" not in frame.columns:
                frame["run_id"] = run_id
            frames.append(frame)
    columns = [name for name, _ in SCHEMA[table]]
    if not frames:
        return pd.DataFrame(columns=columns)
    frame = pd.concat(frames, ignore_index=True)
    for column in columns:          # rows written before a column existed load as NULL
        if column not in frame.columns:
            frame[column] = None
    return frame[frame["paper"] == slug][columns]


def load_results(db_path: Path, root: Path, papers: list[str] | None = None) -> dict[str, int]:
    """Load every paper's rows (data/results and data/runs under `root`) into DuckDB,
    replacing that paper's previous rows.

    Idempotent: loading the same files twice leaves the same table contents. Serialised by a
    file lock, in one transaction per load. Returns {table: rows now in the table}.
    """
    import duckdb

    found = {p.name for base in (results_root(root), runs_root(root)) if base.exists()
             for p in base.iterdir() if p.is_dir()}
    slugs = papers if papers is not None else sorted(found)
    with _writer_lock(db_path):
        con = duckdb.connect(str(db_path))
        try:
            con.execute("BEGIN TRANSACTION")
            if create_tables(con):
                slugs = sorted(found)
            for slug in slugs:
                runs, run_id = _run_rows(slug, root)
                for table in SCHEMA:
                    rows = runs if table == "runs" else _paper_rows(slug, table, root, run_id)
                    con.execute(f"DELETE FROM {table} WHERE paper = ?", [slug])
                    if len(rows):
                        con.register("incoming", rows)
                        con.execute(f"INSERT INTO {table} SELECT * FROM incoming")
                        con.unregister("incoming")
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
        return load_results(self.db_path(), data_root(self.root), papers)

    def query(self, sql: str, params: list | None = None) -> pd.DataFrame:
        return read_table(self.db_path(), sql, params)
