"""fair_selective claims: measured tables → Claims — no Dagster import. Thresholds are module
constants (never per profile); comparisons between agents are paired CIs over seeds."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.claims import Claim, comparative_claim, observation, seeds_label

OMEGA = 0.05
RESIDUAL_TOL = 1e-9
STATIC_MIN_TRUE_GAP = 0.08          # the behaviour policy is unfair (S2)
IW_TOL = 0.02                       # |Δ_IW − Δ_true| (S2)
BOUND_RATE = 0.95                   # the bound holds in ≥ 95 % of batches (S3)
VIOLATION_RATE = 0.05               # ≤ 5 % of certified windows with |Δ_true| > ω
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


def claims(estimates: pd.DataFrame, checkpoints: pd.DataFrame, table: pd.DataFrame, rollouts: pd.DataFrame,
           static_seeds, rl_seeds, n_boot: int) -> list[Claim]:
    """Every claim and observation of the paper (see the issue)."""
    envs = sorted(table["env"].unique())
    tpr = estimates[estimates["measure"] == MAIN]
    out = []
    # decomposition ------------------------------------------------------------------------
    worst_static = float(estimates["residual"].max())
    worst_rl = float(checkpoints["max_residual"].max())
    out.append(Claim("decomposition", "Δ_true = Δ_imp + B (signed per-group biases) on every batch",
                     "identity (derived from the reference code)",
                     f"max residual {worst_static:.2g} over {len(estimates)} static batches (all measures), "
                     f"{worst_rl:.2g} over {int(checkpoints['iterations'].sum())} training batches",
                     bool(worst_static <= RESIDUAL_TOL and worst_rl <= RESIDUAL_TOL),
                     seeds=seeds_label(static_seeds)))
    # naive_fails --------------------------------------------------------------------------
    acc_zero = bool((tpr["delta_acc"] == 0).all())
    gaps = tpr.groupby(["env", "seed"])["delta_true"].apply(lambda v: float(np.abs(v).mean()))
    static_ok = acc_zero and bool((gaps >= STATIC_MIN_TRUE_GAP).all())
    parts, rl_ok = [], True
    for env in envs:
        naive, sellf = _vals(table, env, "naive_acc", "delta_true"), _vals(table, env, "sellf", "delta_true")
        need = np.maximum(NAIVE_MIN, 2 * sellf)
        ok = bool(len(naive) and len(naive) == len(sellf) and (naive >= need).all())
        rl_ok &= ok
        parts.append(f"{env}: naive-accepted |Δ| {', '.join(f'{v:.3f}' for v in naive)} vs need "
                     f"{', '.join(f'{v:.3f}' for v in need)} ({'every seed' if ok else 'not every seed'})")
    out.append(Claim("naive_fails", "naive solutions give no guarantee: Δ_accepted ≡ 0 (TPR) while the true "
                     "gap is large; the naive-accepted agent stays unfair",
                     f"static: Δ_acc = 0 and |Δ_true| ≥ {STATIC_MIN_TRUE_GAP}; RL: |Δ| ≥ max(ω+0.05, 2×SELLF) "
                     "on every seed",
                     f"static: Δ_acc = 0 on {'every' if acc_zero else 'not every'} TPR batch, per-seed |Δ_true| "
                     f"{gaps.min():.3f}–{gaps.max():.3f}; " + "; ".join(parts),
                     bool(static_ok and rl_ok),
                     seeds=f"static {seeds_label(static_seeds)}; RL {seeds_label(rl_seeds)}"))
    # certificate_valid --------------------------------------------------------------------
    iw_err = tpr.assign(err=(tpr["delta_imp_iw"] - tpr["delta_true"]).abs()).groupby("env")["err"].mean()
    unw_err = tpr.assign(err=(tpr["delta_imp_unweighted"] - tpr["delta_true"]).abs()).groupby("env")["err"].mean()
    floor = tpr.assign(err=(tpr["delta_imp_oracle_p"] - tpr["delta_true"]).abs()).groupby("env")["err"].mean()
    bound_rate = float(tpr["bound_holds"].mean())
    sellf_rows = rollouts[(rollouts["agent"] == "sellf") & rollouts["certified"].notna()] \
        if "certified" in rollouts else rollouts.iloc[:0]
    cert_rl = sellf_rows[sellf_rows["certified"].astype(bool)]
    n_cert = int(tpr["certified"].sum()) + len(cert_rl)
    n_viol = int(tpr["violated"].sum()) + int((cert_rl["delta_true"] > OMEGA).sum())
    viol_rate = n_viol / n_cert if n_cert else float("nan")
    ok = bool((iw_err <= IW_TOL).all() and bound_rate >= BOUND_RATE and n_cert > 0 and viol_rate <= VIOLATION_RATE)
    out.append(Claim("certificate_valid", "the IW estimate tracks Δ_true, the overlap bound holds, and certified "
                     "windows are fair",
                     f"|Δ_IW − Δ_true| ≤ {IW_TOL}; bound holds ≥ {BOUND_RATE:.0%} of batches; "
                     f"≤ {VIOLATION_RATE:.0%} of "
                     "certified windows have |Δ_true| > ω",
                     "mean |Δ_IW − Δ_true| " + ", ".join(f"{e}: {v:.4f}" for e, v in iw_err.items())
                     + " (unweighted: " + ", ".join(f"{e}: {v:.4f}" for e, v in unw_err.items())
                     + "; label-noise floor, imputing the true P(y|x): "
                     + ", ".join(f"{e}: {v:.4f}" for e, v in floor.items()) + f"); bound holds "
                     f"in {bound_rate:.1%} of {len(tpr)} TPR batches; certified windows {n_cert} "
                     f"({int(tpr['certified'].sum())} static + {len(cert_rl)} SELLF eval), violated {n_viol}",
                     ok, detail="" if n_cert else "no window was certified: the criterion cannot be established",
                     seeds=f"static {seeds_label(static_seeds)}; RL {seeds_label(rl_seeds)}"))
    # sellf_matches_oracle -----------------------------------------------------------------
    texts, holds = [], True
    for env in envs:
        s_d, o_d = _vals(table, env, "sellf", "delta_true"), _vals(table, env, "oracle", "delta_true")
        s_p, o_p = _vals(table, env, "sellf", "profit"), _vals(table, env, "oracle", "profit")
        c_gap = comparative_claim("x", "", "", s_d, o_d, expect="less", margin=ORACLE_GAP, seeds=rl_seeds)
        c_profit = comparative_claim("x", "", "", s_p, PROFIT_RATIO * o_p, expect="greater", margin=0.0, seeds=rl_seeds)
        mean_ok = bool(s_d.mean() <= SELLF_MAX_DELTA)
        lo, hi = bootstrap_ci(s_d, n_boot)
        holds &= mean_ok and c_gap.holds and c_profit.holds
        texts.append(f"{env}: SELLF |Δ| {s_d.mean():.3f} [90% boot {lo:.3f}, {hi:.3f}] "
                     f"({'≤' if mean_ok else '>'} {SELLF_MAX_DELTA}); − oracle: {c_gap.measured_value.split('; ')[1]}"
                     f" ({'ok' if c_gap.holds else 'not within'} {ORACLE_GAP}); profit SELLF {s_p.mean():.1f} vs "
                     f"0.85×oracle {PROFIT_RATIO * o_p.mean():.1f}: {c_profit.measured_value.split('; ')[1]}"
                     f" ({'ok' if c_profit.holds else 'not established'})")
    out.append(Claim("sellf_matches_oracle", "SELLF reaches comparable fairness and performance to the oracle agent",
                     f"both envs: SELLF |Δ| ≤ {SELLF_MAX_DELTA}; SELLF − oracle |Δ| < {ORACLE_GAP} and SELLF profit "
                     f"> {PROFIT_RATIO} × oracle's (paired 90% CIs over seeds)", "; ".join(texts), bool(holds),
                     seeds=seeds_label(rl_seeds)))
    # premise -------------------------------------------------------------------------------
    ppo = {env: _vals(table, env, "ppo", "delta_true") for env in envs}
    ok = all(len(v) and (v > PPO_MIN).all() for v in ppo.values())
    out.append(Claim("premise", "the environment produces unfairness: plain PPO is unfair",
                     f"PPO |Δ| > {PPO_MIN} on every seed",
                     "; ".join(f"{env}: {', '.join(f'{x:.3f}' for x in v)}" for env, v in ppo.items()), bool(ok),
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
    out.append(observation("calibration_form_certificate",
                           "certificate with err = f(x) − ȳ_acc(x) (per-state calibration error, label noise removed)",
                           "our ablation [I]", f"bound holds in {cal_rate:.1%} of TPR batches; {n_cal} certified "
                           f"batches, {v_cal} with |Δ_true| > ω; label-form mean bias bound "
                           f"{tpr['bias_bound'].mean():.3f} vs calibration form {tpr['bias_bound_cal'].mean():.3f} "
                           f"(ω/2 = {OMEGA / 2})", seeds=seeds_label(static_seeds)))
    return out
