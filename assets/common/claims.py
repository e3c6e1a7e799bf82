"""Paper claims as data, and the paired CI that judges comparative ones — no Dagster import.

Two kinds of rows:
- a *claim* ("claim") is something the paper asserts; it holds or not, and counts in the
  scorecard;
- an *observation* ("observation") is report-only (the spec marks it so, or it describes a
  trend without a criterion); it is shown next to the claims and never counts.

A comparative claim ("method beats baseline") is judged with `comparative_claim`: a paired
confidence interval over seeds of (method − baseline), and the claim holds only when the whole
interval lies on the claimed side of the margin. A point estimate never decides it.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CLAIM = "claim"
OBSERVATION = "observation"
KINDS = (CLAIM, OBSERVATION)
CLAIM_ID = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


@dataclass
class Claim:
    """One claim of the paper and what we measured.

    paper_value and measured_value are short human strings ("FAR ≤ α + 0.01",
    "worst mean FAR − α = +0.004"); `holds` is computed from measurements, never hand-set
    (None for an observation without a criterion). `seeds` names the seeds behind the number
    ("0–4 (5)"); `volatile` marks a claim measured from wall-clock time, whose row is a run
    record (data/runs) rather than a reproducible output.
    """

    claim_id: str
    claim: str
    paper_value: str
    measured_value: str
    holds: bool | None
    detail: str = ""
    kind: str = CLAIM
    seeds: str = ""
    volatile: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.claim_id}: kind {self.kind!r} not in {KINDS}")
        if not CLAIM_ID.match(self.claim_id):
            raise ValueError(f"claim id {self.claim_id!r} is not snake_case")
        if self.kind == CLAIM and not isinstance(self.holds, (bool, np.bool_)):
            raise ValueError(f"claim {self.claim_id}: holds must be a bool, got {self.holds!r}")
        if self.holds is not None:
            self.holds = bool(self.holds)


def observation(claim_id: str, claim: str, paper_value: str, measured_value: str, *,
                holds: bool | None = None, detail: str = "", seeds: str = "") -> Claim:
    """A report-only row: shown beside the claims, never counted in the scorecard."""
    return Claim(claim_id, claim, paper_value, measured_value, holds, detail, OBSERVATION, seeds)


def seeds_label(seeds: Sequence[int]) -> str:
    """'0–4 (5)' for contiguous seeds, else '0, 3, 7 (3)'."""
    values = sorted(int(s) for s in seeds)
    if not values:
        return "none"
    if values == list(range(values[0], values[-1] + 1)) and len(values) > 2:
        return f"{values[0]}–{values[-1]} ({len(values)})"
    return f"{', '.join(map(str, values))} ({len(values)})"


@dataclass(frozen=True)
class PairedCI:
    """Two-sided `level` confidence interval of the mean paired difference."""

    mean: float
    low: float
    high: float
    n: int
    level: float
    method: str

    def text(self, digits: int = 3) -> str:
        def f(v: float) -> str:
            return f"{v:+.{digits}g}" if math.isfinite(v) else ("−∞" if v < 0 else "+∞")

        return f"Δ {f(self.mean)} [{self.level:.0%} CI {f(self.low)}, {f(self.high)}], n = {self.n} ({self.method})"


def paired_ci(treatment: Sequence[float], control: Sequence[float], level: float = 0.90,
              method: str = "t", n_boot: int = 10_000, seed: int = 0) -> PairedCI:
    """CI of mean(treatment − control) over paired units (seeds).

    method "t": Student t interval, mean ± t_{(1+level)/2, n−1} · sd / √n;
    method "bootstrap": percentile interval of `n_boot` resampled means (seeded).
    With one pair the interval is (−∞, +∞): one seed establishes nothing.
    """
    t = np.asarray(treatment, dtype=float)
    c = np.asarray(control, dtype=float)
    if t.shape != c.shape or t.ndim != 1:
        raise ValueError(f"paired samples need equal 1-D shapes, got {t.shape} and {c.shape}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    d = t - c
    n = int(d.size)
    if n == 0 or not np.isfinite(d).all():
        raise ValueError(f"paired differences must be finite and non-empty, got {d.tolist()}")
    mean = float(d.mean())
    if n == 1:
        return PairedCI(mean, -math.inf, math.inf, 1, level, method)
    if method == "t":
        from scipy import stats

        half = float(stats.t.ppf(0.5 + level / 2, n - 1) * d.std(ddof=1) / math.sqrt(n))
        return PairedCI(mean, mean - half, mean + half, n, level, "paired t")
    if method == "bootstrap":
        rng = np.random.default_rng(seed)
        means = d[rng.integers(0, n, size=(n_boot, n))].mean(axis=1)
        low, high = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2])
        return PairedCI(mean, float(low), float(high), n, level, "paired bootstrap")
    raise ValueError(f"method must be 't' or 'bootstrap', got {method!r}")


def comparative_claim(claim_id: str, claim: str, paper_value: str, treatment: Sequence[float],
                      control: Sequence[float], *, expect: str = "greater", margin: float = 0.0,
                      level: float = 0.90, method: str = "t", seeds: Sequence[int] | None = None,
                      names: tuple[str, str] = ("method", "baseline"), detail: str = "") -> Claim:
    """A claim "treatment − control > margin" (expect="greater") or "< margin" ("less"),
    judged by the paired CI over seeds: it holds only when the whole interval is on the
    claimed side. A non-inferiority claim "A ≥ B − 0.02" is expect="greater", margin=−0.02."""
    ci = paired_ci(treatment, control, level, method)
    if expect == "greater":
        holds = ci.low > margin
        criterion = f"CI lower bound > {margin:+g}"
    elif expect == "less":
        holds = ci.high < margin
        criterion = f"CI upper bound < {margin:+g}"
    else:
        raise ValueError(f"expect must be 'greater' or 'less', got {expect!r}")
    means = f"{names[0]} {np.mean(treatment):.4g} vs {names[1]} {np.mean(control):.4g}"
    measured = f"{means}; {ci.text()}"
    return Claim(claim_id, claim, paper_value, measured, bool(holds),
                 detail=(f"criterion: {criterion}. " + detail).strip(), kind=CLAIM,
                 seeds=seeds_label(seeds) if seeds is not None else f"{ci.n} paired")
