"""The paper contract: every `assets/<slug>/definitions.py` builds one `PAPER` with this.

    paper = Paper("oscs", params=OSCSParams)

    @paper.asset("dataset", kinds={"pandas"}, description="...")
    def dataset(context, compute: ComputeResource) -> pd.DataFrame:
        p = paper.params(compute)                       # typed, frozen, validated
        ...

    PAPER = paper.define(
        assets=[dataset, ..., benchmark_report],
        checks=[paper.gate(dataset, "schema", "...", checks.dataset_schema), ...],
        claims=["far_control", ...], observations=["trend"])

`define` validates at import time: every key is prefixed with the slug and grouped under it,
there is exactly one report asset and it is named `benchmark_report`, claim ids are unique
snake_case, every check targets this paper's assets. It adds one claim check per claim.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import dagster as dg

from assets.common.checks import claim_checks, gate
from assets.common.claims import CLAIM_ID
from assets.common.params import parse
from assets.common.publish import publish
from assets.common.report import Report
from assets.common.tags import gpu_asset_kwargs
from resources.artifacts import RESERVED_DIRS, VOLATILE, ArtifactsResource
from resources.compute import ComputeResource
from resources.profiles import PARAMS_FILE, file_stamp

REPORT_NAME = "benchmark_report"
SLUG = re.compile(r"^[a-z][a-z0-9_]*$")


class PaperContractError(ValueError):
    """A paper's definitions break the contract (raised when the module is imported)."""


@dataclass(frozen=True)
class PaperDefinition:
    """What a paper module exports as PAPER: its Dagster objects and its claims."""

    slug: str
    assets: tuple[dg.AssetsDefinition, ...]
    asset_checks: tuple[dg.AssetChecksDefinition, ...]
    report_key: dg.AssetKey
    claim_ids: tuple[str, ...]
    observation_ids: tuple[str, ...]
    params_type: type | None

    @property
    def keys(self) -> set[dg.AssetKey]:
        return {k for a in self.assets for k in a.keys}

    def asset(self, name: str) -> dg.AssetsDefinition:
        """The asset definition whose key is <slug>/<name>."""
        key = dg.AssetKey([self.slug, name])
        for a in self.assets:
            if key in a.keys:
                return a
        raise KeyError(f"{self.slug} has no asset {name!r}")

    def checks_of(self, name: str) -> list[dg.AssetChecksDefinition]:
        """The check definitions that target <slug>/<name>."""
        key = dg.AssetKey([self.slug, name])
        return [c for c in self.asset_checks if any(k.asset_key == key for k in c.check_keys)]


@lru_cache(maxsize=64)
def _typed_params(params_type: type, slug: str, profile: str, overrides: str, stamp: tuple) -> Any:
    from resources.profiles import deep_merge, load_params

    raw = load_params(slug, profile)
    override = json.loads(overrides)
    return parse(params_type, deep_merge(raw, override) if override else raw, f"{slug}.{profile}")


