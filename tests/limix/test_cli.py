"""`python -m assets.limix.cli`: probabilities for test rows (a tiny model trained when no
checkpoint is stored), and bad input refused with exit 2 and one stderr line naming the file."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "assets.limix.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)


def _write(path: Path, header: list[str], rows: list[list]) -> Path:
    path.write_text("\n".join([",".join(header)] + [",".join(map(str, r)) for r in rows]) + "\n", encoding="utf-8")
    return path


def _tables(tmp_path, n=40):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 2))
    y = (x[:, 0] > 0).astype(int)
    rows = [[f"{a:.4f}", f"{b:.4f}", ["red", "blue"][i % 2], yy] for i, ((a, b), yy) in enumerate(zip(x, y))]
    rows[0][1], rows[1][0] = "", "inf"                 # empty and infinite cells are valid
    train = _write(tmp_path / "train.csv", ["a", "b", "colour", "y"], rows[:30])
    test = _write(tmp_path / "test.csv", ["a", "b", "colour", "y"], rows[30:])
    return train, test


def test_cli_prints_probabilities_for_every_test_row(tmp_path):
    train, test = _tables(tmp_path)
    out = tmp_path / "p.csv"
    res = _cli("--train", train, "--test", test, "--target", "y", "--out", out, "--steps", 3,
               "--data-dir", tmp_path / "nodata", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    lines = out.read_text().strip().splitlines()
    assert lines[0] == "p_0,p_1" and len(lines) == 11
    p = np.array([[float(v) for v in line.split(",")] for line in lines[1:]])
    assert np.isfinite(p).all() and np.allclose(p.sum(1), 1, atol=1e-4)


def _bad(tmp_path, kind):
    train, test = _tables(tmp_path)
    if kind == "missing":
        return ["--train", tmp_path / "nope.csv", "--test", test, "--target", "y"], "nope.csv"
    if kind == "empty":
        (tmp_path / "e.csv").write_text("")
        return ["--train", tmp_path / "e.csv", "--test", test, "--target", "y"], "e.csv"
    if kind == "utf8":
        (tmp_path / "b.csv").write_bytes(b"a,y\n\xff\xfe,1\n")
        return ["--train", tmp_path / "b.csv", "--test", test, "--target", "y"], "b.csv"
    if kind == "target":
        return ["--train", train, "--test", test, "--target", "label"], "train.csv"
    if kind == "classes":
        t = _write(tmp_path / "c.csv", ["a", "y"], [[i, i] for i in range(12)])
        return ["--train", t, "--test", test, "--target", "y"], "c.csv"
    if kind == "one_class":
        t = _write(tmp_path / "o.csv", ["a", "b", "colour", "y"], [[i, i, "red", 1] for i in range(5)])
        return ["--train", t, "--test", test, "--target", "y"], "o.csv"
    if kind == "wide":
        cols = [f"f{i}" for i in range(70)]
        t = _write(tmp_path / "w.csv", [*cols, "y"], [[*range(70), i % 2] for i in range(6)])
        q = _write(tmp_path / "wq.csv", cols, [list(range(70))])
        return ["--train", t, "--test", q, "--target", "y", "--steps", 1], "w.csv"
    if kind == "strings":
        t = _write(tmp_path / "s.csv", ["name", "y"], [[f"id{i}", i % 2] for i in range(40)])
        q = _write(tmp_path / "sq.csv", ["name"], [["id1"]])
        return ["--train", t, "--test", q, "--target", "y"], "s.csv"
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["missing", "empty", "utf8", "target", "classes", "one_class", "wide", "strings"])
def test_bad_input_exits_2_with_one_line_naming_the_file(tmp_path, kind):
    args, name = _bad(tmp_path, kind)
    res = _cli(*args, "--data-dir", tmp_path / "nodata", cwd=tmp_path)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and lines[0].startswith("error:")


def test_cli_reads_a_learned_checkpoint_from_the_data_dir(smoke, tmp_path):
    run = smoke("limix")
    train, test = _tables(tmp_path)
    res = _cli("--train", train, "--test", test, "--target", "y", "--data-dir", run.data_dir, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "checkpoints/" in res.stderr or "rabel_snf_s0" in res.stderr
    assert res.stdout.splitlines()[0] == "p_0,p_1" and len(res.stdout.splitlines()) == 11
