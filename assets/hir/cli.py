"""Bring your own rollouts: judge lists and HiR replays for any verifiable-constraint RL data.

    python -m assets.hir.cli relabel --jsonl rollouts.jsonl [--out relabelled.jsonl]

Each input line is a JSON object with `question` (text), `criteria` (constraint specs, e.g.
["min_words:5", "include_word:police", "no_commas"]), `q_type` (type1–type6) and `response`
(text). Each output line adds `judge_list`, `dense`, `sparse` and, for a partial success
(0 < dense < 1), `replay`: the hindsight instruction — same question and template, only the
satisfied constraints — as `criteria`, its rendered `instruction` and `reward` 1 (re-verified).
A bad file (missing, empty, not UTF-8, not JSON Lines, no records) or a bad row (a missing field,
unknown or conflicting constraints, unknown template) exits with status 2 and one stderr line
naming the file and the line.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator

from assets.common.inputs import InputError, read_jsonl, run_cli
from assets.hir.constraints import ConstraintError, conflicts, judge, parse_criteria, render
from assets.hir.data import tokenize
from assets.hir.replay import make_replays


def relabel_row(row: dict) -> dict:
    for key in ("question", "criteria", "q_type", "response"):
        if key not in row:
            raise ConstraintError(f"missing field {key!r}")
    criteria = parse_criteria(list(row["criteria"]))
    found = conflicts(criteria)
    if found:
        raise ConstraintError(f"conflicting constraints: {found}")
    question = tokenize(str(row["question"]))
    render(question, criteria, str(row["q_type"]))          # validates the template
    tokens = tokenize(str(row["response"]))
    judged, dense, sparse = judge(tokens, criteria)
    out = {**row, "judge_list": judged, "dense": dense, "sparse": sparse}
    if 0 < dense < 1:
        (replay,) = make_replays([0], [criteria], [judged], [tokens])
        out["replay"] = {"question": row["question"], "criteria": [c.spec for c in replay.kept],
                         "q_type": row["q_type"],
                         "instruction": " ".join(render(question, replay.kept, str(row["q_type"]))),
                         "response": row["response"], "reward": replay.reward}
    return out


def relabel(lines: Iterable[str], where: str = "input") -> Iterator[dict]:
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise TypeError(f"a JSON object per line is needed, got {type(row).__name__}")
            yield relabel_row(row)
        except (ConstraintError, json.JSONDecodeError, TypeError) as err:
            raise InputError(f"{where}: line {number}: {err}") from None


def relabel_file(path: str) -> list[dict]:
    """Every row of a JSONL file, relabelled (InputError naming the file and line)."""
    read_jsonl(path)                            # missing / empty / not UTF-8 / parse errors / no records
    with open(path, encoding="utf-8-sig") as handle:
        return list(relabel(handle, str(path)))


@run_cli
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m assets.hir.cli", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rel = sub.add_parser("relabel", help="judge lists and hindsight replays for a JSONL of rollouts")
    rel.add_argument("--jsonl", required=True, help="input rows: question, criteria, q_type, response")
    rel.add_argument("--out", help="output JSONL (default: stdout)")
    args = parser.parse_args(argv)
    rows = relabel_file(args.jsonl)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    replays = sum("replay" in r for r in rows)
    print(f"{len(rows)} rows, {sum(r['sparse'] == 1.0 for r in rows)} full successes, {replays} replays",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
