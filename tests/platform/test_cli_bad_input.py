"""Every bring-your-own-data CLI against one corpus of bad files (issue 46): exit status 2, no
traceback, one stderr line that names the file (and, for the generic mistakes, what is wrong).

The CLIs run in-process (`main(argv)`; an argparse or run_cli exit is caught), so the test costs
no interpreter or torch start-up per case. The corpus is generated per case under tmp_path from
one template per CLI (the columns or fields it needs), so no binary file lives in git. A case
that does not apply to a file format (a header in JSON, a BOM in an .npz) is not generated; the
10⁶-row case runs only for the CLIs with a row limit.
"""
from __future__ import annotations

import importlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from assets.acc_marl.layouts import ROOMS_2

BOM = b"\xef\xbb\xbf"
GARBAGE = bytes(range(1, 32)) * 8 + b"\x00" * 64 + b"PK\x03\x04 not really a zip"   # valid UTF-8, NUL bytes
BIG_ROWS = 10 ** 6


@dataclass
class Cli:
    """One CLI and the slot its bad file goes in. argv(bad, tmp) writes any companion files."""

    module: str
    fmt: str                                     # csv / jsonl / json / text / npz / mesh / image
    argv: Callable[[Path, Path], list[str]]
    suffix: str
    header: list[str] = field(default_factory=list)          # csv: the columns it needs
    rows: list[list[str]] = field(default_factory=list)      # csv: good rows
    numeric: int | None = None                   # csv: a column where NaN / inf is refused
    records: dict[str, str] = field(default_factory=dict)    # json(l): good / wrong / nan / inf / dup texts
    max_rows: int | None = None                  # the CLI's row limit (the 10⁶-row case)
    expect: dict[str, str] = field(default_factory=dict)     # case -> a fragment of the message


# ------------------------------------------------------------------ companions (valid files)
def _csv_text(header, rows, sep=","):
    return "\n".join([sep.join(header)] + [sep.join(r) for r in rows]) + "\n"


def _write(path: Path, content) -> Path:
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def _flow_npz(tmp: Path, **arrays) -> Path:
    attn = np.tril(np.ones((3, 3)))
    attn = (attn / attn.sum(1, keepdims=True))[None, None]
    base = {"attn": attn, "question": np.array([0]), "answer": np.array([2])}
    base.update(arrays)
    np.savez(tmp / "flow.npz", **{k: v for k, v in base.items() if v is not None})
    return tmp / "flow.npz"


def _demo_query(tmp: Path) -> Path:
    return _write(tmp / "query.json", json.dumps({"instruction": "x", "scene": [], "plan": []}))


NODATA = "nodata"
HIR = '{"question": "q", "criteria": ["no_commas"], "q_type": "type1", "response": %s}'
DEMO = '{"id": "d0", "instruction": "x", "scene": [], "keyframes": %s, "skills": []}'
DFA = '[{"states": 2, "accepting": [1], "transitions": {"0": {"9": %s}}}, "trivial"]'
VCOT_BAD = "fn f() {\n  let x = ;\n}\n"

