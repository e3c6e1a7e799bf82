"""Paper claims as data, and the one verdict rule that judges every counted claim — no Dagster import.

Three kinds of rows:
- a *claim* ("claim") is something the paper asserts; `verdict(...)` judges it from an interval
  and it counts in the scorecard as holds, refuted or inconclusive;
- an *observation* ("observation") is report-only (the spec marks it so, or it describes a trend
  without a criterion); shown next to the claims, never counted;
- a *sanity* row ("sanity") is a result true by construction (an algebraic identity, a property a
  blocking gate enforces, a ratio implied by a FLOP count); shown, never counted.

The one rule, for an interval [lo, hi] (a paired CI over seeds of Δ = method − baseline, or a CI of
one quantity) and the paper's margin m ≥ 0:

| rule        | the claim           | holds                     | refuted  |
|-------------|---------------------|---------------------------|----------|
| "effect"    | Δ ≥ m (an effect)   | lo > 0 and estimate ≥ m   | hi < m   |
| "no_worse"  | Δ ≥ −m              | lo > −m                   | hi < −m  |
| "bound"     | quantity ≥ m        | lo ≥ m                    | hi < m   |

`direction="less"` mirrors each row (Δ ≤ −m, Δ ≤ m, quantity ≤ m). Anything else is
inconclusive: the data cannot tell at this scale. A claim whose premise (a measured condition of the
set-up, written before the run) failed is inconclusive whatever its interval says. A point estimate
never decides a verdict; one seed gives the interval (−∞, +∞) and so is always inconclusive.

A multi-part claim ("on every layout", "A and B") is the conjunction `all_of(parts, premises)`:
refuted when any part is refuted, holds only when every part holds, inconclusive otherwise or when
a premise failed; its verdict carries the decisive part's interval and its text names that part.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

CLAIM = "claim"
OBSERVATION = "observation"
SANITY = "sanity"
KINDS = (CLAIM, OBSERVATION, SANITY)
CLAIM_ID = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")

HOLDS = "holds"
REFUTED = "refuted"
INCONCLUSIVE = "inconclusive"
REPORT_ONLY = "report-only"
OUTCOMES = (HOLDS, REFUTED, INCONCLUSIVE)
ROW_VERDICTS = (*OUTCOMES, REPORT_ONLY, SANITY)
RULES = ("effect", "no_worse", "bound")
DIRECTIONS = ("greater", "less")
SYMBOL = {HOLDS: "✅", REFUTED: "❌", INCONCLUSIVE: "❔", REPORT_ONLY: "report-only", SANITY: "sanity"}


@dataclass(frozen=True)
class Premise:
    """A measured condition of the experiment's set-up under which the claim can be tested at all.

    what: the condition with its threshold, fixed before the run ("trained policy beats random:
    paired CI lower bound > 0"); measured: the number ("Δ +0.01 [−0.02, +0.04]"); met: whether it
    held. A premise is about the set-up, never about the claimed effect.
    """

    what: str
    measured: str
    met: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "met", bool(self.met))

    def text(self) -> str:
        return f"{self.what} — measured {self.measured}" + ("" if self.met else " (FAILED)")


@dataclass(frozen=True)
class Verdict:
    """The outcome of the one rule on an interval, with what it was judged on."""

    outcome: str
    estimate: float
    low: float
    high: float
    margin: float
    rule: str
    direction: str
    reason: str
    premises: tuple[Premise, ...] = ()

    @property
    def premise(self) -> str:
        """The premises as one line ('' when the claim has none)."""
        return "; ".join(p.text() for p in self.premises)

    def ci_text(self, digits: int = 3) -> str:
        return f"[{_num(self.low, digits)}, {_num(self.high, digits)}]"


def _num(v: float, digits: int = 3) -> str:
    if math.isnan(v):
        return "nan"
    return f"{v:+.{digits}g}" if math.isfinite(v) else ("−∞" if v < 0 else "+∞")


def criterion_text(rule: str, margin: float, direction: str = "greater") -> str:
    """The rule in words, e.g. 'holds: lo > 0 and Δ ≥ +0.05; refuted: hi < +0.05'."""
    m = float(margin)
    if direction == "greater":
        return {"effect": f"holds: CI lower bound > 0 and estimate ≥ {m:+g}; refuted: CI upper bound < {m:+g}",
                "no_worse": f"holds: CI lower bound > {-m:+g}; refuted: CI upper bound < {-m:+g}",
                "bound": f"holds: CI lower bound ≥ {m:g}; refuted: CI upper bound < {m:g}"}[rule]
    return {"effect": f"holds: CI upper bound < 0 and estimate ≤ {-m:+g}; refuted: CI lower bound > {-m:+g}",
            "no_worse": f"holds: CI upper bound < {m:+g}; refuted: CI lower bound > {m:+g}",
            "bound": f"holds: CI upper bound ≤ {m:g}; refuted: CI lower bound > {m:g}"}[rule]


def verdict(estimate: float, low: float, high: float, *, rule: str = "effect", margin: float = 0.0,
            direction: str = "greater", premises: Sequence[Premise] | Premise | None = None) -> Verdict:
    """The one verdict rule (module docstring) for an interval [low, high] around `estimate`.

    rule "effect" / "no_worse" take margin m ≥ 0 (the paper's, or the issue's where it states one);
    rule "bound" takes the bound itself (any sign). A failed premise, a missing or non-finite
    estimate makes the claim inconclusive.
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if rule != "bound" and not margin >= 0:
        raise ValueError(f"rule {rule!r} takes a margin ≥ 0 (the size of the claim), got {margin!r}")
    if isinstance(premises, Premise):
        premises = (premises,)
    premises = tuple(premises or ())
    est, lo, hi, m = float(estimate), float(low), float(high), float(margin)

    def make(outcome: str, reason: str) -> Verdict:
        return Verdict(outcome, est, lo, hi, m, rule, direction, reason, premises)

    failed = [p for p in premises if not p.met]
    if failed:
        return make(INCONCLUSIVE, "premise: " + "; ".join(f"{p.what}, measured {p.measured}" for p in failed))
    if math.isnan(est) or math.isnan(lo) or math.isnan(hi):
        return make(INCONCLUSIVE, "no measurement")
    if lo > hi:
        raise ValueError(f"interval [{lo}, {hi}] is empty")
    # mirror a "less" claim onto the "greater" axis: Δ ≤ x  ⇔  −Δ ≥ −x
    if direction == "less":
        e, a, b = -est, -hi, -lo
        bound = -m if rule == "bound" else m
    else:
        e, a, b, bound = est, lo, hi, m
    if rule == "effect":
        holds, refuted = a > 0 and e >= bound, b < bound
    elif rule == "no_worse":
        holds, refuted = a > -bound, b < -bound
    else:
        holds, refuted = a >= bound, b < bound
    crit = criterion_text(rule, m, direction)
    if holds:
        return make(HOLDS, crit)
    if refuted:
        return make(REFUTED, crit)
    return make(INCONCLUSIVE, f"the interval {_num(lo)}, {_num(hi)} decides neither ({crit})")


HOLDING = ("nearest", "first", "lowest")
_RANK = {REFUTED: 0, INCONCLUSIVE: 1, HOLDS: 2}
EVERY_PART = "all parts must hold (any refuted part refutes): "


def slack(v: Verdict) -> float:
    """How far a holding part's interval lies inside its 'holds' region: the distance from the CI
    bound that decides it to the threshold that bound must clear (module docstring's table)."""
    m = v.margin
    if v.direction == "greater":
        return {"effect": v.low, "no_worse": v.low + m, "bound": v.low - m}[v.rule]
    return {"effect": -v.high, "no_worse": m - v.high, "bound": m - v.high}[v.rule]


def all_of(parts: Sequence[tuple], premises: Sequence[Premise] | Premise | None = None, *,
           holding: str | Callable[[Verdict], float] = "nearest", reason: str = "decisive",
           part: str | None = "{name} {outcome} {ci}", prefix: str = "parts: ",
           suffix: str = " (decided by {name})", sep: str = "; ", digits: int = 3) -> tuple[Verdict, str]:
    """The conjunction of a multi-part claim ("on every layout", "A and B"): decided by its weakest part.

    parts: (name, Verdict) or (name, Verdict, text) — text is the part's measurement, for `part`.
    - refuted when any part is refuted (the decisive part: the first refuted one);
    - holds only when every part holds (the decisive part: `holding` — "nearest", the part whose
      interval is nearest its threshold (`slack`); "first", the first part; "lowest", the part with
      the lowest CI lower bound; or a key function, the part that minimises it);
    - inconclusive otherwise (the decisive part: the first part that does not hold);
    - a failed premise (the claim's `premises`) makes it inconclusive.

    The verdict carries the decisive part's interval, so the row's estimate and CI are that part's.
    reason "decisive": the decisive part's verdict (its reason and premises); with `premises`, its
    interval is re-judged by `verdict(...)` with its premises and the claim's. reason "every": the
    reason lists every part's outcome and reason ("all parts must hold (any refuted part refutes):
    …"), the premises are the claim's then every part's (without repeats), and any failed one makes
    the whole inconclusive ("premise: … — all parts must hold …").

    Returns (verdict, text): text = prefix + sep.join(part per part) + suffix, where `part` may use
    {name}, {outcome}, {ci} (ci_text(digits)), {text}, {reason} of each part (None: no list) and
    `suffix` {name} and {ci} of the decisive part and the counts {holds}, {refuted},
    {inconclusive}, {n}.
    """
    rows = [(p[0], p[1], p[2] if len(p) > 2 else "") for p in parts]
    if not rows:
        raise ValueError("a conjunction needs at least one part")
    if reason not in ("decisive", "every"):
        raise ValueError(f"reason must be 'decisive' or 'every', got {reason!r}")
    if isinstance(premises, Premise):
        premises = (premises,)
    premises = tuple(premises or ())
    outcomes = [v.outcome for _, v, _ in rows]
    if REFUTED in outcomes:
        k = outcomes.index(REFUTED)
    elif any(o != HOLDS for o in outcomes):
        k = next(i for i, o in enumerate(outcomes) if o != HOLDS)
    else:
        if callable(holding):
            key = holding
        elif holding in HOLDING:
            key = {"nearest": slack, "first": lambda v: 0.0, "lowest": lambda v: v.low}[holding]
        else:
            raise ValueError(f"holding must be one of {HOLDING} or a key function, got {holding!r}")
        k = min(range(len(rows)), key=lambda i: key(rows[i][1]))
    name, pick, _ = rows[k]
    if reason == "decisive":
        j = pick if not premises else verdict(pick.estimate, pick.low, pick.high, rule=pick.rule,
                                              margin=pick.margin, direction=pick.direction,
                                              premises=[*pick.premises, *premises])
    else:
        why = EVERY_PART + "; ".join(f"{n} {v.outcome} ({v.reason})" for n, v, _ in rows)
        merged = tuple(dict.fromkeys([*premises, *(p for _, v, _ in rows for p in v.premises)]))
        failed = [p for p in merged if not p.met]
        outcome = pick.outcome
        if failed:
            outcome = INCONCLUSIVE
            why = "premise: " + "; ".join(f"{p.what}, measured {p.measured}" for p in failed) + " — " + why
        j = replace(pick, outcome=outcome, reason=why, premises=merged)
    listing = "" if part is None else sep.join(
        part.format(name=n, outcome=v.outcome, ci=v.ci_text(digits), text=t, reason=v.reason) for n, v, t in rows)
    counts = {"holds": outcomes.count(HOLDS), "refuted": outcomes.count(REFUTED),
              "inconclusive": outcomes.count(INCONCLUSIVE), "n": len(rows)}
    return j, prefix + listing + suffix.format(name=name, ci=pick.ci_text(digits), **counts)


@dataclass
class Claim:
    """One row of a paper's claims table: what the paper says and what we measured.

    paper_value and measured_value are short human strings ("FAR ≤ α + 0.01",
    "worst mean FAR − α = +0.004 [−0.001, +0.009]"). A counted claim (kind "claim") carries the
    `judgement` of `verdict(...)`, computed from measurements, never hand-set; an observation or a
    sanity row carries none. `seeds` names the seeds behind the number ("0–4 (5)"); `volatile`
    marks a claim measured from wall-clock time, whose row is a run record (data/runs) rather than
    a reproducible output.
    """

    claim_id: str
    claim: str
    paper_value: str
    measured_value: str
    judgement: Verdict | None
    detail: str = ""
    kind: str = CLAIM
    seeds: str = ""
    volatile: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.claim_id}: kind {self.kind!r} not in {KINDS}")
        if not CLAIM_ID.match(self.claim_id):
            raise ValueError(f"claim id {self.claim_id!r} is not snake_case")
        if self.kind == CLAIM and not isinstance(self.judgement, Verdict):
            raise ValueError(f"claim {self.claim_id}: a counted claim needs the judgement of "
                             f"assets.common.claims.verdict(...), got {self.judgement!r}")
        if self.kind != CLAIM and self.judgement is not None:
            raise ValueError(f"claim {self.claim_id}: a {self.kind} row carries no verdict")

    @property
    def verdict(self) -> str:
        """holds / refuted / inconclusive for a claim; report-only or sanity otherwise."""
        if self.kind == CLAIM:
            return self.judgement.outcome
        return SANITY if self.kind == SANITY else REPORT_ONLY

    @property
    def holds(self) -> bool | None:
        """True when a counted claim holds (None for rows that are not counted)."""
        return self.verdict == HOLDS if self.kind == CLAIM else None

    @property
    def premise(self) -> str:
        return self.judgement.premise if self.judgement else ""

    @property
    def ci(self) -> str:
        return self.judgement.ci_text() if self.judgement else ""

    def row(self) -> dict:
        """The flat warehouse row (see resources.warehouse's `claims` table)."""
        j = self.judgement
        nan = float("nan")
        return {"claim_id": self.claim_id, "kind": self.kind, "claim": self.claim, "paper_value": self.paper_value,
                "measured_value": self.measured_value, "verdict": self.verdict, "premise": self.premise,
                "ci": self.ci, "estimate": j.estimate if j else nan, "ci_low": j.low if j else nan,
                "ci_high": j.high if j else nan, "margin": j.margin if j else nan, "rule": j.rule if j else "",
                "reason": j.reason if j else "", "detail": self.detail, "seeds": self.seeds,
                "volatile": bool(self.volatile)}


