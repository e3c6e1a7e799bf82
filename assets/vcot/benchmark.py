"""vcot claims: measured rows → Claims. Thresholds are module constants, never per profile.

Comparisons are paired over *programs* (the unit a benchmark task is drawn from) with a 90 %
bootstrap CI (assets.common.claims.paired_ci), as the issue asks ("90 % CIs by bootstrap over
programs"), and every counted claim is judged by the one rule (assets.common.claims.verdict).
A claim the paper states "for solver-guided and retrieval", or as two criteria at once, is the
conjunction of its parts (`all_of`): it holds only when every part holds, is refuted when any
part is refuted, and is inconclusive otherwise.
"""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from assets.common.claims import (
    OBSERVATION,
    Claim,
    all_of,
    judged,
    observation,
    paired_ci,
    sanity,
    verdict,
    verdict_of,
)

COVERAGE_TARGET = 0.9
LINE_FACTOR_MIN = 2.0            # proof lines of the lifted programs ≥ 2 × the hints (paper: 6.5×)
FRAGILITY_DROP = 25.0            # Acc(bucket 10) − Acc(bucket 100) ≥ 25 points
SPEARMAN_MAX = -0.8              # Spearman(bucket, Acc) over the 10 buckets
TYPE_LOC_MARGIN = 0.0            # "harder": SemAcc(easier) − SemAcc(harder) > 0 (the spec states no size)
LEVEL = 0.90
FRAGILE = ("solver", "retrieval")
BUCKETS = tuple(range(10, 101, 10))
PAPER = {"ratio10": 71.58, "ratio100": 17.22, "invariant": 68.71, "assertion": 39.55, "front": 69.04,
         "middle": 46.35}


# all_of's options that keep this paper's claim rows byte-identical with the local helper it
# replaced (issue 45): when all parts hold, the part with the lowest CI lower bound is shown; the reason lists
# every part and the premises are every part's.
_ALL_OF = {"holding": "lowest", "reason": "every"}


def acc_by(scores: pd.DataFrame, completer: str, dimension: str, column: str) -> pd.Series:
    """Acc (× 100) of one completer by bucket / type / loc."""
    mine = scores[(scores["completer"] == completer) & (scores["dimension"] == dimension)]
    return 100 * mine.groupby(column)["acc"].mean()


def per_program(scores: pd.DataFrame, completer: str, dimension: str, column: str, value: Any) -> pd.Series:
    mine = scores[(scores["completer"] == completer) & (scores["dimension"] == dimension) &
                  (scores[column] == value)]
    return 100 * mine.groupby("program_id")["acc"].mean()


def paired_programs(scores: pd.DataFrame, completer: str, dimension: str, column: str, a: Any, b: Any,
                    n_boot: int, seed: int):
    """CI of mean over programs of Acc(a) − Acc(b), programs having both."""
    x, y = per_program(scores, completer, dimension, column, a), per_program(scores, completer, dimension, column, b)
    common = sorted(set(x.index) & set(y.index))
    if len(common) < 2:
        return None, common
    return paired_ci(x[common].to_numpy(), y[common].to_numpy(), LEVEL, "bootstrap", n_boot, seed), common


def spearman(scores: pd.DataFrame, completer: str) -> float:
    from scipy.stats import spearmanr

    by = acc_by(scores, completer, "ratio", "bucket").reindex(BUCKETS).dropna()
    if len(by) < 3 or by.nunique() < 2:
        return float("nan")
    return float(spearmanr(by.index, by.to_numpy()).statistic)


