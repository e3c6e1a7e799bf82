"""The shared layer of the paper contract: typed parameters, paired CIs, findings, gates and
the validation Paper.define does at import time."""
from __future__ import annotations

import math
from dataclasses import dataclass

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from assets.common.claims import (
    Claim,
    Premise,
    comparative_claim,
    judged,
    observation,
    paired_ci,
    seeds_label,
    verdict,
)
from assets.common.findings import Finding, as_finding, finding
from assets.common.paper import Paper, PaperContractError
from assets.common.params import ParamsError, parse
from resources.artifacts import PaperlabIOManager
from resources.profiles import deep_merge


# ------------------------------------------------------------------ typed parameters
@dataclass(frozen=True)
class Inner:
    width: int
    lr: float = 0.1


@dataclass(frozen=True)
class Outer:
    seeds: tuple[int, ...]
    ar: Inner
    mode: str
    table: dict[str, Inner]
    maybe: float | None = None


def test_params_parse_nested_values_into_frozen_types():
    p = parse(Outer, {"seeds": [0, 1], "ar": {"width": 64, "lr": 1}, "mode": "x",
                      "table": {"a": {"width": 2}}}, "viar.cpu")
    assert p.seeds == (0, 1) and p.ar == Inner(64, 1.0) and isinstance(p.ar.lr, float)
    assert p.table["a"].width == 2 and p.maybe is None
    with pytest.raises(TypeError):
        p.table["b"] = Inner(1)            # read-only mapping
    with pytest.raises(AttributeError):
        p.ar.width = 3                     # frozen dataclass


@pytest.mark.parametrize("data, message", [
    ({"seeds": [0], "ar": {"lr": 0.1}, "mode": "x", "table": {}}, "missing key viar.cpu.ar.width"),
    ({"seeds": [0], "ar": {"width": 1, "widht": 2}, "mode": "x", "table": {}}, "unknown key viar.cpu.ar.widht"),
    ({"seeds": [0], "ar": {"width": 1.5}, "mode": "x", "table": {}}, "viar.cpu.ar.width: expected an integer"),
    ({"seeds": [0, "a"], "ar": {"width": 1}, "mode": "x", "table": {}}, r"viar.cpu.seeds\[1\]: expected an integer"),
    ({"seeds": [0], "ar": {"width": True}, "mode": "x", "table": {}}, "expected an integer, got True"),
])
def test_params_errors_name_the_path(data, message):
    with pytest.raises(ParamsError, match=message):
        parse(Outer, data, "viar.cpu")


def test_profiles_deep_merge_over_base():
    base = {"a": 1, "m": {"x": 1, "y": [1, 2]}, "keep": {"k": 0}}
    merged = deep_merge(base, {"m": {"y": [3]}, "b": 2})
    assert merged == {"a": 1, "m": {"x": 1, "y": [3]}, "keep": {"k": 0}, "b": 2}
    assert base["m"]["y"] == [1, 2]        # inputs untouched


# ------------------------------------------------------------------ paired CIs and claims
def test_paired_t_interval_matches_the_closed_form():
    from scipy import stats

    t = np.array([1.0, 2.0, 3.0, 4.0, 6.0])
    c = np.array([0.5, 1.0, 2.5, 3.0, 4.0])
    d = t - c
    ci = paired_ci(t, c, level=0.95)
    half = stats.t.ppf(0.975, 4) * d.std(ddof=1) / math.sqrt(5)
    assert ci.mean == pytest.approx(d.mean()) and ci.n == 5
    assert (ci.low, ci.high) == pytest.approx((d.mean() - half, d.mean() + half))


def test_one_seed_establishes_nothing():
    ci = paired_ci([1.0], [0.0])
    assert ci.low == -math.inf and ci.high == math.inf
    assert not comparative_claim("x", "a beats b", "+1", [1.0], [0.0]).holds


def test_bootstrap_interval_is_seeded_and_covers_the_mean():
    rng = np.random.default_rng(0)
    t, c = rng.normal(1, 1, 20), rng.normal(0, 1, 20)
    a, b = paired_ci(t, c, method="bootstrap"), paired_ci(t, c, method="bootstrap")
    assert a == b and a.low < a.mean < a.high


def test_comparative_claim_holds_only_when_the_interval_excludes_the_wrong_side():
    better = [0.60, 0.62, 0.61, 0.63, 0.60]
    base = [0.50, 0.52, 0.50, 0.51, 0.52]
    assert comparative_claim("beats", "A beats B", "+0.1", better, base, seeds=range(5)).holds
    # a higher mean whose interval straddles zero is inconclusive, not refuted
    noisy = [0.9, 0.1, 0.8, 0.2, 0.7]
    claim = comparative_claim("beats", "A beats B", "+0.1", noisy, [0.5] * 5, seeds=range(5))
    assert np.mean(noisy) > 0.5 and claim.verdict == "inconclusive" and "CI" in claim.measured_value
    assert claim.seeds == "0–4 (5)"
    # non-inferiority: A ≥ B − m
    assert comparative_claim("ni", "A no worse", "≥ −0.2", base, better, rule="no_worse", margin=0.2).holds
    assert comparative_claim("ni", "A no worse", "≥ −0.02", base, better, rule="no_worse",
                             margin=0.02).verdict == "refuted"
    # "less": A's error below B's
    assert comparative_claim("lower", "A lower", "<", base, better, expect="less").holds
    with pytest.raises(ValueError, match="margin ≥ 0"):
        comparative_claim("ni", "A no worse", "≥ −0.02", base, better, margin=-0.02)