ROW_COLUMNS = tuple(Claim("x", "", "", "", None, kind=OBSERVATION).row())


def judged(claim_id: str, claim: str, paper_value: str, measured_value: str, judgement: Verdict, *,
           detail: str = "", seeds: str = "", volatile: bool = False) -> Claim:
    """A counted claim from its verdict; the rule's criterion is appended to the detail."""
    text = f"criterion: {judgement.reason}." if judgement.outcome != INCONCLUSIVE else f"{judgement.reason}."
    return Claim(claim_id, claim, paper_value, measured_value, judgement,
                 detail=(text + " " + detail).strip(), seeds=seeds, volatile=volatile)


def observation(claim_id: str, claim: str, paper_value: str, measured_value: str, *,
                detail: str = "", seeds: str = "", volatile: bool = False) -> Claim:
    """A report-only row: shown beside the claims, never counted in the scorecard."""
    return Claim(claim_id, claim, paper_value, measured_value, None, detail, OBSERVATION, seeds, volatile)


def sanity(claim_id: str, claim: str, paper_value: str, measured_value: str, *, ok: bool,
           detail: str = "", seeds: str = "") -> Claim:
    """A result true by construction: shown, never counted. `ok` False means the construction
    itself is broken (a bug, not a finding): the measured value says so."""
    measured = measured_value if ok else f"VIOLATED: {measured_value}"
    return Claim(claim_id, claim, paper_value, measured, None, detail, SANITY, seeds)