def lift_claims(programs: pd.DataFrame, steps: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> list[Claim]:
    lifted = programs[programs["status"] == "lifted"]
    excluded = int((programs["status"] != "lifted").sum())
    verified = int(lifted["verified"].sum())
    kept = steps[steps["status"] == "kept"]
    traced = int(kept["provenance"].astype(str).str.len().gt(0).sum())
    min_cov = float(lifted["min_coverage"].min()) if len(lifted) else float("nan")
    mean_cov = {k: float(np.mean([json.loads(c)[k] for c in lifted["coverage"]])) for k in
                json.loads(lifted["coverage"].iloc[0])} if len(lifted) else {}
    ok = bool(len(lifted) and excluded == 0 and verified == len(lifted) and traced == len(kept)
              and min_cov >= COVERAGE_TARGET)
    # enforced by the blocking gate verify_coverage_provenance (checks.lifted_valid): true by
    # construction whenever this report exists, so shown, never counted
    fidelity = sanity(
        "lift_fidelity", "Lifting: 100 % of lifted programs verify, every step is traced to a high-tier proof "
        f"node, coverage ≥ {COVERAGE_TARGET} in every category (enforced by a blocking gate)",
        "100 % verify after the repair loop (VCoT-Lift)",
        f"{verified}/{len(lifted)} verify ({excluded} excluded); {traced}/{len(kept)} steps traced; "
        f"worst coverage {min_cov:.2f}; mean by category " + ", ".join(f"{k} {v:.2f}" for k, v in mean_cov.items()),
        ok=ok, seeds=f"{len(lifted)} programs")
    before = lifted["proof_lines_before"].to_numpy(dtype=float)
    after = lifted["proof_lines_after"].to_numpy(dtype=float)
    unpruned = float(lifted["unpruned_lines"].sum())
    factor, lo, hi = ratio_of_sums_ci(after, before, n_boot, seed)
    per = after / before if len(before) else np.array([])
    measured = (f"{factor:.2f}× [90% CI {lo:.2f}, {hi:.2f}] ({int(after.sum())} vs {int(before.sum())} lines; "
                f"per program median {np.median(per):.2f}×, max {per.max():.2f}×; bootstrap over programs)"
                if len(per) else "no lifted program")
    line = judged(
        "proof_line_factor", f"Lifted proofs are explicit: proof lines ≥ {LINE_FACTOR_MIN:g}× the original hints",
        "6.5× the proof lines of Verus-Bench [S]", measured,
        verdict(factor, lo, hi, rule="bound", margin=LINE_FACTOR_MIN, direction="greater"),
        seeds=f"{len(lifted)} programs (bootstrap)",
        detail=f"ablation — without the triviality/redundancy pruning the lifted proofs would have "
               f"{unpruned / before.sum() if before.sum() else float('nan'):.2f}× the hint lines")
    return [fidelity, line]


def ratio_of_sums_ci(num: np.ndarray, den: np.ndarray, n_boot: int, seed: int) -> tuple[float, float, float]:
    """Σ num / Σ den with a 90 % percentile bootstrap CI over the units (programs); one unit or
    none gives (−∞, +∞)."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if not len(num) or den.sum() <= 0:
        return float("nan"), float("nan"), float("nan")
    point = float(num.sum() / den.sum())
    if len(num) < 2:
        return point, -math.inf, math.inf
    idx = np.random.default_rng(seed).integers(0, len(num), size=(n_boot, len(num)))
    d = den[idx].sum(axis=1)
    boots = num[idx].sum(axis=1)[d > 0] / d[d > 0]
    low, high = np.quantile(boots, [0.5 - LEVEL / 2, 0.5 + LEVEL / 2])
    return point, min(float(low), point), max(float(high), point)


def spearman_ci(scores: pd.DataFrame, completer: str, n_boot: int, seed: int) -> tuple[float, float, float]:
    """Spearman(bucket, Acc) over the buckets, with a 90 % percentile bootstrap CI over programs
    (each resample recomputes every bucket's mean Acc from the drawn programs' tasks; a resample
    whose bucket means are all equal has no trend: ρ = 0)."""
    from scipy.stats import spearmanr

    point = spearman(scores, completer)
    mine = scores[(scores["completer"] == completer) & (scores["dimension"] == "ratio")]
    if not math.isfinite(point) or mine["program_id"].nunique() < 2:
        return point, -math.inf, math.inf
    total = mine.pivot_table(index="program_id", columns="bucket", values="acc", aggfunc="sum", fill_value=0.0)
    count = mine.pivot_table(index="program_id", columns="bucket", values="acc", aggfunc="size", fill_value=0)
    buckets = np.array([b for b in BUCKETS if b in total.columns])
    s, c = total[buckets].to_numpy(dtype=float), count[buckets].to_numpy(dtype=float)
    idx = np.random.default_rng(seed).integers(0, len(s), size=(n_boot, len(s)))
    boots = []
    for row in idx:
        n = c[row].sum(axis=0)
        keep = n > 0
        means = s[row].sum(axis=0)[keep] / n[keep]
        if keep.sum() < 3:
            continue
        boots.append(0.0 if np.ptp(means) == 0 else float(spearmanr(buckets[keep], means).statistic))
    if not boots:
        return point, -math.inf, math.inf
    low, high = np.quantile(boots, [0.5 - LEVEL / 2, 0.5 + LEVEL / 2])
    return point, min(float(low), point), max(float(high), point)


def fragility_claim(scores: pd.DataFrame, completer: str, n_boot: int, seed: int) -> Claim:
    by = acc_by(scores, completer, "ratio", "bucket")
    a10, a100 = by.get(10, float("nan")), by.get(100, float("nan"))
    ci, common = paired_programs(scores, completer, "ratio", "bucket", 10, 100, n_boot, seed)
    rho, rho_lo, rho_hi = spearman_ci(scores, completer, n_boot, seed)
    nan = float("nan")
    drop = verdict_of(ci, rule="effect", margin=FRAGILITY_DROP) if ci is not None else verdict(nan, nan, nan)
    trend = verdict(rho, rho_lo, rho_hi, rule="bound", margin=SPEARMAN_MAX, direction="less")
    j = all_of([(f"drop ≥ {FRAGILITY_DROP:g}", drop), (f"Spearman ≤ {SPEARMAN_MAX}", trend)], **_ALL_OF)[0]
    return judged(
        f"fragility_{completer}", f"Fragility to missing proofs ({completer} completer): Acc(10 %) − Acc(100 %) "
        f"≥ {FRAGILITY_DROP:g} points (paired CI over programs) and Spearman(bucket, Acc) ≤ {SPEARMAN_MAX} "
        "(bootstrap CI over programs)",
        f"best model {PAPER['ratio10']} at 10 % → {PAPER['ratio100']} at 100 % [S]",
        f"Acc {a10:.1f} → {a100:.1f} (drop {a10 - a100:+.1f}); programs with both buckets: "
        f"{ci.text(3) if ci else 'fewer than 2'}; Spearman {rho:.2f} [90% CI {rho_lo:.2f}, {rho_hi:.2f}]",
        j, seeds=f"{len(common)} programs (bootstrap)")


def per_program_sem(scores: pd.DataFrame, completer: str, dimension: str, column: str, value: Any) -> pd.Series:
    """SemAcc (× 100) per program of one completer at one type / loc."""
    mine = scores[(scores["completer"] == completer) & (scores["dimension"] == dimension) &
                  (scores[column] == value)]
    return 100 * mine.groupby("program_id")["sem"].mean()


def difference_claim(scores: pd.DataFrame, claim_id: str, text: str, paper: str, dimension: str, column: str,
                     a: str, b: str, n_boot: int, seed: int) -> Claim:
    """SemAcc(a) − SemAcc(b) > 0 for both fragile completers, paired over programs.

    Judged on SemAcc, not Acc: Acc is mostly the 0.25 syntax credit here (the trivial
    `assert(true)` completer scores Acc 25 on every type, above both real completers on
    assertions), and a completer that leaves holes empty loses Acc to syntax, not to difficulty.
    SemAcc (the block reproduces the gold block, the spec's replacement for the LLM judge) is the
    part of Acc that measures whether the completer reconstructed the step."""
    parts, verdicts, n = [], [], []
    for completer in FRAGILE:
        x, y = (per_program_sem(scores, completer, dimension, column, v) for v in (a, b))
        common = sorted(set(x.index) & set(y.index))
        n.append(len(common))
        if len(common) >= 2:
            ci = paired_ci(x[common].to_numpy(dtype=float), y[common].to_numpy(dtype=float), LEVEL, "bootstrap",
                           n_boot, seed)
            v = verdict_of(ci, rule="effect", margin=TYPE_LOC_MARGIN)
            text_ci = ci.text(3)
        else:
            nan = float("nan")
            v, text_ci = verdict(nan, nan, nan), "fewer than 2 paired programs"
        verdicts.append((completer, v))
        acc = acc_by(scores, completer, dimension, column)
        parts.append(f"{completer}: SemAcc {a} {x.mean():.1f} vs {b} {y.mean():.1f}; {text_ci} "
                     f"(Acc {acc.get(a, float('nan')):.1f} vs {acc.get(b, float('nan')):.1f})")
    return judged(claim_id, text, paper, " | ".join(parts), all_of(verdicts, **_ALL_OF)[0],
                  seeds=f"{min(n) if n else 0} programs (bootstrap)",
                  detail="judged on SemAcc (Acc is mostly the 0.25 syntax credit, which the trivial completer "
                         "earns on every type)")


def observations(scores: pd.DataFrame, learned: dict) -> list[Claim]:
    out = []
    null = scores[scores["completer"] == "null"]
    ver = null["verified"].dropna().astype(bool)
    default = null["verified_default"].dropna().astype(bool)
    out.append(observation(
        "null_verified", "Null completer (masked steps left out): share of tasks whose program still verifies",
        "many VCoT steps are redundant for Z3 (spec)",
        f"Verus options {100 * ver.mean():.1f} % of {len(ver)} tasks; Z3 defaults "
        f"{100 * default.mean():.1f} % of {len(default)}" if len(ver) else "not measured"))
    rows = []
    for completer in sorted(scores["completer"].unique()):
        t = acc_by(scores, completer, "type", "type")
        loc = acc_by(scores, completer, "loc", "loc")
        rows.append(f"{completer}: " + ", ".join(f"{k} {v:.1f}" for k, v in [*t.items(), *loc.items()]))
    out.append(observation("type_loc_acc", "Type and Loc Acc per completer (CIs in the report)",
                           f"invariant {PAPER['invariant']} / assertion {PAPER['assertion']}; front {PAPER['front']}"
                           f" / middle {PAPER['middle']} [S]", " | ".join(rows)))
    oracle = scores[scores["completer"] == "oracle"]
    trivial = scores[scores["completer"] == "trivial"]
    out.append(observation("judge_checks", "Pipeline checks: oracle Acc, trivial-block SemAcc",
                           "oracle 100; vacuous blocks never equivalent (our gates)",
                           f"oracle Acc {100 * oracle['acc'].mean():.1f}; trivial SemAcc "
                           f"{100 * trivial['sem'].mean():.1f} %, Acc {100 * trivial['acc'].mean():.1f}"))
    if learned.get("enabled") and "learned" in set(scores["completer"]):
        lr = scores[scores["completer"] == "learned"]
        by = acc_by(scores, "learned", "ratio", "bucket")
        measured = (f"Acc {100 * lr['acc'].mean():.1f} overall, SynAcc {100 * lr['syn'].mean():.1f}, "
                    f"SemAcc {100 * lr['sem'].mean():.1f}; Acc(10) {by.get(10, float('nan')):.1f} → "
                    f"Acc(100) {by.get(100, float('nan')):.1f}")
    else:
        measured = "disabled at this profile (gpu profile only; smoke runs it at toy size)"
    out.append(observation("learned_completer", "Learned completer (tiny transformer trained on other families)",
                           "not in the paper (spec §7.5, optional)", measured))
    return out


def per_hole(scores: pd.DataFrame, dimension: str, column: str) -> pd.DataFrame:
    """Why tasks fail, per completer and bucket / type / loc: task Acc and SemAcc, the
    per-hole equivalence rate (holes judged equivalent / holes), the share of tasks with an
    unfilled hole (SynAcc lost), and the task SemAcc that independent holes at the per-hole
    rate would give (mean over tasks of rate^holes) — fragility that the hole count alone
    explains."""
    rows = []
    mine = scores[scores["dimension"] == dimension]
    for (completer, value), g in mine.groupby(["completer", column]):
        rate = float(g["holes_equivalent"].sum() / max(1, g["n_holes"].sum()))
        rows.append({"completer": completer, column: value, "tasks": len(g), "Acc": 100 * g["acc"].mean(),
                     "SemAcc": 100 * g["sem"].mean(), "hole_SemAcc": 100 * rate,
                     "independent_SemAcc": 100 * float(np.mean(rate ** g["n_holes"].to_numpy(dtype=float))),
                     "unfilled_%": 100 * g["reason"].astype(str).str.contains("unfilled holes").mean()})
    return pd.DataFrame(rows)


def hole_observation(scores: pd.DataFrame) -> Claim:
    table = per_hole(scores, "ratio", "bucket")
    parts = []
    for completer in FRAGILE:
        g = table[table["completer"] == completer].set_index("bucket")
        if {10, 100} <= set(g.index):
            parts.append(f"{completer}: per-hole SemAcc {g.loc[10, 'hole_SemAcc']:.1f} (bucket 10) vs "
                         f"{g.loc[100, 'hole_SemAcc']:.1f} (100); tasks with an unfilled hole "
                         f"{g.loc[10, 'unfilled_%']:.0f} % vs {g.loc[100, 'unfilled_%']:.0f} %")
    return observation("per_hole_fragility", "Where Ratio fragility comes from: per-hole equivalence rate and "
                       "unfilled holes at 10 % vs 100 % removed (table in the report)",
                       "not in the paper", " | ".join(parts) if parts else "buckets 10 / 100 not both measured")


def timing_claims(lift_times: pd.DataFrame | None, score_times: pd.DataFrame | None) -> list[Claim]:
    """Wall-clock ratios (volatile, report-only)."""
    out = []
    if lift_times is not None and len(lift_times):
        ratio = lift_times["lift_seconds"].sum() / max(lift_times["verify_seconds"].sum(), 1e-9)
        measured = (f"{ratio:.1f}× plain verification ({lift_times['lift_seconds'].mean():.2f} s vs "
                    f"{lift_times['verify_seconds'].mean():.2f} s per program)")
    else:
        measured = "no timings recorded in this data directory"
    out.append(Claim("lift_cost", "Lifting cost per program relative to verifying it once", "—", measured, None,
                     kind=OBSERVATION, volatile=True))
    if score_times is not None and len(score_times):
        judge = score_times.groupby("completer")[["judge_seconds", "tasks"]].sum()
        per_task = (judge["judge_seconds"] / judge["tasks"]).mean()
        reverify = score_times.drop_duplicates("program_id")["reverify_seconds"].mean()
        measured = (f"{1 / per_task:.1f} tasks/s judged (SynAcc + SemAcc, Verified where asked) vs "
                    f"{1 / reverify:.1f} program re-verifications/s ({reverify / per_task:.1f}× faster)")
    else:
        measured = "no timings recorded in this data directory"
    out.append(Claim("judge_speed", "Judge throughput relative to re-verifying the whole program", "—", measured,
                     None, kind=OBSERVATION, volatile=True))
    return out


def all_claims(programs: pd.DataFrame, steps: pd.DataFrame, scores: pd.DataFrame, learned: dict, n_boot: int,
               seed: int, lift_times: pd.DataFrame | None = None, score_times: pd.DataFrame | None = None
               ) -> list[Claim]:
    claims = lift_claims(programs, steps, n_boot, seed)
    claims += [fragility_claim(scores, c, n_boot, seed) for c in FRAGILE]
    claims.append(difference_claim(
        scores, "assertion_harder_than_invariant", "Assertion blocks are harder than invariant blocks (Type): "
        "SemAcc(invariant) − SemAcc(assertion) > 0 by the paired CI over programs, for solver-guided and retrieval",
        f"invariant {PAPER['invariant']} vs assertion {PAPER['assertion']} [S]", "type", "type", "invariant",
        "assertion", n_boot, seed))
    claims.append(difference_claim(
        scores, "middle_harder_than_front", "Middle-of-chain gaps are harder than front gaps (Loc): "
        "SemAcc(front) − SemAcc(middle) > 0 by the paired CI over programs, for solver-guided and retrieval",
        f"front {PAPER['front']} vs middle {PAPER['middle']} [S]", "loc", "loc", "front", "middle", n_boot, seed))
    return claims + observations(scores, learned) + [hole_observation(scores)] + timing_claims(lift_times,
                                                                                               score_times)


CLAIM_IDS = ["proof_line_factor", "fragility_solver", "fragility_retrieval",
             "assertion_harder_than_invariant", "middle_harder_than_front"]
OBSERVATION_IDS = ["lift_fidelity", "null_verified", "type_loc_acc", "judge_checks", "learned_completer",
                   "per_hole_fragility", "lift_cost", "judge_speed"]
