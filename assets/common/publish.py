"""The report epilogue, once for every paper: files, warehouse rows, logs and UI metadata.

    @paper.asset("benchmark_report", ...)
    def benchmark_report(context, results, compute, artifacts):
        return publish(context, PAPER_SLUG, compute, artifacts, report.build(results, params))
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg

from assets.common.claims import CLAIM
from assets.common.report import Report, claims_markdown, holding, png_markdown, report_payload, write_report
from resources.artifacts import REPO_ROOT, ArtifactsResource
from resources.compute import ComputeResource
from resources.versioning import git_sha


def notes_text(slug: str) -> str:
    """assets/<slug>/NOTES.md without its title line ('' when absent)."""
    path = REPO_ROOT / "assets" / slug / "NOTES.md"
    if not path.exists():
        return ""
    lines = path.read_text(encoding="utf-8").splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join(lines).strip()


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def publish(context: dg.AssetExecutionContext, slug: str, compute: ComputeResource,
            artifacts: ArtifactsResource, report: Report) -> dict[str, Any]:
    """Write the report's files and rows, log every claim, attach UI metadata; returns the
    report asset's value (the claims payload)."""
    for c in report.claims:
        premise = f" (premise: {c.premise})" if c.premise else ""
        context.log.info(f"claim {c.claim_id}: {c.verdict.upper() if c.kind == CLAIM else c.verdict} — "
                         f"{c.measured_value}{premise}")
    prov = compute.provenance(slug)
    paths = write_report(slug=slug, profile=compute.profile, params_hash=prov["params_hash"],
                         run={"run_id": context.run_id, "git_sha": git_sha()}, report=report,
                         report_dir=artifacts.report_dir(slug), runs_dir=artifacts.runs_dir(slug),
                         notes=notes_text(slug))
    metadata: dict[str, Any] = {
        "claims": dg.MetadataValue.md(claims_markdown(report.claims)),
        "verdicts": holding(report.claims),
        "report": dg.MetadataValue.path(_rel(paths["report"])),
        "git_sha": git_sha(), **prov,
    }
    plots = [p for k, p in paths.items() if k.startswith("plot:")]
    if plots:
        metadata["plot"] = dg.MetadataValue.md(png_markdown(plots[0], plots[0].stem))
    context.add_output_metadata(metadata)
    return report_payload(report, compute.profile)

