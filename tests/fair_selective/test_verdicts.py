"""Every counted fair_selective claim judged from constructed measurements by the one verdict rule."""
import numpy as np
import pandas as pd

from assets.fair_selective import benchmark as bm

STATIC, RL = [0, 1, 2, 3, 4], [0, 1, 2]
JITTER = np.array([-0.01, 0.0, 0.01])


def _estimates(gap=0.2, iw_err=0.005, holds=True, certified=False):
    rows = []
    for env in ("hiring", "lending"):
        for s in STATIC:
            for b in range(20):
                t = gap + 0.01 * ((s + b) % 3)
                rows.append({"env": env, "seed": s, "batch": b, "measure": "tpr", "residual": 1e-17, "delta_acc": 0.0,
                             "delta_true": t, "delta_imp_iw": t + iw_err * (1 + 0.1 * (s % 2)),
                             "delta_imp_unweighted": t + 0.1, "delta_imp_oracle_p": t + 0.01,
                             "bound_holds": holds, "certified": certified, "violated": False,
                             "bound_cal_holds": True, "certified_cal": False, "violated_cal": False,
                             "bias_bound": 3.0, "bias_bound_cal": 1.0, "d2_0": 5.0, "d2_1": 6.0, "k_0": 0.5,
                             "k_1": 0.4})
    return pd.DataFrame(rows)


def _table(ppo=0.3, naive=0.35, sellf=0.03, oracle=0.04, sellf_profit=150.0, oracle_profit=160.0, ppo_jitter=1.0):
    rows = []
    for env in ("hiring", "lending"):
        for i, s in enumerate(RL):
            j = JITTER[i]
            for agent, d, p in (("ppo", ppo + ppo_jitter * j, 200.0), ("naive_acc", naive + j, 190.0),
                                ("sellf", sellf + j / 5, sellf_profit + 10 * j), ("oracle", oracle - j / 5,
                                                                                 oracle_profit - 5 * j),
                                ("naive_imp", 0.08 + j, 170.0)):
                rows.append({"env": env, "agent": agent, "seed": s, "delta_true": d, "delta_obs": 0.0, "profit": p})
    return pd.DataFrame(rows)


def _rollouts(n_cert=100, violated=0):
    d = [0.2] * violated + [0.01] * (n_cert - violated)
    return pd.DataFrame({"agent": ["sellf"] * n_cert, "certified": [True] * n_cert, "delta_true": d})


def _claims(est=None, table=None, rollouts=None, residual=1e-16):
    ckpt = pd.DataFrame({"max_residual": [residual], "iterations": [49]})
    rows = bm.claims(_estimates() if est is None else est, ckpt, _table() if table is None else table,
                     _rollouts() if rollouts is None else rollouts, STATIC, RL, 200)
    return {c.claim_id: c for c in rows}


def test_all_claims_hold_on_good_measurements():
    c = _claims()
    for cid in ("naive_fails", "certificate_valid", "sellf_matches_oracle", "premise"):
        assert c[cid].kind == "claim" and c[cid].verdict == "holds", (cid, c[cid].detail)
    assert c["decomposition"].kind == "sanity" and c["naive_estimate_blind"].kind == "sanity"


def test_sanity_rows_flag_a_broken_construction():
    c = _claims(residual=1e-3)
    assert c["decomposition"].measured_value.startswith("VIOLATED")


def test_naive_fails_refuted_and_premise():
    assert _claims(table=_table(naive=0.05))["naive_fails"].verdict == "refuted"
    small_gap = _claims(est=_estimates(gap=0.02))
    assert small_gap["naive_fails"].verdict == "inconclusive" and "FAILED" in small_gap["naive_fails"].premise
    assert small_gap["certificate_valid"].verdict == "inconclusive"


def test_certificate_refuted_or_inconclusive():
    assert _claims(est=_estimates(iw_err=0.05))["certificate_valid"].verdict == "refuted"
    none = _claims(rollouts=_rollouts(n_cert=0).iloc[:0])["certificate_valid"]
    assert none.verdict == "inconclusive" and "certified window" in none.premise
    assert _claims(rollouts=_rollouts(100, 40))["certificate_valid"].verdict == "refuted"
    assert _claims(est=_estimates(holds=False))["certificate_valid"].verdict == "refuted"


def test_sellf_matches_oracle_refuted_on_profit_and_gap():
    assert _claims(table=_table(sellf_profit=50.0))["sellf_matches_oracle"].verdict == "refuted"
    assert _claims(table=_table(sellf=0.2))["sellf_matches_oracle"].verdict == "refuted"


def test_premise_claim_needs_the_interval():
    assert _claims(table=_table(ppo=0.02))["premise"].verdict == "refuted"
    # mean 0.2 > 0.10 but seeds spread too far apart: the interval decides neither
    assert _claims(table=_table(ppo=0.2, ppo_jitter=15.0))["premise"].verdict == "inconclusive"