def not_evaluated(claim_id: str, claim: str, paper_value: str, why: str, *, premise: str = "input present",
                  seeds: str = "") -> Claim:
    """A claim that could not be measured (its input is absent, its arm was not run): inconclusive
    with the premise that failed, never refuted."""
    j = verdict(float("nan"), float("nan"), float("nan"), premises=Premise(premise, why, False))
    return judged(claim_id, claim, paper_value, f"not evaluated: {why}", j, seeds=seeds)


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
    """Two-sided `level` confidence interval of a mean (of paired differences, or of one quantity)."""

    mean: float
    low: float
    high: float
    n: int
    level: float
    method: str
    label: str = field(default="Δ")

    def text(self, digits: int = 3) -> str:
        return (f"{self.label} {_num(self.mean, digits)} [{self.level:.0%} CI {_num(self.low, digits)}, "
                f"{_num(self.high, digits)}], n = {self.n} ({self.method})")


def mean_ci(values: Sequence[float], level: float = 0.90, method: str = "t", n_boot: int = 10_000,
            seed: int = 0, label: str = "mean") -> PairedCI:
    """CI of the mean of `values` (one per seed, or per unit).

    method "t": Student t interval, mean ± t_{(1+level)/2, n−1} · sd / √n;
    method "bootstrap": percentile interval of `n_boot` resampled means (seeded).
    With one value the interval is (−∞, +∞): one seed establishes nothing.
    """
    d = np.asarray(values, dtype=float)
    if d.ndim != 1:
        raise ValueError(f"need a 1-D sample, got shape {d.shape}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    n = int(d.size)
    if n == 0 or not np.isfinite(d).all():
        raise ValueError(f"values must be finite and non-empty, got {d.tolist()}")
    mean = float(d.mean())
    if n == 1:
        return PairedCI(mean, -math.inf, math.inf, 1, level, method, label)
    if method == "t":
        from scipy import stats

        half = float(stats.t.ppf(0.5 + level / 2, n - 1) * d.std(ddof=1) / math.sqrt(n))
        return PairedCI(mean, mean - half, mean + half, n, level, "t", label)
    if method == "bootstrap":
        rng = np.random.default_rng(seed)
        means = d[rng.integers(0, n, size=(n_boot, n))].mean(axis=1)
        low, high = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2])
        return PairedCI(mean, min(float(low), mean), max(float(high), mean), n, level, "bootstrap", label)
    raise ValueError(f"method must be 't' or 'bootstrap', got {method!r}")