CLIS = {
    "limix": Cli("assets.limix.cli", "csv", lambda bad, tmp: [
        "--train", str(bad), "--test", str(_write(tmp / "test.csv", "a,b\n0.1,1\n")), "--target", "y",
        "--data-dir", str(tmp / NODATA)], ".csv",
        header=["a", "b", "y"], rows=[[f"{i / 10:.1f}", str(i % 3), str(i % 2)] for i in range(12)],
        numeric=None, max_rows=10_000),           # NaN / inf cells are valid for limix (missing-value path)
    "pac_labels": Cli("assets.pac_labels.cli", "csv", lambda bad, tmp: [
        "--csv", str(bad), "--out", str(tmp / "out.csv"), "--label-col", "label", "--pred-col", "ai",
        "--conf-col", "conf", "--num-draws", "5", "--wsr-grid-size", "100"], ".csv",
        header=["label", "ai", "conf"], rows=[[c, c, "0.9"] for c in ["cat", "dog"] * 6], numeric=2,
        expect={"nan": "'conf' has 1 missing value(s) (NaN) at rows 3", "inf": "non-finite confidences at rows 3"}),
    "fair_selective": Cli("assets.fair_selective.cli", "csv", lambda bad, tmp: ["--csv", str(bad)], ".csv",
        header=["group", "action", "label", "accept_prob", "x"],
        rows=[[str(i % 2), str(int(i % 3 > 0)), str(i % 2) if i % 3 else "", "0.5", "ab"[i % 2]] for i in range(12)],
        numeric=3, expect={"nan": "column 'accept_prob' row 3: NaN", "inf": "column 'accept_prob' row 3: infinite"}),
    "pfn_causal": Cli("assets.pfn_causal.cli", "csv", lambda bad, tmp: [
        "--csv", str(bad), "--outcome", "y", "--do", "x1=0.5", "--profile", "smoke", "--data-dir", str(tmp / NODATA)],
        ".csv", header=["x1", "x2", "y"], rows=[[f"{i / 7:.3f}", f"{i % 5}", f"{i / 3:.3f}"] for i in range(20)],
        numeric=0, max_rows=10_000, expect={"nan": "'x1' has non-finite", "inf": "'x1' has non-finite"}),
    "ts_layers": Cli("assets.ts_layers.cli", "csv", lambda bad, tmp: [
        "prune", "--csv", str(bad), "--column", "y", "--profile", "smoke", "--data-dir", str(tmp / NODATA)], ".csv",
        header=["t", "y"], rows=[[str(i), f"{np.sin(i):.4f}"] for i in range(12)], numeric=1,
        expect={"nan": "NaN/inf or non-numeric values (first at row 3", "inf": "(first at row 3"}),
    "dispat": Cli("assets.dispat.cli", "csv", lambda bad, tmp: [
        "fit", "--csv", str(bad), "--model", str(tmp / "model"), "--text-columns", "desc", "--profile", "smoke"],
        ".csv", header=["amount", "category", "desc"],
        rows=[[f"{10 + i * 1.5:.2f}", "food" if i % 2 else "fuel", f"item {i}"] for i in range(12)], numeric=0,
        expect={"nan": "column 'amount' row 3: NaN", "inf": "column 'amount' row 3: infinite"}),
    "hir": Cli("assets.hir.cli", "jsonl", lambda bad, tmp: ["relabel", "--jsonl", str(bad)], ".jsonl",
        records={"good": HIR % '"a b"', "wrong": '{"prompt": "q", "answer": "a"}', "nan": HIR % "NaN",
                 "inf": HIR % "Infinity", "dup": HIR.replace('"q",', '"q", "question": "r",') % '"a"'},
        expect={"wrong_columns": "line 1: missing field 'question'"}),
    "skill_recompose": Cli("assets.skill_recompose.cli", "jsonl", lambda bad, tmp: [
        "--demos", str(bad), "--query", str(_demo_query(tmp))], ".jsonl",
        records={"good": DEMO % "[]", "wrong": '{"id": "d0", "text": "x"}',
                 "nan": DEMO % "[[NaN, 0, 0, 0, 0, 0, 1]]", "inf": DEMO % "[[Infinity, 0, 0, 0, 0, 0, 1]]",
                 "dup": DEMO.replace('"d0",', '"d0", "id": "d1",') % "[]"},
        expect={"wrong_columns": "demo 0: missing field(s) instruction, scene, keyframes, skills"}),
    "acc_marl": Cli("assets.acc_marl.cli", "json", lambda bad, tmp: [
        "--layout", str(_write(tmp / "rooms.txt", ROOMS_2)),
        "--dfas", str(bad), "--checkpoint", str(tmp / "none.pt")], ".json",
        records={"good": DFA % "1", "wrong": '[{"stats": 2}, "trivial"]', "nan": DFA % "NaN", "inf": DFA % "Infinity",
                 "dup": DFA.replace('"states": 2,', '"states": 2, "states": 3,') % "1", "bom": '{"states": 2}'},
        expect={"wrong_columns": "DFA 0: malformed", "bom_wrong": "the tasks file has not a list"}),
    "vcot": Cli("assets.vcot.cli", "text", lambda bad, tmp: ["lift", str(bad)], ".rs",
        records={"bom": VCOT_BAD}, expect={"bom_wrong": "line 2:11"}),
    "flowtracer_tokens": Cli("assets.flowtracer.cli", "text", lambda bad, tmp: [
        "--npz", str(_flow_npz(tmp)), "--tokens", str(bad), "--out", str(tmp / "out")], ".txt",
        records={"bom": "a\nb\n"}, expect={"bom_wrong": "has 2 tokens (lines) but the attention covers T=3"}),
    "flowtracer_npz": Cli("assets.flowtracer.cli", "npz", lambda bad, tmp: [
        "--npz", str(bad), "--tokens", str(_write(tmp / "tokens.txt", "a\nb\nc\n")), "--out", str(tmp / "out")],
        ".npz", expect={"wrong_columns": "lacks answer", "nan": "finite probabilities", "inf": "finite probabilities",
                        "pickled": "refused", "binary": "not a valid .npz"}),
    "lari_mesh": Cli("assets.lari.cli", "mesh", lambda bad, tmp: [
        "annotate", "--mesh", str(bad), "--out", str(tmp / "out"), "--views", "1", "--size", "8"], ".obj",
        expect={"header_only": "no faces", "nan": "non-finite coordinates at vertex 1",
                "inf": "non-finite coordinates at vertex 1", "unknown_format": "supported: .obj, .off, .ply, .stl",
                "binary": "binary data", "binary_ply": "PLY", "bom_wrong": "no faces"}),
    "lari_image": Cli("assets.lari.cli", "image", lambda bad, tmp: [
        "predict", "--image", str(bad), "--data-dir", str(tmp / NODATA)], ".png",
        expect={"binary": "not a valid PNG image", "wrong_columns": "an RGB image (H, W, 3) is needed",
                "nan": "non-finite pixels", "inf": "non-finite pixels", "unknown_format": "supported: .png"}),
}

