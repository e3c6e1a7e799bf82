"""The README's results section, written from the warehouse (claims and runs tables).

    python -m jobs.readme_results          # rewrite the generated blocks of README.md
    python -m jobs.readme_results --print  # print them instead

Per paper, the block between `<!-- results:<slug> -->` and `<!-- /results:<slug> -->` gets a
heading (holds / refuted / inconclusive, the command, the wall time of the last successful job run at the
profile, from the `runs` table) and the claims table; the hand-written explanation after the
block is left alone. The summary line between `<!-- results:summary -->` and
`<!-- /results:summary -->` counts the claims. Only the profile DVC reproduces (cpu) is written.
"""
from __future__ import annotations

import argparse
import re
import sys

import pandas as pd

from assets.common.claims import HOLDS, INCONCLUSIVE, OUTCOMES, REFUTED, SYMBOL
from jobs.papers import PAPERS
from jobs.platform import scorecard_summary, totals_line
from resources.profiles import REPO_ROOT, load_all_params

README = REPO_ROOT / "README.md"


def _duration(seconds: float | None) -> str:
    if seconds is None or pd.isna(seconds):
        return "wall time not recorded"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def counts_text(counted: pd.DataFrame) -> str:
    """'2 hold · 1 refuted · 3 inconclusive' over counted claim rows (column `verdict`)."""
    n = {v: int((counted["verdict"] == v).sum()) for v in OUTCOMES}
    return f"{n[HOLDS]} hold · {n[REFUTED]} refuted · {n[INCONCLUSIVE]} inconclusive"


def paper_block(slug: str, claims: pd.DataFrame, runs: pd.DataFrame, profile: str) -> str:
    own = claims[(claims["paper"] == slug) & (claims["profile"] == profile)]
    counted = own[own["kind"] == "claim"]
    done = runs[(runs["paper"] == slug) & (runs["profile"] == profile) & (runs["status"] == "success")]
    wall = _duration(done["wall_seconds"].iloc[-1] if len(done) else None)
    lines = [f"### {slug} — {counts_text(counted)} · `.venv/bin/python -m jobs.run {slug} --profile {profile}` "
             f"· {wall}", "", "| claim | paper says | we measured | seeds | verdict |", "|---|---|---|---|---|"]
    for row in own.sort_values(["kind", "claim_id"]).itertuples():
        verdict = f"{SYMBOL[row.verdict]} {row.verdict}" if row.kind == "claim" else row.verdict
        if row.kind == "claim" and isinstance(getattr(row, "premise", ""), str) and "(FAILED)" in row.premise:
            verdict += f" (premise: {row.premise})"
        lines.append(f"| {row.claim_id} | {_cell(row.paper_value)} | {_cell(row.measured_value)} | "
                     f"{_cell(row.seeds or '—')} | {_cell(verdict)} |")
    return "\n".join(lines)


def summary_line(claims: pd.DataFrame, profile: str) -> str:
    own = claims[claims["profile"] == profile]
    papers = [p for p in PAPERS if p in set(own["paper"])]
    summary = scorecard_summary(own[own["paper"].isin(papers)])
    return totals_line(summary) + "."


def render(text: str, claims: pd.DataFrame, runs: pd.DataFrame, profile: str) -> str:
    def replace(tag: str, body: str, text: str) -> str:
        # an empty block (the two markers on consecutive lines) must match too
        pattern = re.compile(rf"(<!-- results:{tag} -->\n)(?:.*?\n)?(<!-- /results:{tag} -->)", re.S)
        return pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)

    text = replace("summary", summary_line(claims, profile), text)
    for slug in PAPERS:
        if (claims["paper"] == slug).any():
            text = replace(slug, paper_block(slug, claims, runs, profile), text)
    return text


def main(argv: list[str] | None = None) -> int:
    from resources.artifacts import data_root
    from resources.warehouse import read_table

    parser = argparse.ArgumentParser(prog="python -m jobs.readme_results", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--print", action="store_true", help="print the blocks instead of writing README.md")
    args = parser.parse_args(argv)
    db = data_root() / "results.duckdb"
    if not db.exists():
        print(f"{db} does not exist: run make reproduce first", file=sys.stderr)
        return 1
    profile = str(load_all_params().get("dvc_profile", "cpu"))
    claims = read_table(db, "SELECT * FROM claims")
    runs = read_table(db, "SELECT * FROM runs ORDER BY created_at NULLS FIRST")
    if args.print:
        print(summary_line(claims, profile))
        for slug in PAPERS:
            print("\n" + paper_block(slug, claims, runs, profile))
        return 0
    text = README.read_text(encoding="utf-8")
    README.write_text(render(text, claims, runs, profile), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