def paired_ci(treatment: Sequence[float], control: Sequence[float], level: float = 0.90,
              method: str = "t", n_boot: int = 10_000, seed: int = 0) -> PairedCI:
    """CI of mean(treatment − control) over paired units (seeds); see `mean_ci`."""
    t = np.asarray(treatment, dtype=float)
    c = np.asarray(control, dtype=float)
    if t.shape != c.shape or t.ndim != 1:
        raise ValueError(f"paired samples need equal 1-D shapes, got {t.shape} and {c.shape}")
    ci = mean_ci(t - c, level, method, n_boot, seed, label="Δ")
    return PairedCI(ci.mean, ci.low, ci.high, ci.n, ci.level, f"paired {ci.method}", "Δ")


def proportion_ci(successes: int, n: int, level: float = 0.90) -> PairedCI:
    """Clopper–Pearson (exact) interval of a binomial rate successes / n."""
    from scipy import stats

    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 ≤ successes ≤ n and n > 0, got {successes}/{n}")
    a = (1 - level) / 2
    low = 0.0 if successes == 0 else float(stats.beta.ppf(a, successes, n - successes + 1))
    high = 1.0 if successes == n else float(stats.beta.ppf(1 - a, successes + 1, n - successes))
    return PairedCI(successes / n, low, high, int(n), level, "Clopper–Pearson", "rate")


