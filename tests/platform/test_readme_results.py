"""The README's scorecard is rendered from the committed results record; no number in it is
written by hand."""
from __future__ import annotations

import pandas as pd
import pytest

from jobs import readme_results
from jobs.papers import PAPERS
from jobs.readme_results import render


def _record():
    rows = [("oscs", "a", "claim", "holds"), ("oscs", "b", "claim", "refuted"), ("oscs", "c", "claim", "inconclusive"),
            ("oscs", "o", "observation", "report-only"), ("hir", "x", "claim", "inconclusive")]
    claims = pd.DataFrame([{"paper": p, "claim_id": c, "kind": k, "verdict": v, "profile": "cpu"}
                           for p, c, k, v in rows])
    runs = pd.DataFrame([{"paper": "oscs", "status": "success", "wall_seconds": 65.0},
                         {"paper": "oscs", "status": "success", "wall_seconds": 125.0},
                         {"paper": "hir", "status": "failure", "wall_seconds": 5.0}])
    return claims, runs


def test_render_replaces_only_the_block(tmp_path):
    (tmp_path / "oscs.md").write_text("x", encoding="utf-8")
    text = "intro\n<!-- results:scorecard -->\nold\n<!-- /results:scorecard -->\nWhy: hand-written.\n"
    out = render(text, *_record(), results_dir=tmp_path)
    assert "**1 hold · 1 refuted · 2 inconclusive** of 4 claims across 2 papers" in out
    assert ("| oscs | OSCS: online selection of safe LLM outputs with FAR control | 1 | 1 | 1 | 2 min 05 s | "
            "[results/oscs.md](results/oscs.md) |") in out
    assert "| hir | HiR: hindsight instruction replay for instruction-following RL | 0 | 0 | 1 | — | — |" in out
    assert "| brew | " in out and "not run" in out
    assert out.count("\n| ") == 1 + len(PAPERS)   # the header and one row per registered paper
    assert out.startswith("intro\n") and out.endswith("Why: hand-written.\n") and "\nold\n" not in out


def test_render_without_a_record_says_so():
    out = render("<!-- results:scorecard -->\n<!-- /results:scorecard -->\n", None, None)
    assert "No results record yet" in out
    with pytest.raises(ValueError, match="no <!-- results:scorecard --> block"):
        render("no block here", None, None)


def test_the_readme_scorecard_is_the_committed_record():
    """A hand-edited number, or a record committed without its README, fails here."""
    assert readme_results.main(["--check"]) == 0


def test_the_readme_stays_short_for_users():
    lines = readme_results.README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; per-paper detail belongs in results/<paper>.md"
