"""results/ is written from the warehouse: claims.csv with verdict, premise and CI; runs.csv keeping
the committed history; metrics.json for DVC; per-paper pages with at most three small figures;
and the claim diff names every verdict that changed."""
from __future__ import annotations

import json
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from PIL import Image  # noqa: E402

from assets.common.claims import Premise, judged, observation, verdict  # noqa: E402
from jobs.results import MAX_FIGURES, RUN_COLUMNS, claims_record, keep_committed, verdict_changes, write_record  # noqa: E402


def _claims(outcome_b: str = "refuted") -> pd.DataFrame:
    b = (-0.2, -0.3, -0.1) if outcome_b == "refuted" else (0.2, 0.1, 0.3)
    rows = [judged("a", "c", "p", "m", verdict(0.2, 0.1, 0.3, margin=0.1)).row(),
            judged("b", "c", "p", "m", verdict(*b, margin=0.1)).row(),
            judged("c", "c", "p", "m", verdict(0.2, 0.1, 0.3, premises=Premise("gate", "0.1 < 0.5", False))).row(),
            observation("o", "c", "p", "m").row()]
    frame = pd.DataFrame(rows).assign(paper="hir", profile="cpu", run_id="r1")
    smoke = frame.assign(profile="smoke", run_id="r0")
    return pd.concat([frame, smoke], ignore_index=True)


RUNS = pd.DataFrame([{"paper": "hir", "run_id": "r1", "profile": "cpu", "git_sha": "abc123", "params_hash": "p9",
                      "created_at": "2026-12-07", "wall_seconds": 300.0, "status": "success"}])


def test_claims_record_is_the_cpu_rows_with_their_run_provenance():
    record = claims_record(_claims(), RUNS, "cpu")
    assert list(record["claim_id"]) == ["a", "b", "c", "o"]
    assert set(record["git_sha"]) == {"abc123"} and set(record["params_hash"]) == {"p9"}
    assert list(record["verdict"]) == ["holds", "refuted", "inconclusive", "report-only"]
    assert record.loc[2, "premise"].startswith("gate") and record.loc[0, "ci"] == "[+0.1, +0.3]"


def test_verdict_changes_name_flips_additions_and_removals():
    old = claims_record(_claims("refuted"), RUNS, "cpu")
    new = claims_record(_claims("holds"), RUNS, "cpu")
    assert verdict_changes(old, new) == ["hir/b: refuted → holds"]
    assert verdict_changes(old, old) == []
    assert verdict_changes(None, new.iloc[:1]) == ["hir/a: absent → holds"]
    assert verdict_changes(old.iloc[:1], None) == ["hir/a: holds → absent"]


def test_write_record_writes_every_file_small(tmp_path):
    data, out = tmp_path / "data", tmp_path / "results"
    plots = data / "reports" / "hir" / "plots"
    plots.mkdir(parents=True)
    names = [f"fig{i}.png" for i in range(MAX_FIGURES + 1)]
    for name in names:
        fig, ax = plt.subplots(figsize=(16, 8), dpi=100)
        ax.plot([0, 1], [0, 1])
        fig.savefig(plots / name)
        plt.close(fig)
    (data / "reports" / "hir" / "REPORT.md").write_text(
        "# hir — benchmark report\n\n" + "\n".join(f"![{n}](plots/{n})" for n in names) + "\n", encoding="utf-8")
    committed = pd.DataFrame([{"paper": "hir", "run_id": "old", "profile": "cpu", "wall_seconds": 400.0,
                               "started_at": "2026-12-01T00:00:00+00:00"}]).reindex(columns=RUN_COLUMNS)
    out.mkdir()
    committed.to_csv(out / "runs.csv", index=False)
    jobs = pd.DataFrame([{"paper": "hir", "run_id": "r1", "profile": "cpu", "status": "success", "wall_seconds": 300.0,
                          "cpu_seconds": 550.0, "cores": 2, "cpu_model": "probe", "started_at": "2026-12-07T00:00:00"}])
    write_record(out, _claims(), jobs.reindex(columns=RUN_COLUMNS), RUNS, data, "cpu")

    runs = pd.read_csv(out / "runs.csv")
    assert list(runs["run_id"]) == ["old", "r1"] and runs.loc[1, "git_sha"] == "abc123"
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["hir"]) == {"a", "b", "c"} and metrics["hir"]["b"]["verdict"] == "refuted"
    assert metrics["hir"]["a"]["ci_low"] == 0.1 and metrics["hir"]["c"]["verdict"] == "inconclusive"
    assert "1 hold · 1 refuted · 1 inconclusive" in (out / "SCORECARD.md").read_text()
    page = (out / "hir.md").read_text()
    assert page.count("](hir/fig") == MAX_FIGURES and f"figure `fig{MAX_FIGURES}.png`" in page
    kept = sorted(p.name for p in (out / "hir").glob("*.png"))
    assert kept == names[:MAX_FIGURES]
    with Image.open(out / "hir" / "fig0.png") as img:
        assert img.width <= 900
    assert (out / "hir" / "fig0.png").stat().st_size < (plots / "fig0.png").stat().st_size
    assert (out / "scorecard.png").exists()
    assert not math.isnan(pd.read_csv(out / "claims.csv")["ci_low"].iloc[0])


