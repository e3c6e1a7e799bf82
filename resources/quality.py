"""Great Expectations 1.x wrapper (dagster-ge pins GX<1, so we wrap it ourselves, once).

    result = validate_frame(df, [expect("ExpectColumnValuesToNotBeNull", column="score")],
                            name="oscs_scores")
    return gx_check_result(result)            # inside an @asset_check

No Dagster import at module level. Each validation uses a fresh ephemeral context, a pandas
datasource and a whole-dataframe batch; nothing is written to disk. GX is imported lazily (it is slow to import).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")


@dataclass(frozen=True)
class Expectation:
    """A GX expectation by class name, e.g. Expectation("ExpectColumnToExist", {"column": "x"})."""

    kind: str
    kwargs: dict[str, Any] = field(default_factory=dict)


def expect(kind: str, **kwargs: Any) -> Expectation:
    return Expectation(kind, kwargs)


@dataclass
class ValidationResult:
    success: bool
    failed: list[dict[str, Any]]
    evaluated: int
    suite: str

    def summary(self) -> str:
        if self.success:
            return f"{self.suite}: all {self.evaluated} expectations met"
        parts = []
        for f in self.failed:
            where = f.get("column") or ""
            count = f.get("unexpected_count")
            if count:
                detail = f"{count} unexpected (e.g. {f.get('partial_unexpected_list', [])[:3]})"
            elif f.get("missing"):
                detail = f"missing {f['missing']}"
            elif f.get("observed_value") is not None:
                detail = f"observed {f['observed_value']}"
            else:
                detail = f.get("exception") or "failed"
            parts.append(f"{f['type']}({where}): {detail}")
        return f"{self.suite}: {len(self.failed)}/{self.evaluated} failed — " + "; ".join(parts)


def validate_frame(frame: pd.DataFrame, expectations: list[Expectation], name: str) -> ValidationResult:
    """Validate a DataFrame against expectations in a fresh ephemeral GX context."""
    import great_expectations as gx

    context = gx.get_context(mode="ephemeral")
    try:
        context.variables.progress_bars = {"globally": False}
    except Exception:  # older GX: progress bars are cosmetic only
        pass
    batch = (context.data_sources.add_pandas("pandas")
             .add_dataframe_asset(name)
             .add_batch_definition_whole_dataframe("whole")
             .get_batch(batch_parameters={"dataframe": frame}))
    suite = gx.ExpectationSuite(name=name)
    for e in expectations:
        cls = getattr(gx.expectations, e.kind, None)
        if cls is None:
            raise ValueError(f"unknown GX expectation {e.kind!r}")
        suite.add_expectation(cls(**e.kwargs))
    result = batch.validate(suite).to_json_dict()
    failed = []
    for r in result["results"]:
        if r["success"]:
            continue
        cfg = r["expectation_config"]
        res = r.get("result") or {}
        failed.append({"type": cfg["type"],
                       **{k: v for k, v in cfg["kwargs"].items() if k != "batch_id"},
                       "unexpected_count": res.get("unexpected_count"),
                       "partial_unexpected_list": (res.get("partial_unexpected_list") or [])[:10],
                       "observed_value": res.get("observed_value"),
                       "missing": (res.get("partial_missing_list") or [])[:10],
                       "exception": (r.get("exception_info") or {}).get("exception_message")})
    return ValidationResult(bool(result["success"]), failed, len(result["results"]), name)


def gx_check_result(result: ValidationResult, extra: dict[str, Any] | None = None, severity=None):
    """An AssetCheckResult carrying the failed expectations as JSON metadata (Dagster is
    imported here only, so pure check modules can use validate_frame)."""
    import dagster as dg

    severity = severity or dg.AssetCheckSeverity.ERROR
    metadata: dict[str, Any] = {"summary": result.summary(), "evaluated": result.evaluated,
                                "failed_expectations": dg.MetadataValue.json(result.failed)}
    metadata.update(extra or {})
    return dg.AssetCheckResult(passed=result.success, severity=severity, metadata=metadata,
                               description=result.summary())