def test_claim_rows_validate_their_kind_and_id():
    with pytest.raises(ValueError, match="snake_case"):
        Claim("V1_params", "c", "p", "m", None, kind="observation")
    with pytest.raises(ValueError, match="judgement"):
        Claim("x", "c", "p", "m", True)
    row = observation("trend", "c", "p", "m")
    assert row.kind == "observation" and row.holds is None and row.verdict == "report-only"
    assert seeds_label([3, 0, 7]) == "0, 3, 7 (3)"


# ------------------------------------------------------------------ findings and gates
def test_findings_pass_only_without_problems():
    assert finding([], ok="fine").passed and finding([], ok="fine").message() == "fine"
    bad = finding([f"row {i} bad" for i in range(12)] + [""])
    assert not bad.passed and len(bad.problems) == 12 and bad.message().endswith("(+2 more)")
    assert as_finding(["x"]) == Finding(("x",))
    with pytest.raises(TypeError):
        as_finding(True)


def _paper_with(check_fn, blocking=True):
    paper = Paper("probe_paper")

    @paper.asset()
    def numbers() -> pd.DataFrame:
        return pd.DataFrame({"x": [1.0, np.nan]})

    @paper.asset()
    def benchmark_report(numbers: pd.DataFrame) -> dict:
        return {"profile": "smoke", "claims": [
            {"claim_id": "finite", "claim": "c", "paper_value": "p", "measured_value": "m", "verdict": "holds"}]}

    return paper.define(assets=[numbers, benchmark_report],
                        checks=[paper.gate(numbers, "finite", "x finite", check_fn, blocking=blocking)],
                        claims=["finite"])


def test_a_failing_predicate_blocks_downstream_and_is_recorded(data_dir):
    defn = _paper_with(lambda frame: [f"{int(frame['x'].isna().sum())} NaN in x"] if frame["x"].isna().any() else [])
    result = dg.materialize([*defn.assets, *defn.asset_checks], raise_on_error=False,
                            resources={"io_manager": PaperlabIOManager()})
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert checks["finite"].passed is False and "1 NaN in x" in checks["finite"].description
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert materialized == {"probe_paper/numbers"}
    assert (data_dir / "runs" / "probe_paper" / "checks_numbers_finite.parquet").exists()


def test_claim_checks_pass_on_holds_error_on_refuted_warn_on_inconclusive():
    """The UI's claim checks: holds passes; refuted fails with ERROR; inconclusive fails with WARN,
    with the premise and the CI in the metadata."""
    paper = Paper("verdict_probe")
    premise = Premise("policy beats random: paired CI lower bound > 0", "Δ +0.01 [−0.02, +0.04]", False)
    rows = [judged("a", "c", "p", "m", verdict(0.2, 0.1, 0.3, margin=0.1)),
            judged("b", "c", "p", "m", verdict(-0.2, -0.3, -0.1, margin=0.1)),
            judged("c", "c", "p", "m", verdict(0.2, 0.1, 0.3, margin=0.1, premises=premise))]

    @paper.asset()
    def numbers() -> pd.DataFrame:
        return pd.DataFrame({"x": [1.0]})

    @paper.asset()
    def benchmark_report(numbers: pd.DataFrame) -> dict:
        return {"profile": "smoke", "claims": [r.row() for r in rows]}

    defn = paper.define(assets=[numbers, benchmark_report],
                        checks=[paper.gate(numbers, "finite", "x finite", lambda frame: [])],
                        claims=["a", "b", "c"])
    result = dg.materialize([*defn.assets, *defn.asset_checks], raise_on_error=False,
                            resources={"io_manager": PaperlabIOManager()})
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert checks["claim_a"].passed and checks["claim_a"].metadata["verdict"].value == "holds"
    assert not checks["claim_b"].passed and checks["claim_b"].severity == dg.AssetCheckSeverity.ERROR
    assert not checks["claim_c"].passed and checks["claim_c"].severity == dg.AssetCheckSeverity.WARN
    assert "FAILED" in checks["claim_c"].metadata["premise"].value
    assert checks["claim_c"].metadata["ci"].value == "[+0.1, +0.3]"


@pytest.mark.parametrize("mutate, message", [
    ("two_reports", "exactly one report asset named benchmark_report"),
    ("bad_claim", "is not snake_case"),
    ("no_gate", "no blocking check"),
    ("dup_claim", "claim ids repeat"),
])
def test_define_refuses_a_paper_that_breaks_the_contract(mutate, message):
    paper = Paper("contract_probe")

    @paper.asset()
    def data() -> dict:
        return {}

    @paper.asset()
    def benchmark_report(data: dict) -> dict:
        return {}

    assets = [data, benchmark_report]
    if mutate == "two_reports":
        @paper.asset()
        def other_report(data: dict) -> dict:
            return {}

        assets.append(other_report)
    checks = [] if mutate == "no_gate" else [paper.gate(data, "ok", "ok", lambda v: [])]
    claims = {"bad_claim": ["V1_params"], "dup_claim": ["a", "a"]}.get(mutate, ["a"])
    with pytest.raises(PaperContractError, match=message):
        paper.define(assets=assets, checks=checks, claims=claims)


def test_slug_must_be_snake_case_and_not_reserved():
    with pytest.raises(PaperContractError):
        Paper("Bad-Slug")
    with pytest.raises(PaperContractError):
        Paper("runs")


def test_report_asset_is_volatile_and_gpu_assets_use_the_gpu_pool():
    from resources.artifacts import VOLATILE

    paper = Paper("tags_probe")

    @paper.asset(gpu=True, kinds={"pandas"})
    def trained() -> dict:
        return {}

    @paper.asset()
    def benchmark_report(trained: dict) -> dict:
        return {}

    assert trained.op.pool == "gpu" and {"torch", "pandas"} <= set(trained.specs_by_key[trained.key].kinds)
    assert benchmark_report.specs_by_key[benchmark_report.key].metadata[VOLATILE] is True
