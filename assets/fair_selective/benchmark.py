"""fair_selective claims: measured tables → Claims — no Dagster import. Thresholds are module
constants (never per profile); comparisons between agents are paired CIs over seeds."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.claims import (
    Claim,
    PairedCI,
    Premise,
    Verdict,
    all_of,
    comparative_claim,
    judged,
    mean_ci,
    observation,
    paired_ci,
    proportion_ci,
    sanity,
    seeds_label,
    verdict,
    verdict_of,
)

OMEGA = 0.05
RESIDUAL_TOL = 1e-9                 # the identity's float tolerance (a sanity row: S1 is algebra)
STATIC_MIN_TRUE_GAP = 0.08          # premise (S2): the behaviour policy is unfair, 90% CI lower bound over seeds
IW_TOL = 0.02                       # |Δ_IW − Δ_true| ≤ 0.02 (S2), 90% CI of the per-seed mean error
BOUND_RATE = 0.95                   # the bound holds in ≥ 95 % of batches (S3), Clopper–Pearson over batches
VIOLATION_RATE = 0.05               # ≤ 5 % of certified windows with |Δ_true| > ω, Clopper–Pearson
MIN_CERTIFIED = 1                   # premise: the violation rate needs at least one certified window
LEVEL = 0.90
SELLF_MAX_DELTA = OMEGA + 0.02      # R1 (i)
ORACLE_GAP = 0.03                   # R1 (ii)
PROFIT_RATIO = 0.85                 # R1 (iii)
NAIVE_MIN = OMEGA + 0.05            # R1 (iv): max(ω + 0.05, 2 × SELLF)
PPO_MIN = OMEGA + 0.05              # R1 (v)
MAIN = "tpr"


def per_seed(rollouts: pd.DataFrame, resource0: float) -> pd.DataFrame:
    """(env, agent, seed) → mean |Δ_true| and |Δ_obs| over the logged eval steps, mean profit
    (final resource − R0) over episodes, acceptance rate per group."""
    steps = rollouts.groupby(["env", "agent", "seed"]).agg(delta_true=("delta_true", "mean"),
                                                            delta_obs=("delta_obs", "mean"))
    final = rollouts[rollouts["done"]].groupby(["env", "agent", "seed"])["resource"].mean() - resource0
    rates = rollouts.groupby(["env", "agent", "seed", "group"])["action"].mean().unstack("group")
    rates.columns = [f"accept_g{c}" for c in rates.columns]
    return steps.join(final.rename("profit")).join(rates).reset_index()


def _vals(table: pd.DataFrame, env: str, agent: str, col: str) -> np.ndarray:
    rows = table[(table["env"] == env) & (table["agent"] == agent)].sort_values("seed")
    return rows[col].to_numpy(dtype=float)


def bootstrap_ci(values: np.ndarray, n_boot: int, seed: int = 0, level: float = 0.90) -> tuple[float, float]:
    """Percentile CI of the mean over seeds (shown, never judged)."""
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(n_boot, len(v)))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def _per_seed_mean(frame: pd.DataFrame, env: str, col: str) -> np.ndarray:
    return frame[frame["env"] == env].groupby("seed")[col].mean().sort_index().to_numpy(dtype=float)


def _static_gap_premise(tpr: pd.DataFrame) -> Premise:
    """S2's set-up condition: the static behaviour policies are unfair (per-seed mean |Δ_true|)."""
    texts, met = [], True
    for env in sorted(tpr["env"].unique()):
        ci = mean_ci(_per_seed_mean(tpr.assign(g=tpr["delta_true"].abs()), env, "g"), LEVEL, label="|Δ_true|")
        met &= bool(ci.low >= STATIC_MIN_TRUE_GAP)
        texts.append(f"{env} {ci.mean:.3f} [{ci.low:.3f}, {ci.high:.3f}]")
    return Premise(f"static behaviour policies unfair: per-seed mean |Δ_true| 90% CI lower bound ≥ "
                   f"{STATIC_MIN_TRUE_GAP} in each env", ", ".join(texts), met)


def _part(name: str, ci: PairedCI, **rule) -> tuple[str, Verdict, str]:
    return name, verdict_of(ci, **rule), f"{name}: {ci.text()}"