def test_the_record_scorecard_counts_the_rows_of_claims_csv(tmp_path):
    """A wall-clock claim (volatile) is neither in claims.csv nor in the record's count, and is named."""
    timed = judged("speed", "c", "p", "m", verdict(2.0, 1.5, 2.5, margin=1.0), volatile=True).row()
    claims = pd.concat([_claims(), pd.DataFrame([timed]).assign(paper="hir", profile="cpu", run_id="r1")],
                       ignore_index=True)
    out = tmp_path / "results"
    write_record(out, claims, pd.DataFrame(columns=RUN_COLUMNS), RUNS, tmp_path / "data", "cpu")
    record = pd.read_csv(out / "claims.csv")
    counted = record[record["verdict"].isin(["holds", "refuted", "inconclusive"])]
    text = (out / "SCORECARD.md").read_text()
    assert "speed" not in set(record["claim_id"]) and len(counted) == 3
    assert "1 hold · 1 refuted · 1 inconclusive" in text and "hir/speed" in text


def test_a_subset_run_keeps_the_committed_rows_of_the_papers_it_did_not_run(tmp_path):
    """make reproduce PAPERS=hir: the warehouse has hir only; vcot's committed rows (and its wall-clock
    name in the note) stay in claims.csv, metrics.json and the scorecard's count; hir's are replaced."""
    out = tmp_path / "results"
    other = claims_record(_claims("holds"), RUNS, "cpu").assign(paper="vcot", git_sha="old")
    old_hir = claims_record(_claims("holds"), RUNS, "cpu")
    out.mkdir()
    pd.concat([old_hir, other], ignore_index=True).to_csv(out / "claims.csv", index=False)
    (out / "SCORECARD.md").write_text("Not counted here: 2 wall-clock claim(s) (hir/speed, vcot/judge_speed), judged")
    write_record(out, _claims("refuted"), pd.DataFrame(columns=RUN_COLUMNS), RUNS, tmp_path / "data", "cpu")

    record = pd.read_csv(out / "claims.csv")
    assert list(dict.fromkeys(record["paper"])) == ["vcot", "hir"]   # the registry's order
    assert set(record.loc[record["paper"] == "vcot", "git_sha"]) == {"old"}
    assert record.loc[(record["paper"] == "hir") & (record["claim_id"] == "b"), "verdict"].item() == "refuted"
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["vcot"]["b"]["verdict"] == "holds" and metrics["hir"]["b"]["verdict"] == "refuted"
    text = (out / "SCORECARD.md").read_text()
    assert "3 hold · 1 refuted · 2 inconclusive** of 6 claims across 2 papers" in text
    assert "1 wall-clock claim(s) (vcot/judge_speed)" in text


def test_keep_committed_adds_nothing_when_every_paper_ran():
    new = claims_record(_claims("refuted"), RUNS, "cpu")
    merged, kept = keep_committed(new, claims_record(_claims("holds"), RUNS, "cpu"))
    assert kept == [] and verdict_changes(new, merged) == []
    assert keep_committed(new, None) == (new, [])