GENERIC = {"missing": "no such file", "empty": "empty", "whitespace": "empty (whitespace only)",
           "not_utf8": "not UTF-8", "binary": "binary data, not text", "semicolons": "';' separators",
           "header_only": "header only, no data rows", "dup_columns": "duplicated", "wrong_columns": "missing column",
           "bom_wrong": "missing column", "big": "(the limit)"}
JSON_EXPECT = {"semicolons": "line 1 column 1", "dup_columns": "duplicated key(s)", "nan": "NaN is not a JSON number",
               "inf": "Infinity is not a JSON number", "bom_wrong": "missing field"}


# ------------------------------------------------------------------ the corpus
def _csv_case(cli: Cli, case: str):
    h, rows = cli.header, cli.rows
    wrong = [f"wrong_{c}" for c in h]

    def with_cell(value):
        bad = [list(r) for r in rows]
        bad[3][cli.numeric] = value
        return _csv_text(h, bad)

    table = {
        "not_utf8": _csv_text(h, rows).replace(h[0], h[0] + "\xe9", 1).encode("latin-1"),
        "bom_wrong": BOM + _csv_text(wrong, rows).encode(),
        "semicolons": _csv_text(h, rows, ";"),
        "header_only": ",".join(h) + "\n",
        "dup_columns": _csv_text(h + h[:1], [r + r[:1] for r in rows]),
        "wrong_columns": _csv_text(wrong, rows),
        "nan": (lambda: with_cell("nan")) if cli.numeric is not None else None,
        "inf": (lambda: with_cell("inf")) if cli.numeric is not None else None,
        "big": (lambda: ",".join(h) + "\n" + (",".join(rows[1]) + "\n") * BIG_ROWS) if cli.max_rows else None,
    }
    value = table.get(case)
    return value() if callable(value) else value