def claims(estimates: pd.DataFrame, checkpoints: pd.DataFrame, table: pd.DataFrame, rollouts: pd.DataFrame,
           static_seeds, rl_seeds, n_boot: int) -> list[Claim]:
    """Every claim and observation of the paper (see the issue). A claim on several envs or several
    criteria is their conjunction: refuted when one part's interval is refuted, holds when all hold."""
    envs = sorted(table["env"].unique())
    tpr = estimates[estimates["measure"] == MAIN]
    both = f"static {seeds_label(static_seeds)}; RL {seeds_label(rl_seeds)}"
    out = []
    gap_premise = _static_gap_premise(tpr)
    # decomposition: an algebraic identity (S1), enforced by the blocking gate → sanity ------------
    worst_static = float(estimates["residual"].max())
    worst_rl = float(checkpoints["max_residual"].max())
    out.append(sanity("decomposition", "Δ_true = Δ_imp + B (signed per-group biases) on every batch",
                      "identity (derived from the reference code)",
                      f"max residual {worst_static:.2g} over {len(estimates)} static batches (all measures), "
                      f"{worst_rl:.2g} over {int(checkpoints['iterations'].sum())} training batches",
                      ok=bool(worst_static <= RESIDUAL_TOL and worst_rl <= RESIDUAL_TOL),
                      detail="an algebraic identity (fairness.py), also the blocking gate identity_and_ranges",
                      seeds=seeds_label(static_seeds)))
    # naive_estimate_blind: the accepted-rows TPR is 1 in both groups by construction → sanity ------
    acc_zero = bool((tpr["delta_acc"] == 0).all())
    out.append(sanity("naive_estimate_blind", "the naive (accepted-rows) TPR estimate is identically 1 per group, "
                      "so Δ_acc ≡ 0", "Δ_acc = 0 exactly (TPR)",
                      f"Δ_acc = 0 on {'every' if acc_zero else 'not every'} one of {len(tpr)} TPR batches",
                      ok=acc_zero, seeds=seeds_label(static_seeds)))
    # naive_fails (R1 iv): naive-accepted |Δ| − max(ω + 0.05, 2 × SELLF) > 0, paired CI per env ------
    parts = []
    for env in envs:
        naive, sellf = _vals(table, env, "naive_acc", "delta_true"), _vals(table, env, "sellf", "delta_true")
        if not len(naive) or len(naive) != len(sellf):
            parts.append((env, verdict(np.nan, np.nan, np.nan), f"{env}: naive-accepted or SELLF not trained"))
            continue
        ci = paired_ci(naive, np.maximum(NAIVE_MIN, 2 * sellf), LEVEL)
        parts.append(_part(f"{env} naive-accepted |Δ| {naive.mean():.3f} − need", ci, rule="effect", margin=0.0))
    j, line = all_of(parts, [gap_premise], holding="first")
    text = "; ".join(t for _, _, t in parts)
    out.append(judged("naive_fails", "naive solutions give no guarantee: the naive-accepted agent stays unfair",
                      f"RL: naive-accepted |Δ| ≥ max(ω+0.05, 2×SELLF) in both envs (paired {LEVEL:.0%} CI of "
                      f"naive − need > 0); premise: the static gap ≥ {STATIC_MIN_TRUE_GAP}", text, j, detail=line,
                      seeds=both))
    # certificate_valid (S2, S3, certified windows) ------------------------------------------------
    parts = []
    err = tpr.assign(err=(tpr["delta_imp_iw"] - tpr["delta_true"]).abs())
    for env in sorted(tpr["env"].unique()):
        ci = mean_ci(_per_seed_mean(err, env, "err"), LEVEL, label="|Δ_IW − Δ_true|")
        parts.append(_part(f"{env} IW error", ci, rule="bound", margin=IW_TOL, direction="less"))
    unw_err = tpr.assign(err=(tpr["delta_imp_unweighted"] - tpr["delta_true"]).abs()).groupby("env")["err"].mean()
    floor = tpr.assign(err=(tpr["delta_imp_oracle_p"] - tpr["delta_true"]).abs()).groupby("env")["err"].mean()
    n_hold = int(tpr["bound_holds"].sum())
    parts.append(_part("bound holds", proportion_ci(n_hold, len(tpr), LEVEL), rule="bound", margin=BOUND_RATE))
    sellf_rows = rollouts[(rollouts["agent"] == "sellf") & rollouts["certified"].notna()] \
        if "certified" in rollouts else rollouts.iloc[:0]
    cert_rl = sellf_rows[sellf_rows["certified"].astype(bool)]
    n_cert = int(tpr["certified"].sum()) + len(cert_rl)
    n_viol = int(tpr["violated"].sum()) + int((cert_rl["delta_true"] > OMEGA).sum())
    enough = Premise(f"at least {MIN_CERTIFIED} certified window", f"{n_cert} certified", n_cert >= MIN_CERTIFIED)
    if n_cert >= MIN_CERTIFIED:
        ci = proportion_ci(n_viol, n_cert, LEVEL)
        parts.append(_part("violated share", ci, rule="bound", margin=VIOLATION_RATE, direction="less",
                           premises=enough))
    else:
        parts.append(("violated share", verdict(np.nan, np.nan, np.nan, premises=enough),
                      "violated share: no window certified"))
    j, line = all_of(parts, [gap_premise], holding="first")
    text = "; ".join(t for _, _, t in parts)
    out.append(judged("certificate_valid", "the IW estimate tracks Δ_true, the overlap bound holds, and certified "
                      "windows are fair",
                      f"|Δ_IW − Δ_true| ≤ {IW_TOL}; bound holds ≥ {BOUND_RATE:.0%} of batches; ≤ "
                      f"{VIOLATION_RATE:.0%} of certified windows have |Δ_true| > ω ({LEVEL:.0%} CIs)",
                      text + " (unweighted error: " + ", ".join(f"{e}: {v:.4f}" for e, v in unw_err.items())
                      + "; label-noise floor, imputing the true P(y|x): "
                      + ", ".join(f"{e}: {v:.4f}" for e, v in floor.items()) + f"); certified windows {n_cert} "
                      f"({int(tpr['certified'].sum())} static + {len(cert_rl)} SELLF eval), violated {n_viol}",
                      j, detail=line, seeds=both))
    # sellf_matches_oracle (R1 i–iii) ---------------------------------------------------------------
    parts = []
    for env in envs:
        s_d, o_d = _vals(table, env, "sellf", "delta_true"), _vals(table, env, "oracle", "delta_true")
        s_p, o_p = _vals(table, env, "sellf", "profit"), _vals(table, env, "oracle", "profit")
        parts.append(_part(f"{env} SELLF |Δ|", mean_ci(s_d, LEVEL, label="|Δ|"), rule="bound",
                           margin=SELLF_MAX_DELTA, direction="less"))
        parts.append(_part(f"{env} SELLF − oracle |Δ|", paired_ci(s_d, o_d, LEVEL), rule="no_worse",
                           margin=ORACLE_GAP, direction="less"))
        name = f"{env} profit SELLF {s_p.mean():.1f} − {PROFIT_RATIO}×oracle {PROFIT_RATIO * o_p.mean():.1f}"
        parts.append(_part(name, paired_ci(s_p, PROFIT_RATIO * o_p, LEVEL), rule="no_worse", margin=0.0))
    j, line = all_of(parts, holding="first")
    text = "; ".join(t for _, _, t in parts)
    out.append(judged("sellf_matches_oracle", "SELLF reaches comparable fairness and performance to the oracle agent",
                      f"both envs: SELLF |Δ| ≤ {SELLF_MAX_DELTA}; SELLF − oracle |Δ| < {ORACLE_GAP} and SELLF profit "
                      f"> {PROFIT_RATIO} × oracle's ({LEVEL:.0%} CIs over seeds)", text, j, detail=line,
                      seeds=seeds_label(rl_seeds)))
    # premise (R1 v): plain PPO is unfair -------------------------------------------------------------
    parts = [_part(f"{env} PPO |Δ|", mean_ci(_vals(table, env, "ppo", "delta_true"), LEVEL, label="|Δ|"),
                   rule="bound", margin=PPO_MIN) for env in envs]
    j, line = all_of(parts, holding="first")
    text = "; ".join(t for _, _, t in parts)
    out.append(judged("premise", "the environment produces unfairness: plain PPO is unfair",
                      f"PPO |Δ| > {PPO_MIN} in both envs ({LEVEL:.0%} CI over seeds)", text, j, detail=line,
                      seeds=seeds_label(rl_seeds)))
    # observations ----------------------------------------------------------------------------
    rows = []
    for env in envs:
        n_d, s_d = _vals(table, env, "naive_imp", "delta_true"), _vals(table, env, "sellf", "delta_true")
        if len(n_d) and len(n_d) == len(s_d):
            c = comparative_claim("x", "", "", n_d, s_d, expect="greater", seeds=rl_seeds)
            rows.append(f"{env}: naive-imputation |Δ| {n_d.mean():.3f} vs SELLF {s_d.mean():.3f}; "
                        f"{c.measured_value.split('; ')[1]}")
    out.append(observation("naive_imputation_vs_sellf", "dropping the weights, the Rényi term and ω/2 costs fairness",
                           "ablation [S]", "; ".join(rows) or "not trained", seeds=seeds_label(rl_seeds)))
    cal_rate = float(tpr["bound_cal_holds"].mean())
    n_cal = int(tpr["certified_cal"].sum())
    v_cal = int(tpr["violated_cal"].sum())
    small_imp = float((tpr["delta_imp_iw"].abs() <= OMEGA / 2).mean())
    factors = ", ".join(f"g{k}: D̂₂ {tpr[f'd2_{k}'].mean():.2f}, k {tpr[f'k_{k}'].mean():.2f}"
                        for k in (0, 1) if f"d2_{k}" in tpr and f"k_{k}" in tpr)
    out.append(observation("calibration_form_certificate",
                           "certificate with err = f(x) − ȳ_acc(x) (per-state calibration error, label noise removed)",
                           "our ablation [I]", f"bound holds in {cal_rate:.1%} of TPR batches; {n_cal} certified "
                           f"batches, {v_cal} with |Δ_true| > ω; label-form mean bias bound "
                           f"{tpr['bias_bound'].mean():.3f} vs calibration form {tpr['bias_bound_cal'].mean():.3f} "
                           f"(ω/2 = {OMEGA / 2}); mean factors of the bound Σ_g k_g·√(D̂₂·Ê[err²]): {factors}; "
                           f"|Δ_imp| ≤ ω/2 in {small_imp:.1%} of the batches", seeds=seeds_label(static_seeds)))
    return out
