"""The scorecard counts holds, refuted and inconclusive separately, per paper and in total."""
from __future__ import annotations

import pandas as pd

from jobs.platform import scorecard_figure, scorecard_markdown, scorecard_summary


def _claims() -> pd.DataFrame:
    rows = [("a", "x1", "claim", "holds"), ("a", "x2", "claim", "refuted"), ("a", "x3", "claim", "inconclusive"),
            ("a", "o1", "observation", "report-only"), ("a", "s1", "sanity", "sanity"),
            ("b", "y1", "claim", "inconclusive"), ("b", "y2", "claim", "inconclusive")]
    return pd.DataFrame([{"paper": p, "claim_id": c, "kind": k, "verdict": v, "claim": "c", "paper_value": "p",
                          "measured_value": "m", "ci": "[+0.1, +0.2]", "premise": "", "seeds": "0–2 (3)",
                          "profile": "cpu"} for p, c, k, v in rows])


def test_summary_counts_each_outcome_and_the_rows_not_counted():
    summary = scorecard_summary(_claims()).set_index("paper")
    assert summary.loc["a", ["holds", "refuted", "inconclusive", "report-only", "sanity"]].tolist() == [1, 1, 1, 1, 1]
    assert summary.loc["b", ["holds", "refuted", "inconclusive"]].tolist() == [0, 0, 2]


def test_markdown_gives_three_totals_and_every_row():
    text = scorecard_markdown(_claims())
    assert "**1 hold · 1 refuted · 3 inconclusive** of 5 claims across 2 papers" in text
    assert "1 report-only observations and 1 sanity rows not counted" in text
    assert "❔ inconclusive" in text and "❌ refuted" in text and "✅ holds" in text
    scorecard_figure(_claims())
