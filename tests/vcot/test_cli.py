"""Bring your own: `python -m assets.vcot.cli lift|mask|score` on a user's file."""
from __future__ import annotations

import json

from assets.vcot import cli
from tests.vcot import programs as P


def test_lift_mask_score_round_trip(tmp_path, capsys):
    src = tmp_path / "walk.rs"
    src.write_text(P.LOOP)
    lifted, steps = tmp_path / "walk_vcot.rs", tmp_path / "steps.jsonl"
    assert cli.main(["lift", str(src), "--out", str(lifted), "--steps", str(steps)]) == 0
    assert "invariant" in lifted.read_text()
    tasks = tmp_path / "tasks.jsonl"
    assert cli.main(["mask", str(lifted), "--out", str(tasks)]) == 0
    rows = [json.loads(line) for line in tasks.read_text().splitlines()]
    assert rows and {"ratio", "type"} <= {r["dimension"] for r in rows}
    comps = tmp_path / "completions.jsonl"
    comps.write_text("".join(json.dumps({"task_id": r["task_id"], "completion": {h["hole_id"]: h["gold"]
                                                                                 for h in r["holes"]}}) + "\n"
                             for r in rows))
    out = tmp_path / "scores.jsonl"
    capsys.readouterr()
    assert cli.main(["score", str(lifted), "--tasks", str(tasks), "--completions", str(comps),
                     "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert summary["Acc"] == 100.0 and summary["tasks"] == len(rows)
    assert all(json.loads(line)["verified"] for line in out.read_text().splitlines())


def test_bad_input_exits_2_with_a_reason(tmp_path, capsys):
    cases = {
        "parse.rs": ("fn f() {\n  let x = ;\n}\n", "line 2:11"),
        "names.rs": ("fn f() {\n    let x = y;\n}\n", "unknown name 'y'"),
        "assume.rs": ("fn f() {\n    assume(true);\n}\n", "assume is not allowed"),
        "unproved.rs": (P.UNFOLD.replace("    assert(tri(0) == 0);\n", ""), "does not verify: one: postcondition"),
    }
    for name, (text, reason) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        assert cli.main(["lift", str(path)]) == 2
        assert reason in capsys.readouterr().err, name
    src = tmp_path / "g.rs"
    src.write_text(P.TWO_ASSERTS)
    tasks = tmp_path / "tasks.jsonl"
    assert cli.main(["mask", str(src), "--out", str(tasks)]) == 0
    task_id = json.loads(tasks.read_text().splitlines()[0])["task_id"]
    for row, reason in [({"task_id": "nope", "completion": {}}, "unknown task id 'nope'"),
                        ({"task_id": task_id, "completion": {"h5": "assert(true);"}}, "unknown hole ids ['h5']")]:
        comps = tmp_path / "c.jsonl"
        comps.write_text(json.dumps(row) + "\n")
        capsys.readouterr()
        assert cli.main(["score", str(src), "--tasks", str(tasks), "--completions", str(comps)]) == 2
        assert reason in capsys.readouterr().err
