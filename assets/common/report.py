"""Benchmark reports as data, and the files they become — no Dagster import.

A paper's `report.py` builds one `Report` from its results with pure code; the report asset
hands it to `publish()` (assets/common/publish.py), which calls `write_report` here and adds
the UI metadata. `write_report` writes

    data/reports/<slug>/REPORT.md, plots/<figure>.png, metrics.json     (DVC-tracked)
    data/results/<slug>/{metrics,claims,thresholds,artifacts}.parquet  (DVC-tracked)
    data/runs/<slug>/run.json, TIMINGS.md, timing plots, volatile rows  (run records)

Everything DVC tracks is byte-identical on a rerun at the same seed: no run id, git sha or
time in it, and wall-clock measurements (timings, volatile claims) go to data/runs/.
"""
from __future__ import annotations

import base64
import datetime as _dt
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from assets.common.claims import CLAIM, HOLDS, INCONCLUSIVE, OUTCOMES, REFUTED, ROW_COLUMNS, SYMBOL, Claim
from assets.common.plotting import save_figure
from resources.artifacts import data_ref, write_json
from resources.versioning import file_md5
from resources.warehouse import write_result_rows, write_run_record

METRIC_COLUMNS = ["asset", "partition", "seed", "dataset", "method", "metric", "value"]


@dataclass
class Report:
    """Everything a benchmark report publishes.

    claims: every Claim (kind claim or observation; volatile ones are wall-clock measured).
    body: markdown after the claims table. figures: {name: matplotlib Figure} → plots/.
    metrics: tidy rows (METRIC_COLUMNS) for the warehouse. dvc_metrics: metrics.json content
    (claims_holds / claims_refuted / claims_inconclusive / claims_total are added). thresholds:
    rows (name, seed, dataset, method, value). timings: wall-clock metric rows (METRIC_COLUMNS), with timing_body and
    timing_figures, a run record in data/runs/<slug>/TIMINGS.md. payload: extra keys of the
    report asset's value.
    """

    claims: list[Claim]
    body: str = ""
    figures: dict[str, Any] = field(default_factory=dict)
    metrics: pd.DataFrame | None = None
    dvc_metrics: dict[str, Any] = field(default_factory=dict)
    thresholds: pd.DataFrame | None = None
    timings: pd.DataFrame | None = None
    timing_body: str = ""
    timing_figures: dict[str, Any] = field(default_factory=dict)
    payload: dict[str, Any] = field(default_factory=dict)

    def counted(self) -> list[Claim]:
        """The claims the scorecard counts (not observations)."""
        return [c for c in self.claims if c.kind == CLAIM]


def png_markdown(path: Path, alt: str) -> str:
    """Markdown embedding a PNG as base64 (Dagster has no image MetadataValue)."""
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f"![{alt}](data:image/png;base64,{data})"