def verdict_of(ci: PairedCI, **kwargs) -> Verdict:
    """`verdict(...)` on a computed interval."""
    return verdict(ci.mean, ci.low, ci.high, **kwargs)


def comparative_claim(claim_id: str, claim: str, paper_value: str, treatment: Sequence[float],
                      control: Sequence[float], *, rule: str = "effect", expect: str = "greater",
                      margin: float = 0.0, level: float = 0.90, method: str = "t",
                      seeds: Sequence[int] | None = None, names: tuple[str, str] = ("method", "baseline"),
                      premises: Sequence[Premise] | Premise | None = None, detail: str = "") -> Claim:
    """A claim on Δ = treatment − control, judged by the paired CI over seeds and the one rule.

    rule "effect", expect "greater": "Δ ≥ margin" (margin ≥ 0, the paper's effect size);
    rule "no_worse": "Δ ≥ −margin" (non-inferiority); expect "less" mirrors both.
    """
    ci = paired_ci(treatment, control, level, method)
    j = verdict_of(ci, rule=rule, margin=margin, direction=expect, premises=premises)
    means = f"{names[0]} {np.mean(treatment):.4g} vs {names[1]} {np.mean(control):.4g}"
    return judged(claim_id, claim, paper_value, f"{means}; {ci.text()}", j, detail=detail,
                  seeds=seeds_label(seeds) if seeds is not None else f"{ci.n} paired")


def bound_claim(claim_id: str, claim: str, paper_value: str, values: Sequence[float], bound: float, *,
                expect: str = "less", level: float = 0.90, method: str = "t", seeds: Sequence[int] | None = None,
                name: str = "mean", premises: Sequence[Premise] | Premise | None = None,
                detail: str = "") -> Claim:
    """A claim that one quantity is ≤ bound (expect "less") or ≥ bound ("greater"), judged by the
    CI of its mean over seeds: holds when the CI lies on the paper's side of the bound."""
    ci = mean_ci(values, level, method, label=name)
    j = verdict_of(ci, rule="bound", margin=bound, direction=expect, premises=premises)
    return judged(claim_id, claim, paper_value, ci.text(), j, detail=detail,
                  seeds=seeds_label(seeds) if seeds is not None else f"{ci.n}")
