"""Benchmark reports: claims, tidy rows for the warehouse, markdown + PNG, DVC metrics.

A paper's report asset computes its numbers with pure code, then calls `publish_report`
once. That writes
    data/results/<slug>/{runs,metrics,claims,artifacts,thresholds}.parquet   (warehouse rows)
    data/reports/<slug>/REPORT.md, plots/<figure>.png, metrics.json        (people and DVC)
and returns Dagster metadata (markdown tables, an embedded plot) for the UI.
"""
from __future__ import annotations

import base64
import datetime as _dt
from dataclasses import asdict
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from assets.common.claims import Claim
from assets.common.plotting import save_figure
from resources.artifacts import REPO_ROOT, write_json
from resources.versioning import file_md5, provenance
from resources.warehouse import write_result_rows


def png_markdown(path: Path, alt: str) -> str:
    """Markdown embedding a PNG as base64 (Dagster has no image MetadataValue)."""
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f"![{alt}](data:image/png;base64,{data})"


def markdown_table(frame: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub markdown table (no tabulate dependency)."""
    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.{digits}f}"
        if isinstance(v, bool):
            return "✅" if v else "❌"
        return str(v)

    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    sep = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(fmt(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, sep, *rows])


def claims_markdown(claims: list[Claim]) -> str:
    frame = pd.DataFrame([{"claim": c.claim_id, "what": c.claim, "paper": c.paper_value,
                           "ours": c.measured_value, "holds": bool(c.holds)} for c in claims])
    return markdown_table(frame)


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def publish_report(*, slug: str, profile: str, run_id: str, report_dir: Path,
                   metrics_rows: pd.DataFrame, claims: list[Claim], body_markdown: str,
                   figures: dict[str, Any], dvc_metrics: dict[str, Any],
                   thresholds_rows: pd.DataFrame | None = None) -> dict[str, Any]:
    """Write every output of a benchmark report; return UI metadata.

    metrics_rows: tidy rows with columns asset, partition, seed, dataset, method, metric,
    value (paper and run_id are added here). figures: {name: matplotlib Figure}.
    """
    prov = provenance(slug, profile)
    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")

    # PNGs in plots/ so DVC can track one plots directory per paper
    figure_paths = {name: save_figure(fig, report_dir / "plots" / f"{name}.png") for name, fig in figures.items()}
    report_md = report_dir / "REPORT.md"
    lines = [f"# {slug} — benchmark report ({profile} profile)", "",
             f"git {prov['git_sha']} · params {prov['params_hash']} · run {run_id}", "",
             "## Claims", "", claims_markdown(claims), "", body_markdown, ""]
    lines += [f"![{name}](plots/{p.name})" for name, p in figure_paths.items()]
    report_md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    metrics_json = write_json(report_dir / "metrics.json", dvc_metrics)

    rows = metrics_rows.assign(paper=slug, run_id=run_id)
    write_result_rows(slug, "metrics", rows)
    claim_rows = pd.DataFrame([{**asdict(c), "paper": slug, "profile": profile, "run_id": run_id}
                               for c in claims])
    write_result_rows(slug, "claims", claim_rows)
    write_result_rows(slug, "runs", pd.DataFrame([{"paper": slug, "run_id": run_id, "profile": profile,
                                                   "git_sha": prov["git_sha"],
                                                   "params_hash": prov["params_hash"],
                                                   "created_at": created}]))
    if thresholds_rows is not None and len(thresholds_rows):
        write_result_rows(slug, "thresholds", thresholds_rows.assign(paper=slug, run_id=run_id))
    files = [report_md, metrics_json, *figure_paths.values()]
    write_result_rows(slug, "artifacts", pd.DataFrame([{"paper": slug, "path": _rel(p), "md5": file_md5(p),
                                                        "bytes": p.stat().st_size, "run_id": run_id}
                                                       for p in files]))
    metadata: dict[str, Any] = {
        "claims": dg.MetadataValue.md(claims_markdown(claims)),
        "claims_holding": f"{sum(c.holds for c in claims)}/{len(claims)}",
        "report": dg.MetadataValue.path(_rel(report_md)),
        **prov,
    }
    if figure_paths:
        name, path = next(iter(figure_paths.items()))
        metadata["plot"] = dg.MetadataValue.md(png_markdown(path, name))
    return metadata


def claims_payload(claims: list[Claim], profile: str, **extra: Any) -> dict[str, Any]:
    """The report asset's value: what claim checks and the scorecard read."""
    return {"profile": profile, "claims": [asdict(c) for c in claims], **extra}