class Paper:
    """Builder of one paper's asset group (see the module docstring)."""

    def __init__(self, slug: str, params: type | None = None):
        if not SLUG.match(slug) or slug in RESERVED_DIRS:
            raise PaperContractError(f"paper slug {slug!r} must be snake_case and not one of {RESERVED_DIRS}")
        self.slug = slug
        self.params_type = params
        self._claims: tuple[str, ...] = ()
        self._observations: tuple[str, ...] = ()

    def key(self, name: str) -> dg.AssetKey:
        return dg.AssetKey([self.slug, name])

    def params(self, compute: ComputeResource) -> Any:
        """The typed parameters at the resource's profile (cached until params.yaml changes)."""
        if self.params_type is None:
            raise PaperContractError(f"{self.slug}: Paper(..., params=<dataclass>) was not given")
        overrides = json.dumps(compute.params_overrides.get(self.slug) or {}, sort_keys=True)
        return _typed_params(self.params_type, self.slug, compute.profile, overrides, file_stamp(PARAMS_FILE))

    def code_version(self) -> str:
        """resources.versioning.stage_code_version of this paper (computed once per process)."""
        if getattr(self, "_code_version", None) is None:
            from resources.versioning import stage_code_version

            self._code_version = stage_code_version(self.slug)
        return self._code_version

    def asset(self, name: str | None = None, *, gpu: bool = False, volatile: bool = False,
              **kwargs: Any) -> Callable[[Callable[..., Any]], dg.AssetsDefinition]:
        """@dg.asset with key <slug>/<name> (default: the function's name) in group <slug>.

        gpu=True routes the step to the gpu pool (and the executors' GPU tags); volatile=True
        stores the value under data/runs/ (wall-clock measurements; the report payload).
        """
        def decorate(fn: Callable[..., Any]) -> dg.AssetsDefinition:
            asset_name = name or fn.__name__
            options = dict(kwargs)
            if gpu:
                extra = gpu_asset_kwargs()
                options["kinds"] = set(options.get("kinds") or ()) | extra.pop("kinds")
                options.update(extra)
            # the DVC stage's hash: the UI marks the paper's assets unsynced when its code or params change
            options.setdefault("code_version", self.code_version())
            if volatile or asset_name == REPORT_NAME:
                options["metadata"] = {**(options.get("metadata") or {}), VOLATILE: True}
            return dg.asset(key=self.key(asset_name), group_name=self.slug, **options)(fn)

        return decorate

    def gate(self, asset: dg.AssetsDefinition | dg.AssetKey | str, name: str, description: str,
             predicate: Callable[..., Any], *, uses_params: bool = False,
             additional: dict[str, Any] | None = None, **kwargs: Any) -> dg.AssetChecksDefinition:
        """A check from a pure predicate (assets/common/checks.gate); uses_params passes the
        typed parameters as `params=`. Assets may be given by name."""
        target = self.key(asset) if isinstance(asset, str) else asset
        extra = {n: (self.key(k) if isinstance(k, str) else k) for n, k in (additional or {}).items()}
        return gate(self.slug, target, name, description, predicate, additional=extra,
                    params=self.params if uses_params else None, **kwargs)

    def publish(self, context: dg.AssetExecutionContext, compute: ComputeResource,
                artifacts: ArtifactsResource, report: Report) -> dict[str, Any]:
        """The report epilogue (assets/common/publish.py); returns the report's value."""
        ids = [c.claim_id for c in report.claims]
        declared = set(self._claims) | set(self._observations)
        if set(ids) != declared or len(ids) != len(set(ids)):
            raise PaperContractError(f"{self.slug}: the report measured {sorted(ids)}; "
                                     f"the paper declares {sorted(declared)}")
        kinds = {c.claim_id: c.kind for c in report.claims}
        wrong = [i for i in self._claims if kinds[i] != "claim"] + [i for i in self._observations
                                                                      if kinds[i] == "claim"]
        if wrong:
            raise PaperContractError(f"{self.slug}: {wrong} have the wrong kind (claim vs observation or sanity)")
        return publish(context, self.slug, compute, artifacts, report)

    def define(self, *, assets: Sequence[dg.AssetsDefinition], checks: Sequence[dg.AssetChecksDefinition],
               claims: Sequence[str], observations: Sequence[str] = ()) -> PaperDefinition:
        """Validate the group and return PAPER (claim checks added)."""
        slug = self.slug
        problems = []
        keys = [k for a in assets for k in a.keys]
        if len(keys) != len(set(keys)):
            problems.append("duplicate asset keys")
        for a in assets:
            for k in a.keys:
                if k.path[0] != slug or len(k.path) != 2:
                    problems.append(f"asset key {k.to_user_string()} is not {slug}/<name>")
                if a.group_names_by_key.get(k) != slug:
                    problems.append(f"asset {k.to_user_string()} is in group {a.group_names_by_key.get(k)!r}")
        reports = [k for k in keys if "report" in k.path[-1]]
        report_key = self.key(REPORT_NAME)
        if reports != [report_key]:
            problems.append(f"exactly one report asset named {REPORT_NAME} is required, found "
                            f"{[k.to_user_string() for k in reports]}")
        ids = [*claims, *observations]
        if len(ids) != len(set(ids)):
            problems.append(f"claim ids repeat: {sorted(i for i in ids if ids.count(i) > 1)}")
        problems += [f"claim id {i!r} is not snake_case" for i in ids if not CLAIM_ID.match(i)]
        if not claims:
            problems.append("a paper needs at least one claim")
        targets = {k.asset_key for c in checks for k in c.check_keys}
        problems += [f"a check targets {t.to_user_string()}, not an asset of {slug}" for t in targets - set(keys)]
        blocking = [s for c in checks for s in c.check_specs if s.blocking]
        if not blocking:
            problems.append("no blocking check: bad input would reach the report")
        if problems:
            raise PaperContractError(f"paper {slug}: " + "; ".join(problems))
        self._claims, self._observations = tuple(claims), tuple(observations)
        return PaperDefinition(slug=slug, assets=tuple(assets),
                               asset_checks=(*checks, *claim_checks(slug, report_key, list(claims))),
                               report_key=report_key, claim_ids=tuple(claims),
                               observation_ids=tuple(observations), params_type=self.params_type)

