"""benchmarks/_bench.py: the ratio and its direction, the bench CSV (replace, not append; sorted),
every script classified once, and every performance script recording its comparison."""
from __future__ import annotations

import ast
import csv
from pathlib import Path

import pytest

from benchmarks import _bench

BENCH_DIR = Path(_bench.__file__).resolve().parent


def _scripts() -> set[str]:
    """benchmarks/*.py less the device checks (jobs.device_check runs them) and _bench itself."""
    return {p.stem for p in BENCH_DIR.glob("*.py")
            if not p.stem.endswith("_device_check") and p.stem not in ("_torch_parity", "_bench")}


def _rows(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_ratio_direction_on_known_numbers():
    assert _bench.ratio(2.0, 6.0, "lower") == pytest.approx(3.0)        # 2 s vs 6 s: the method 3x faster
    assert _bench.ratio(50.0, 10.0, "higher") == pytest.approx(5.0)     # 50/s vs 10/s: 5x the throughput
    assert _bench.ratio(6.0, 2.0, "lower") == pytest.approx(1 / 3)      # slower method: < 1
    with pytest.raises(ValueError):
        _bench.ratio(1.0, 2.0, "faster")
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            _bench.ratio(bad, 1.0, "lower")


def test_record_prints_the_ratio_line(tmp_path, capsys):
    row = _bench.record("oscs_latency", "per_decision_s@n=100000", 1.2e-5, 3.4e-3, "s", "lower",
                        path=tmp_path / "bench.csv")
    line = capsys.readouterr().out.strip()
    assert line == ("oscs_latency  per_decision_s@n=100000  method 1.2e-05 s  baseline 0.0034 s  "
                    "ratio 283x (method better)")
    assert row["ratio"] == pytest.approx(3.4e-3 / 1.2e-5)
    _bench.record("x", "m", 10.0, 20.0, "samples/s", "higher", path=tmp_path / "bench.csv")
    assert capsys.readouterr().out.strip().endswith("ratio 0.5x (baseline better)")
    _bench.record("x", "m", 1.0, 1061.5, "s", "lower", path=tmp_path / "bench.csv")
    assert capsys.readouterr().out.strip().endswith("ratio 1062x (method better)")


def test_csv_replaces_a_key_keeps_the_others_sorted(tmp_path):
    path = tmp_path / "sub" / "bench.csv"
    _bench.record("zeta", "s@n=10", 2.0, 6.0, "s", "lower", path=path)
    _bench.record("alpha", "rate", 50.0, 10.0, "items/s", "higher", path=path)
    first = _rows(path)
    assert list(first[0]) == _bench.COLUMNS
    assert [(r["benchmark"], r["metric"]) for r in first] == [("alpha", "rate"), ("zeta", "s@n=10")]
    _bench.record("zeta", "s@n=10", 3.0, 6.0, "s", "lower", path=path)          # a re-run of one key
    rows = _rows(path)
    assert [(r["benchmark"], r["metric"]) for r in rows] == [("alpha", "rate"), ("zeta", "s@n=10")]
    assert float(rows[1]["method"]) == 3.0 and float(rows[1]["ratio"]) == pytest.approx(2.0)
    assert rows[0] == first[0]                                                   # the other row untouched
    assert rows[1]["better"] == "lower" and int(rows[1]["cores"]) >= 1 and rows[1]["cpu_model"]
    assert rows[1]["date"].endswith("+00:00")


def test_csv_path_from_argument_env_or_default(tmp_path, monkeypatch):
    monkeypatch.delenv(_bench.CSV_ENV, raising=False)
    assert _bench.csv_path() == _bench.DEFAULT_CSV == BENCH_DIR.parent / "results" / "bench.csv"
    monkeypatch.setenv(_bench.CSV_ENV, str(tmp_path / "env.csv"))
    assert _bench.csv_path() == tmp_path / "env.csv"
    assert _bench.csv_path(tmp_path / "arg.csv") == tmp_path / "arg.csv"
    _bench.record("b", "m", 1.0, 2.0, "s", "lower")
    assert [r["benchmark"] for r in _rows(tmp_path / "env.csv")] == ["b"]


def test_every_script_is_classified_exactly_once():
    performance, studies = set(_bench.PERFORMANCE), set(_bench.STUDIES)
    assert len(performance) == len(_bench.PERFORMANCE) and len(studies) == len(_bench.STUDIES), "a name twice"
    assert not performance & studies, f"in both: {sorted(performance & studies)}"
    scripts = _scripts()
    assert scripts - performance - studies == set(), "classify these in benchmarks/_bench.py"
    assert (performance | studies) - scripts == set(), "listed in benchmarks/_bench.py but no such script"


def _calls_record(path: Path) -> bool:
    """The script imports record from benchmarks._bench and calls it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = any(isinstance(node, ast.ImportFrom) and node.module == "benchmarks._bench"
                   and any(alias.name == "record" for alias in node.names) for node in ast.walk(tree))
    called = any(isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "record"
                 for node in ast.walk(tree))
    return imported and called


@pytest.mark.parametrize("name", _bench.PERFORMANCE)
def test_every_performance_script_records_its_comparison(name):
    assert _calls_record(BENCH_DIR / f"{name}.py"), f"benchmarks/{name}.py does not call _bench.record"


def test_the_record_check_fails_without_the_call(tmp_path):
    script = tmp_path / "dropped.py"
    script.write_text("from benchmarks._bench import record\n\nprint('no call')\n")
    assert not _calls_record(script)
    script.write_text("from benchmarks._bench import record\n\nrecord('b', 'm', 1, 2, 's', 'lower')\n")
    assert _calls_record(script)


def test_list_prints_the_performance_scripts(capsys):
    assert _bench.main(["--list"]) == 0
    assert capsys.readouterr().out.split() == list(_bench.PERFORMANCE)
