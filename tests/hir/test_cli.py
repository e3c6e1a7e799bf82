"""`python -m assets.hir.cli relabel`: judge lists and hindsight replays for anyone's rollouts."""
from __future__ import annotations

import json
import subprocess
import sys

from assets.hir import cli
from assets.hir.constraints import judge, parse_criteria


def test_relabel_rows(tmp_path):
    rows = [
        {"question": "write about fire .", "criteria": ["min_words:3", "include_word:fire", "no_commas"],
         "q_type": "type3", "response": "The fire, it spread."},
        {"question": "write about fire .", "criteria": ["min_words:3", "include_word:fire"], "q_type": "type1",
         "response": "the fire spread ."},
        {"question": "write about fire .", "criteria": ["min_words:9", "include_word:rain"], "q_type": "type2",
         "response": "the fire spread ."},
    ]
    src = tmp_path / "rollouts.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    done = subprocess.run([sys.executable, "-m", "assets.hir.cli", "relabel", "--jsonl", str(src), "--out", str(out)],
                          capture_output=True, text=True, check=True)
    assert "3 rows, 1 full successes, 1 replays" in done.stderr
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert got[0]["judge_list"] == [True, True, False] and "replay" in got[0]
    replay = got[0]["replay"]
    assert replay["criteria"] == ["min_words:3", "include_word:fire"] and replay["reward"] == 1
    assert "no commas" not in replay["instruction"] and "rules" in replay["instruction"]      # same template
    assert judge("the fire , it spread .".split(), parse_criteria(replay["criteria"]))[2] == 1.0
    assert got[1]["sparse"] == 1.0 and "replay" not in got[1]                                  # a success
    assert got[2]["dense"] == 0.0 and "replay" not in got[2]                                   # nothing to keep


def test_bad_rows_stop_with_their_line_number(tmp_path, capsys):
    src = tmp_path / "bad.jsonl"
    src.write_text(json.dumps({"question": "q", "criteria": ["include_word:a", "exclude_word:a"], "q_type": "type1",
                               "response": "a"}) + "\n")
    assert cli.main(["relabel", "--jsonl", str(src)]) == 2
    assert f"{src}: line 1: conflicting" in capsys.readouterr().err
    src.write_text("\n" + json.dumps({"question": "q", "criteria": ["no_commas"], "q_type": "type9", "response": "a"}))
    assert cli.main(["relabel", "--jsonl", str(src)]) == 2
    assert "line 2: " in (err := capsys.readouterr().err) and "unknown template" in err


def test_an_empty_jsonl_is_refused_not_0_rows(tmp_path, capsys):
    src = tmp_path / "empty.jsonl"
    src.write_text("\n\n")
    assert cli.main(["relabel", "--jsonl", str(src)]) == 2
    err = capsys.readouterr().err
    assert "empty" in err and "0 rows" not in err