def markdown_table(frame: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub markdown table (no tabulate dependency)."""
    def fmt(v: Any) -> str:
        if isinstance(v, bool):
            return "✅" if v else "❌"
        if isinstance(v, float):
            return f"{v:.{digits}f}"
        if v is None:
            return "—"
        return str(v)

    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    sep = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(fmt(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, sep, *rows])


def claims_markdown(claims: list[Claim]) -> str:
    """The claims table: verdict, the paper's value next to ours, the CI and the premise."""
    frame = pd.DataFrame([{"claim": c.claim_id, "what": c.claim, "paper": c.paper_value,
                           "ours": c.measured_value, "seeds": c.seeds or "—",
                           "verdict": f"{SYMBOL[c.verdict]} {c.verdict}" if c.kind == CLAIM else c.verdict,
                           "premise": c.premise or "—"} for c in claims])
    return markdown_table(frame)


def verdict_counts(claims: list[Claim]) -> dict[str, int]:
    """{holds, refuted, inconclusive: n} over the counted claims."""
    counted = [c.verdict for c in claims if c.kind == CLAIM]
    return {v: counted.count(v) for v in OUTCOMES}


def holding(claims: list[Claim]) -> str:
    """'2 holds · 1 refuted · 3 inconclusive (of 6)'."""
    n = verdict_counts(claims)
    return f"{n[HOLDS]} holds · {n[REFUTED]} refuted · {n[INCONCLUSIVE]} inconclusive (of {sum(n.values())})"


def _claim_rows(claims: list[Claim], slug: str, profile: str) -> pd.DataFrame:
    return pd.DataFrame([{**c.row(), "paper": slug, "profile": profile} for c in claims],
                        columns=[*ROW_COLUMNS, "paper", "profile"])


def report_markdown(slug: str, profile: str, params_hash: str, report: Report, notes: str,
                    figure_files: dict[str, Path]) -> str:
    """REPORT.md: claims, observations, body, how we differ from the paper, figures."""
    stable = [c for c in report.claims if not c.volatile]
    claims = [c for c in stable if c.kind == CLAIM]
    observations = [c for c in stable if c.kind != CLAIM]
    timed = [c for c in report.claims if c.volatile]
    lines = [f"# {slug} — benchmark report ({profile} profile)", "", f"params {params_hash}", "",
             "## Claims", "", claims_markdown(claims) if claims else "No claims.", ""]
    if timed:
        lines += [f"Measured from wall-clock time, so recorded per run in `data/runs/{slug}/TIMINGS.md`: "
                  + ", ".join(c.claim_id for c in timed) + ".", ""]
    if observations:
        lines += ["## Report-only observations and sanity rows", "",
                  "Shown for context; they never count in the scorecard. A sanity row is true by construction "
                  "(an identity, or a property a blocking gate enforces).", "",
                  claims_markdown(observations), ""]
    if report.body:
        lines += [report.body.strip(), ""]
    if notes.strip():
        lines += ["## How this reproduction differs from the paper", "", notes.strip(), ""]
    lines += [f"![{name}](plots/{path.name})" for name, path in figure_files.items()]
    return "\n".join(lines).rstrip() + "\n"


def write_report(*, slug: str, profile: str, params_hash: str, run: dict[str, Any], report: Report,
                 report_dir: Path, runs_dir: Path, notes: str = "") -> dict[str, Path]:
    """Write every file of a report (see the module docstring); returns the main paths.

    run: {run_id, git_sha} of this run (only data/runs/ records them).
    """
    figure_files = {name: save_figure(fig, report_dir / "plots" / f"{name}.png")
                    for name, fig in report.figures.items()}
    report_md = report_dir / "REPORT.md"
    report_md.write_text(report_markdown(slug, profile, params_hash, report, notes, figure_files), encoding="utf-8")
    stable = [c for c in report.claims if not c.volatile]
    counted = [c for c in stable if c.kind == CLAIM]
    metrics_json = write_json(report_dir / "metrics.json", {
        **report.dvc_metrics, **{f"claims_{v}": n for v, n in verdict_counts(counted).items()},
        "claims_total": len(counted)})

    if report.metrics is not None and len(report.metrics):
        write_result_rows(slug, "metrics", report.metrics[METRIC_COLUMNS].assign(paper=slug))
    write_result_rows(slug, "claims", _claim_rows(stable, slug, profile))
    if report.thresholds is not None and len(report.thresholds):
        write_result_rows(slug, "thresholds", report.thresholds.assign(paper=slug))
    files = [report_md, metrics_json, *figure_files.values()]
    # paths relative to the data directory, so the rows do not depend on where it lives
    write_result_rows(slug, "artifacts", pd.DataFrame([{"paper": slug, "path": data_ref(p), "md5": file_md5(p),
                                                        "bytes": p.stat().st_size} for p in files]))

    # run records: what a rerun cannot repeat
    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    write_run_record(slug, {"paper": slug, "profile": profile, "params_hash": params_hash,
                            "created_at": created, **run})
    timed = [c for c in report.claims if c.volatile]
    run_id = run["run_id"]
    for stale in runs_dir.glob("*_timings.parquet"):   # the previous run's wall-clock rows
        stale.unlink()
    if timed:
        write_result_rows(slug, "claims", _claim_rows(timed, slug, profile).assign(run_id=run_id),
                          name="claims_timings", volatile=True)
    if report.timings is not None and len(report.timings):
        write_result_rows(slug, "metrics", report.timings[METRIC_COLUMNS].assign(paper=slug, run_id=run_id),
                          name="metrics_timings", volatile=True)
    timing_files = {name: save_figure(fig, runs_dir / "plots" / f"{name}.png")
                    for name, fig in report.timing_figures.items()}
    timings_md = runs_dir / "TIMINGS.md"
    if timed or report.timing_body or timing_files:
        lines = [f"# {slug} — wall-clock measurements ({profile} profile)", "",
                 f"run {run_id} · git {run.get('git_sha', '?')} · {created}", ""]
        if timed:
            lines += ["## Claims measured from wall-clock time", "", claims_markdown(timed), ""]
        lines += [report.timing_body.strip(), ""] if report.timing_body else []
        lines += [f"![{name}](plots/{p.name})" for name, p in timing_files.items()]
        timings_md.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    elif timings_md.exists():
        timings_md.unlink()
    return {"report": report_md, "metrics": metrics_json, "timings": timings_md,
            **{f"plot:{n}": p for n, p in figure_files.items()}}


def report_payload(report: Report, profile: str) -> dict[str, Any]:
    """The report asset's value: what claim checks and the scorecard read. Non-finite numbers of
    the claim rows (no estimate; a one-seed interval is ±∞) are written as null (JSON has no NaN)."""
    def finite(row: dict) -> dict:
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}

    return {"profile": profile, "claims": [finite(c.row()) for c in report.claims], **report.payload}

