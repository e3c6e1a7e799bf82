"""The README's results blocks are written from the warehouse tables, prose around them kept."""
from __future__ import annotations

import pandas as pd

from jobs.readme_results import render


def test_render_replaces_only_the_generated_blocks():
    claims = pd.DataFrame([
        {"paper": "oscs", "claim_id": "far_control", "kind": "claim", "paper_value": "FAR ≤ α",
         "verdict": "refuted", "premise": "", "measured_value": "+0.28 | worst", "seeds": "0–9 (10)", "profile": "cpu"},
        {"paper": "oscs", "claim_id": "trend", "kind": "observation", "paper_value": "p",
         "verdict": "report-only", "premise": "", "measured_value": "m", "seeds": "", "profile": "cpu"},
        {"paper": "oscs", "claim_id": "b1", "kind": "claim", "paper_value": "p",
         "verdict": "holds", "premise": "", "measured_value": "m", "seeds": "", "profile": "cpu"},
    ])
    runs = pd.DataFrame([{"paper": "oscs", "profile": "cpu", "status": "success", "wall_seconds": 65.0},
                         {"paper": "oscs", "profile": "cpu", "status": "success", "wall_seconds": 125.0}])
    text = ("intro\n<!-- results:summary -->\nold\n<!-- /results:summary -->\n\n<!-- results:oscs -->\n"
            "### oscs — stale\n<!-- /results:oscs -->\n\nWhy ❌: hand-written.\n")
    out = render(text, claims, runs, "cpu")
    assert ("**1 hold · 1 refuted · 0 inconclusive** of 2 claims across 1 papers (1 report-only observations and 0 "
            "sanity rows not counted).") in out
    assert ("### oscs — 1 hold · 1 refuted · 0 inconclusive · `.venv/bin/python -m jobs.run oscs --profile cpu` "
            "· 2 min 05 s") in out
    assert "| far_control | FAR ≤ α | +0.28 \\| worst | 0–9 (10) | ❌ refuted |" in out
    assert "| trend | p | m | — | report-only |" in out
    assert out.startswith("intro\n") and out.endswith("Why ❌: hand-written.\n") and "stale" not in out


def test_render_fills_an_empty_block():
    """A new paper's block starts as two markers on consecutive lines."""
    claims = pd.DataFrame([{"paper": "oscs", "claim_id": "b1", "kind": "claim", "paper_value": "p",
                            "verdict": "holds", "premise": "",
                            "measured_value": "m", "seeds": "0–2 (3)", "profile": "cpu"}])
    runs = pd.DataFrame([{"paper": "oscs", "profile": "cpu", "status": "success", "wall_seconds": 65.0}])
    out = render("a\n<!-- results:oscs -->\n<!-- /results:oscs -->\nb\n", claims, runs, "cpu")
    assert out.startswith("a\n<!-- results:oscs -->\n### oscs — 1 hold · 0 refuted · 0 inconclusive")
    assert "| b1 | p | m | 0–2 (3) | ✅ holds |" in out
    assert out.endswith("| ✅ holds |\n<!-- /results:oscs -->\nb\n")