def _json_case(cli: Cli, case: str):
    r = cli.records
    lines = (lambda *xs: "\n".join(xs) + "\n") if cli.fmt == "jsonl" else (lambda *xs: xs[0])
    table = {"not_utf8": lines(r["good"].replace('"', '"caf\xe9 ', 1)).encode("latin-1"),
             "bom_wrong": BOM + lines(r.get("bom", r["wrong"])).encode(), "semicolons": "name;value\nq;1\n",
             "dup_columns": lines(r["dup"]), "wrong_columns": lines(r["wrong"]), "nan": lines(r["nan"]),
             "inf": lines(r["inf"])}
    return table.get(case)


def _text_case(cli: Cli, case: str):
    return {"not_utf8": b"a\n\xff\xfe b\nc\n", "bom_wrong": BOM + cli.records["bom"].encode()}.get(case)


def _npz_case(cli: Cli, case: str, tmp: Path):
    attn = _flow_npz(tmp)
    base = dict(np.load(attn))
    buf = io.BytesIO()
    if case == "wrong_columns":
        np.savez(buf, attn=base["attn"], question=base["question"])
    elif case in ("nan", "inf"):
        a = base["attn"].copy()
        a[0, 0, 1, 0] = np.nan if case == "nan" else np.inf
        np.savez(buf, **{**base, "attn": a})
    elif case == "pickled":
        np.savez(buf, **{**base, "question": np.array([{"evil": 1}], dtype=object)})
    else:
        return None
    return buf.getvalue()


OBJ = "v 0 0 0\nv {} 0 0\nv 0 1 0\nv 0 0 1\n"
MESH = {"not_utf8": b"v 0 0 0\n# caf\xe9\nv 1 0 0\nv 0 1 0\nf 1 2 3\n",
        "bom_wrong": BOM + b"solid nonsense\nfacet normal\n", "header_only": OBJ.format(1),
        "nan": OBJ.format("nan") + "f 1 2 3\nf 1 3 4\n", "inf": OBJ.format("inf") + "f 1 2 3\nf 1 3 4\n"}


def _image_case(case: str):
    buf = io.BytesIO()
    if case == "wrong_columns":
        np.save(buf, np.zeros((8, 8), np.uint8))
    elif case in ("nan", "inf"):
        img = np.zeros((8, 8, 3), np.float32)
        img[2, 5, 1] = np.nan if case == "nan" else np.inf
        np.save(buf, img)
    else:
        return None
    return buf.getvalue()


COMMON = ("missing", "empty", "whitespace", "not_utf8", "binary", "bom_wrong")
CASES = {"csv": COMMON + ("semicolons", "header_only", "dup_columns", "wrong_columns", "nan", "inf", "big"),
         "jsonl": COMMON + ("semicolons", "dup_columns", "wrong_columns", "nan", "inf"),
         "json": COMMON + ("semicolons", "dup_columns", "wrong_columns", "nan", "inf"),
         "text": COMMON,
         "npz": ("missing", "empty", "binary", "wrong_columns", "nan", "inf", "pickled"),
         "mesh": COMMON + ("header_only", "nan", "inf", "unknown_format", "binary_ply"),
         "image": ("missing", "empty", "whitespace", "binary", "wrong_columns", "nan", "inf", "unknown_format")}


def bad_file(cli: Cli, case: str, tmp: Path) -> Path | None:
    """The case's file (not written for 'missing'); None where the case does not apply to the CLI."""
    suffix = {"unknown_format": ".xyz" if cli.fmt == "mesh" else ".gif", "binary_ply": ".ply"}.get(case, cli.suffix)
    if cli.fmt == "image" and case in ("wrong_columns", "nan", "inf"):
        suffix = ".npy"
    path = tmp / f"bad_{case}{suffix}"
    generic = {"missing": None, "empty": b"", "whitespace": b"  \n\t\r\n", "binary": GARBAGE,
               "binary_ply": GARBAGE, "unknown_format": b"0 0 0\n1 0 0\n0 1 0\n"}
    if case in generic:
        content = generic[case]
    elif cli.fmt == "csv":
        content = _csv_case(cli, case)
    elif cli.fmt in ("jsonl", "json"):
        content = _json_case(cli, case)
    elif cli.fmt == "text":
        content = _text_case(cli, case)
    elif cli.fmt == "npz":
        content = _npz_case(cli, case, tmp)
    elif cli.fmt == "mesh":
        content = MESH.get(case)
    else:
        content = _image_case(case)
    if content is None and case != "missing":
        return None
    return path if content is None else _write(path, content)


