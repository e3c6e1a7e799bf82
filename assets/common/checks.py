"""Check builders: blocking data-quality gates and per-claim checks.

Every check result is also written as a row of the warehouse's `checks` table
(data/results/<slug>/checks_<asset>_<check>.parquet), so the DuckDB warehouse shows which
gates passed for the run that produced the numbers.
"""
from __future__ import annotations

import inspect
import re
from typing import Any, Callable

import dagster as dg
import pandas as pd

from resources.warehouse import write_result_rows

def _record(context: dg.AssetCheckExecutionContext, slug: str, asset: dg.AssetKey, name: str,
            result: dg.AssetCheckResult, blocking: bool) -> None:
    detail = result.description or ""
    row = pd.DataFrame([{"paper": slug, "asset": asset.to_user_string(), "check_name": name,
                         "passed": bool(result.passed), "blocking": blocking,
                         "detail": detail[:2000], "run_id": context.run.run_id}])
    file_name = "checks_" + re.sub(r"[^A-Za-z0-9_]+", "_", f"{asset.path[-1]}_{name}")
    write_result_rows(slug, "checks", row, name=file_name)


def gate(slug: str, asset: dg.AssetKey | dg.AssetsDefinition, name: str, description: str,
         fn: Callable[..., dg.AssetCheckResult], blocking: bool = True,
         additional: dict[str, dg.AssetKey] | None = None,
         resources: tuple[str, ...] = ()) -> dg.AssetChecksDefinition:
    """A check on `asset` that loads its value and calls fn(value, **others).

    `additional` loads more assets (e.g. the calibration set a stream must not overlap);
    `resources` passes resources by key (e.g. "compute" for profile parameters). Both
    arrive as keyword arguments named by their keys. Blocking by default: a failure stops
    every downstream asset of the same run.
    """
    key = asset.key if isinstance(asset, dg.AssetsDefinition) else asset
    additional = additional or {}

    def _check(context: dg.AssetCheckExecutionContext, value, **others) -> dg.AssetCheckResult:
        kwargs = {**others, **{r: getattr(context.resources, r) for r in resources}}
        result = fn(value, **kwargs)
        if not result.passed:
            context.log.error(f"{key.to_user_string()}:{name} failed — {result.description}")
        _record(context, slug, key, name, result, blocking)
        return result

    # Dagster matches inputs to parameter names: expose one keyword parameter per extra asset.
    params = [inspect.Parameter("context", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                annotation=dg.AssetCheckExecutionContext),
              inspect.Parameter("value", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in additional]
    _check.__signature__ = inspect.Signature(params, return_annotation=dg.AssetCheckResult)
    _check = dg.asset_check(asset=key, name=name, blocking=blocking, description=description,
                            additional_ins={n: dg.AssetIn(key=k) for n, k in additional.items()},
                            required_resource_keys=set(resources))(_check)
    return _check


def check_result(passed: bool, message: str, **metadata: Any) -> dg.AssetCheckResult:
    """AssetCheckResult with plain-Python metadata (numpy scalars are cast)."""
    clean = {k: _plain(v) for k, v in metadata.items()}
    return dg.AssetCheckResult(passed=bool(passed), description=message,
                               metadata={"message": message, **clean})


def _plain(value: Any) -> Any:
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return value.item()
    if isinstance(value, (list, dict)):
        return dg.MetadataValue.json(value)
    return value


def claim_checks(slug: str, report: dg.AssetKey | dg.AssetsDefinition,
                 claim_ids: list[str]) -> list[dg.AssetChecksDefinition]:
    """One ERROR-severity, non-blocking check per paper claim, read from the report value.

    The report asset's value is a dict with "claims": [{claim_id, claim, paper_value,
    measured_value, holds, detail}, ...]. A claim missing from the report fails its check.
    """
    key = report.key if isinstance(report, dg.AssetsDefinition) else report

    def make(claim_id: str) -> dg.AssetChecksDefinition:
        def evaluate(value: dict) -> dg.AssetCheckResult:
            claims = {c["claim_id"]: c for c in value.get("claims", [])}
            if claim_id not in claims:
                return check_result(False, f"claim {claim_id} was not evaluated by the report")
            c = claims[claim_id]
            msg = (f"paper: {c['paper_value']} | ours ({value.get('profile', '?')} profile): "
                   f"{c['measured_value']}" + (f" — {c['detail']}" if c.get("detail") else ""))
            return dg.AssetCheckResult(passed=bool(c["holds"]), severity=dg.AssetCheckSeverity.ERROR,
                                       description=msg,
                                       metadata={"claim": c["claim"], "paper_value": c["paper_value"],
                                                 "measured_value": c["measured_value"],
                                                 "holds": bool(c["holds"]), "detail": c.get("detail", "")})

        return gate(slug, key, f"claim_{claim_id}", f"Paper claim {claim_id}", evaluate, blocking=False)

    return [make(cid) for cid in claim_ids]
