"""The README's scorecard, rendered from the committed results record (results/claims.csv, runs.csv).

    python -m jobs.readme_results          # rewrite the generated block of README.md
    python -m jobs.readme_results --check  # exit 1 when the block differs from the record (a test runs it)

The block between `<!-- results:scorecard -->` and `<!-- /results:scorecard -->` holds the totals
(holds / refuted / inconclusive) and one row per registered paper: what it tests, its three counts,
its last cold wall time at the DVC profile and a link to results/<slug>.md. Nothing in it is
written by hand: `make reproduce` (through jobs.results) rewrites it with the record.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

from assets.common.claims import OUTCOMES
from jobs.papers import PAPERS, TESTS
from jobs.platform import scorecard_summary, totals_line
from resources.profiles import REPO_ROOT

README = REPO_ROOT / "README.md"
RESULTS = REPO_ROOT / "results"
BLOCK = re.compile(r"(<!-- results:scorecard -->\n)(?:.*?\n)?(<!-- /results:scorecard -->)", re.S)


def _duration(seconds: float | None) -> str:
    if seconds is None or pd.isna(seconds):
        return "—"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


def scorecard_block(claims: pd.DataFrame | None, runs: pd.DataFrame | None, results_dir: Path = RESULTS) -> str:
    """The generated scorecard: totals line and one row per registered paper."""
    if claims is None or claims.empty:
        return ("No results record yet: `make reproduce` writes `results/` (claims, run times, scorecard) "
                "and this table.")
    summary = scorecard_summary(claims).set_index("paper")
    done = runs[runs["status"] == "success"] if runs is not None and len(runs) else pd.DataFrame(columns=["paper"])
    lines = [totals_line(summary.reset_index()) + ".", "",
             "| paper | what it tests | holds | refuted | inconclusive | cold time (cpu) | details |",
             "|---|---|---|---|---|---|---|"]
    for slug in PAPERS:
        mine = done[done["paper"] == slug]
        wall = _duration(mine["wall_seconds"].iloc[-1] if len(mine) else None)
        link = f"[results/{slug}.md](results/{slug}.md)" if (results_dir / f"{slug}.md").exists() else "—"
        if slug in summary.index:
            counts = " | ".join(str(int(summary.loc[slug, v])) for v in OUTCOMES)
        else:
            counts = "not run | | "
        lines.append(f"| {slug} | {TESTS.get(slug, '')} | {counts} | {wall} | {link} |")
    return "\n".join(lines)


def render(text: str, claims: pd.DataFrame | None, runs: pd.DataFrame | None, results_dir: Path = RESULTS) -> str:
    if not BLOCK.search(text):
        raise ValueError("README.md has no <!-- results:scorecard --> block")
    body = scorecard_block(claims, runs, results_dir)
    return BLOCK.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)


def committed_record(results_dir: Path = RESULTS) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """results/claims.csv and runs.csv as on disk (None where absent)."""
    def read(name: str) -> pd.DataFrame | None:
        path = results_dir / name
        return pd.read_csv(path, keep_default_na=False, na_values=[""]) if path.exists() else None

    claims = read("claims.csv")
    if claims is not None:
        claims = claims.assign(profile=claims.get("profile", "cpu"))
    return claims, read("runs.csv")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.readme_results", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md differs from the record")
    args = parser.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    new = render(text, *committed_record())
    if args.check:
        if new != text:
            print("README.md's scorecard differs from results/: run `make readme-results`", file=sys.stderr)
            return 1
        return 0
    if new != text:
        README.write_text(new, encoding="utf-8")
        print("README.md scorecard rewritten from results/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