def _expected(cli: Cli, case: str) -> str:
    if case in cli.expect:
        return cli.expect[case]
    if cli.fmt in ("jsonl", "json") and case in JSON_EXPECT:
        return JSON_EXPECT[case]
    return GENERIC[case]


PARAMS = [pytest.param(name, case, id=f"{name}-{case}") for name, cli in CLIS.items() for case in CASES[cli.fmt]
          if not (case == "big" and cli.max_rows is None) and not (case in ("nan", "inf") and cli.fmt == "csv"
                                                                 and cli.numeric is None)]


def test_every_bring_your_own_cli_is_in_the_corpus():
    cli_files = {p.parent.name for p in Path(__file__).resolve().parents[2].glob("assets/*/cli.py")}
    covered = {c.module.split(".")[1] for c in CLIS.values()}
    assert cli_files == covered and len(covered) == 12


@pytest.mark.parametrize("name, case", PARAMS)
def test_a_bad_file_exits_2_with_one_line_naming_it(name, case, tmp_path, capsys, monkeypatch):
    cli = CLIS[name]
    monkeypatch.setenv("PAPERLAB_DATA_DIR", str(tmp_path / NODATA))
    bad = bad_file(cli, case, tmp_path)
    assert bad is not None
    argv = cli.argv(bad, tmp_path)
    main = importlib.import_module(cli.module).main
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:                    # argparse, or a CLI that exits itself
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2, (code, out[-500:], err[-2000:])
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(bad) in lines[0], lines[0]
    assert _expected(cli, case) in lines[0], lines[0]


# a parameter out of range together with a file that does not exist: the parameter is named, so it
# was checked before any data was read
BAD_PARAMS = {
    "limix": (["--steps", "0"], "--steps=0: must be >= 1"),
    "pac_labels": (["--epsilon", "1.5"], "--epsilon=1.5: must lie in (0, 1)"),
    "fair_selective": (["--omega", "-0.1"], "--omega=-0.1: must be > 0"),
    "pfn_causal": (["--pwf-steps", "0"], "--pwf-steps=0: must be >= 1"),
    "ts_layers": (["--tau", "1.5"], "--tau=1.5: must lie in (0, 1]"),
    "skill_recompose": (["--alpha", "2"], "--alpha=2.0: must lie in [0, 1]"),
    "acc_marl": (["--episodes", "0"], "--episodes=0: must be >= 1"),
    "vcot": (["--rlimit", "0"], "--rlimit=0: must be >= 1"),
    "lari_mesh": (["--views", "0"], "--views=0: must be >= 1"),
    "lari_image": (["--layers", "0"], "--layers=0: must be >= 1"),
}


@pytest.mark.parametrize("name", sorted(BAD_PARAMS))
def test_parameters_are_checked_before_any_file_is_read(name, tmp_path, capsys):
    cli = CLIS[name]
    extra, message = BAD_PARAMS[name]
    main = importlib.import_module(cli.module).main
    assert main(cli.argv(tmp_path / f"missing{cli.suffix}", tmp_path) + extra) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "no such file" not in err, err


def test_dispat_score_checks_alpha_before_the_file(tmp_path, capsys):
    from assets.dispat import cli

    assert cli.main(["score", "--csv", str(tmp_path / "none.csv"), "--model", str(tmp_path), "--alpha", "1"]) == 2
    assert "--alpha=1.0: must lie in (0, 1)" in capsys.readouterr().err
