"""Check builders: blocking data-quality gates from pure predicates, and per-claim checks.

    gate(slug, asset, "finite", "Scores are finite.", checks.scores_finite)

A predicate is a pure function `f(value, **inputs) -> list[str] | Finding` (assets/<slug>/
checks.py): the problems it found, empty when the value is fine. `gate` loads the asset's
value (and any `additional` assets), passes the paper's typed parameters as `params=` when
asked, and turns the problems into an AssetCheckResult. Every result is also written as a row
of the warehouse's `checks` table (a run record under data/runs/<slug>/), so the warehouse
shows which gates passed for the run that produced the numbers.
"""
from __future__ import annotations

import inspect
import re
from typing import Any, Callable

import dagster as dg
import pandas as pd

from assets.common.claims import HOLDS, REFUTED
from assets.common.findings import as_finding
from resources.warehouse import write_result_rows

SEVERITIES = {"error": dg.AssetCheckSeverity.ERROR, "warn": dg.AssetCheckSeverity.WARN}


def _record(context: dg.AssetCheckExecutionContext, slug: str, asset: dg.AssetKey, name: str,
            result: dg.AssetCheckResult, blocking: bool) -> None:
    detail = result.description or ""
    row = pd.DataFrame([{"paper": slug, "asset": asset.to_user_string(), "check_name": name,
                         "passed": bool(result.passed), "blocking": blocking,
                         "detail": detail[:2000], "run_id": context.run.run_id}])
    file_name = "checks_" + re.sub(r"[^A-Za-z0-9_]+", "_", f"{asset.path[-1]}_{name}")
    write_result_rows(slug, "checks", row, name=file_name, volatile=True)


def _plain(value: Any) -> Any:
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return value.item()
    if isinstance(value, (list, dict, tuple)):
        return dg.MetadataValue.json(_jsonable(value))
    return value


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return value.item()
    return value


def check_result(passed: bool, message: str, severity: str = "error", **metadata: Any) -> dg.AssetCheckResult:
    """AssetCheckResult with plain-Python metadata (numpy scalars are cast)."""
    clean = {k: _plain(v) for k, v in metadata.items()}
    return dg.AssetCheckResult(passed=bool(passed), description=message, severity=SEVERITIES[severity],
                               metadata={"message": message, **clean})


def gate(slug: str, asset: dg.AssetKey | dg.AssetsDefinition, name: str, description: str,
         predicate: Callable[..., Any], *, blocking: bool = True,
         additional: dict[str, dg.AssetKey | dg.AssetsDefinition] | None = None,
         resources: tuple[str, ...] = (), params: Callable[[Any], Any] | None = None,
         severity: str = "error") -> dg.AssetChecksDefinition:
    """A check on `asset` that loads its value and calls predicate(value, **others).

    `additional` loads more assets (e.g. the calibration set a stream must not overlap);
    `resources` passes resources by key; `params`, a function of the compute resource
    (Paper.params), passes the paper's typed parameters as `params=`. All arrive as keyword
    arguments. Blocking by default: a failure stops every downstream asset of the same run.
    severity "warn" makes a warning, never blocking.
    """
    key = asset.key if isinstance(asset, dg.AssetsDefinition) else asset
    blocking = blocking and severity == "error"       # a warning never stops anything
    additional = {n: (k.key if isinstance(k, dg.AssetsDefinition) else k) for n, k in (additional or {}).items()}
    needed = set(resources) | ({"compute"} if params else set())

    def _check(context: dg.AssetCheckExecutionContext, value, **others) -> dg.AssetCheckResult:
        kwargs = {**others, **{r: getattr(context.resources, r) for r in resources}}
        if params:
            kwargs["params"] = params(context.resources.compute)
        outcome = predicate(value, **kwargs)
        if isinstance(outcome, dg.AssetCheckResult):
            result = outcome
        else:
            found = as_finding(outcome)
            result = check_result(found.passed, found.message(description), severity=severity,
                                  **{**dict(found.metadata), "problems": len(found.problems)})
        if not result.passed:
            log = context.log.error if severity == "error" else context.log.warning
            log(f"{key.to_user_string()}:{name} failed — {result.description}")
        _record(context, slug, key, name, result, blocking)
        return result

    # Dagster matches inputs to parameter names: expose one keyword parameter per extra asset.
    signature = [inspect.Parameter("context", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                   annotation=dg.AssetCheckExecutionContext),
                 inspect.Parameter("value", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    signature += [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in additional]
    _check.__signature__ = inspect.Signature(signature, return_annotation=dg.AssetCheckResult)
    return dg.asset_check(asset=key, name=name, blocking=blocking, description=description,
                          additional_ins={n: dg.AssetIn(key=k) for n, k in additional.items()},
                          required_resource_keys=needed)(_check)


def claim_checks(slug: str, report: dg.AssetKey | dg.AssetsDefinition,
                 claim_ids: list[str]) -> list[dg.AssetChecksDefinition]:
    """One non-blocking check per paper claim, read from the report value.

    The report asset's value is a dict with "claims": [Claim.row(), ...]. The check passes when the
    claim holds, fails with severity ERROR when it is refuted and WARN when it is inconclusive (the
    data cannot tell, or its premise failed); the premise and the CI are in its metadata. A claim
    missing from the report fails its check. Observations and sanity rows get no check.
    """
    key = report.key if isinstance(report, dg.AssetsDefinition) else report

    def make(claim_id: str) -> dg.AssetChecksDefinition:
        def evaluate(value: dict) -> dg.AssetCheckResult:
            claims = {c["claim_id"]: c for c in value.get("claims", [])}
            if claim_id not in claims:
                return check_result(False, f"claim {claim_id} was not evaluated by the report")
            c = claims[claim_id]
            outcome = c["verdict"]
            msg = (f"{outcome} — paper: {c['paper_value']} | ours ({value.get('profile', '?')} profile): "
                   f"{c['measured_value']}" + (f" — {c['detail']}" if c.get("detail") else ""))
            severity = dg.AssetCheckSeverity.ERROR if outcome == REFUTED else dg.AssetCheckSeverity.WARN
            return dg.AssetCheckResult(passed=outcome == HOLDS, severity=severity, description=msg,
                                       metadata={"verdict": outcome, "claim": c["claim"],
                                                 "paper_value": c["paper_value"],
                                                 "measured_value": c["measured_value"],
                                                 "ci": c.get("ci", ""), "premise": c.get("premise") or "none",
                                                 "seeds": c.get("seeds", ""), "detail": c.get("detail", "")})

        return gate(slug, key, f"claim_{claim_id}", f"Paper claim {claim_id}", evaluate, blocking=False)

    return [make(cid) for cid in claim_ids]
