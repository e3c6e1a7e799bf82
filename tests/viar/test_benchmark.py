"""Claim logic on hand-made result frames (known answers)."""
from __future__ import annotations

import pandas as pd
import pytest

from assets.viar import benchmark

SCHEDULES = {"one": "con1", "mid": "con4", "full": "con8", "dec": "dec8-2"}
# (FCD, FLOPs/image) per VIAR schedule; VAR ladder: d2 (15, 14.0), d4 (28, 12.0), d6 (41, 11.0), d8 (54, 10.0)
GOOD_VIAR = {"con1": (11.9, 20), "con4": (10.0, 50), "con8": (9.8, 90), "dec8-2": (10.5, 40)}


def _quality(fcd_by, acc=0.95, seeds=(0, 1, 2)):
    rows = []
    for (model, schedule, flops), fcd in fcd_by.items():
        for s in seeds:
            rows.append({"dataset": "digits", "model": model, "kind": "var" if model.startswith("VAR") else "viar",
                         "depth": 0, "schedule": schedule, "seed": s, "flops_per_image": flops, "fcd": fcd,
                         "sfcd": 0.1, "kid": 0.0, "class_consistency": acc, "precision": 0.9, "recall": 0.6})
    return pd.DataFrame(rows)


def _frames(var_fcd=10.0, viar=None, n_bytes=(100, 100, 100), tp=(10.0, 20.0)):
    viar = viar or GOOD_VIAR
    fcd_by = {("VAR-d2", "explicit", 15): 14.0, ("VAR-d4", "explicit", 28): 12.0,
              ("VAR-d6", "explicit", 41): 11.0, ("VAR-d8", "explicit", 54): var_fcd}
    fcd_by.update({("VIAR-p1", s, f): v for s, (v, f) in viar.items()})
    quality = _quality(fcd_by)
    throughput = pd.DataFrame([
        {"dataset": "digits", "model": "VIAR-p1", "schedule": "con8", "images_per_second": tp[0]},
        {"dataset": "digits", "model": "VIAR-p1", "schedule": "dec8-2", "images_per_second": tp[1]}])
    memory = pd.DataFrame(
        [{"dataset": "digits", "sweep": "var_depth", "value": d, "saved_bytes": 1000 * d + 7} for d in (2, 4, 6, 8)]
        + [{"dataset": "digits", "sweep": "viar_nograd_iters", "value": n, "saved_bytes": b}
           for n, b in zip((0, 2, 4), n_bytes)]
        + [{"dataset": "digits", "sweep": "viar_grad_iters", "value": m, "saved_bytes": 100 + 40 * m}
           for m in (1, 2, 3)])
    conv = pd.DataFrame([{"dataset": "digits", "seed": s, "source": "sampling", "scale": k, "t": t,
                          "rel_residual": 0.5 ** (t + 1) * (1 + 0.1 * s), "cosine": 1 - 0.5 ** (t + 3)}
                         for s in (0, 1, 2) for k in range(4) for t in range(8)])
    return quality, throughput, memory, conv


def _claims(**kw):
    q, tp, mem, conv = _frames(**kw)
    params = {"viar": 40, "var": {8: 100}}
    return {c.claim_id: c for c in benchmark.evaluate_claims("digits", q, tp, mem, conv, params, floor=2.0,
                                                              claim_depth=8, viar_name="VIAR-p1", ladder=[2, 4, 6, 8],
                                                              schedules=SCHEDULES)}


def test_linear_r2_known_answers():
    slope, r2 = benchmark.linear_r2([1, 2, 3, 4], [3, 5, 7, 9])
    assert slope == pytest.approx(2.0) and r2 == pytest.approx(1.0)
    assert benchmark.linear_r2([1, 2, 3, 4], [1, 3, 1, 3])[1] < 0.5


def reads(c) -> bool:
    """A counted claim holds; a sanity row is not violated; a pending row's point criterion held."""
    if c.kind == "claim":
        return c.holds
    if c.kind == "sanity":
        return not c.measured_value.startswith("VIOLATED")
    return benchmark.point_reading(c)


def test_quality_parity_is_judged_by_per_seed_cis():
    claims = _claims()
    assert claims["v2_quality_parity"].kind == "claim" and claims["v2_quality_parity"].verdict == "holds"
    assert claims["v3_knob_works"].kind == "claim"
    assert {c.kind for k, c in claims.items() if k not in ("v2_quality_parity", "v3_knob_works")} <= {
        "sanity", "observation"}
    bad = _claims(viar={"con1": (30.0, 20), "con4": (15.0, 50), "con8": (14.6, 90), "dec8-2": (15.0, 45)})
    assert bad["v2_quality_parity"].verdict == "refuted"


def test_claims_hold_on_a_good_run():
    claims = _claims()
    assert all(reads(c) for c in claims.values()), {k: c.measured_value for k, c in claims.items()}
    assert "40.0%" in claims["v1_params"].measured_value


def test_quality_parity_fails_beyond_the_bound():
    # bound = 1.25 · 10 + 2 = 14.5
    claims = _claims(viar={"con1": (30.0, 20), "con4": (15.0, 50), "con8": (14.6, 90), "dec8-2": (15.0, 45)})
    assert not reads(claims["v2_quality_parity"])
    assert reads(claims["v3_knob_works"])


def test_memory_claim_fails_when_no_grad_iterations_cost_memory():
    assert not reads(_claims(n_bytes=(100, 110, 120))["v4_constant_memory"])
    assert reads(_claims(n_bytes=(100, 101, 100))["v4_constant_memory"])     # within 2%


def test_compute_control_needs_speed_and_quality():
    assert not reads(_claims(tp=(10.0, 12.0))["v5_compute_control"])          # 1.2× only
    worse = {**GOOD_VIAR, "dec8-2": (11.4, 40)}                               # +16% over con8
    assert not reads(_claims(viar=worse)["v5_compute_control"])               # +19% FCD


def test_pareto_uses_only_affordable_viar_points():
    q, *_ = _frames()
    table = benchmark.pareto_domination(q, "VIAR-p1", ["VAR-d2", "VAR-d4", "VAR-d6", "VAR-d8"]).set_index("var_model")
    assert table["dominated"].to_dict() == {"VAR-d2": False, "VAR-d4": True, "VAR-d6": True, "VAR-d8": True}
    assert table["viar_schedule"].to_dict() == {"VAR-d2": "none affordable", "VAR-d4": "con1",
                                                 "VAR-d6": "dec8-2", "VAR-d8": "con4"}
    assert reads(_claims()["v6_pareto"])
    assert not reads(_claims(viar={**GOOD_VIAR, "con1": (12.5, 20)})["v6_pareto"])      # d4 lost: 2 of 4


def test_throughput_claim_is_a_wall_clock_record_and_the_others_are_not():
    claims = _claims()
    assert list(claims) == list(benchmark.CLAIM_IDS)
    assert [c for c, claim in claims.items() if claim.volatile] == ["v5_compute_control"]


def test_pareto_is_not_evaluated_without_a_depth_ladder():
    """At a profile that trains only VAR-d<claim_depth> (cpu), V6 has nothing to compare: the row
    says so instead of reading one point as a 'curve' (and the other claims are unchanged)."""
    q, tp, mem, conv = _frames()
    params = {"viar": 40, "var": {8: 100}}
    claims = {c.claim_id: c for c in benchmark.evaluate_claims("digits", q, tp, mem, conv, params, floor=2.0,
                                                                claim_depth=8, viar_name="VIAR-p1", ladder=[8],
                                                                schedules=SCHEDULES)}
    v6 = claims["v6_pareto"]
    assert v6.kind == "observation" and v6.measured_value.startswith("not evaluated: no VAR depth ladder")
    assert not benchmark.point_reading(v6)
    assert claims["v2_quality_parity"].verdict == _claims()["v2_quality_parity"].verdict


def _v3(per_seed_fcd, residual=0.01):
    """v3 on per-seed FCDs {schedule: (seed0, seed1, seed2)}; other schedules from GOOD_VIAR."""
    q, tp, mem, conv = _frames()
    for schedule, values in per_seed_fcd.items():
        for seed, v in enumerate(values):
            q.loc[(q["model"] == "VIAR-p1") & (q["schedule"] == schedule) & (q["seed"] == seed), "fcd"] = v
    conv["rel_residual"] = residual
    conv["cosine"] = 0.5                       # only the residual can meet the convergence part
    params = {"viar": 40, "var": {8: 100}}
    claims = benchmark.evaluate_claims("digits", q, tp, mem, conv, params, floor=2.0, claim_depth=8,
                                       viar_name="VIAR-p1", ladder=[2, 4, 6, 8], schedules=SCHEDULES)
    return next(c for c in claims if c.claim_id == "v3_knob_works")


def test_knob_claim_is_judged_by_per_seed_cis_of_each_part():
    good = {"con1": (12.0, 12.5, 11.5), "con4": (10.0, 10.2, 9.8), "con8": (9.8, 10.1, 9.6)}
    assert _v3(good).verdict == "holds"
    # con1 better than con4 on every seed: the knob does not work
    assert _v3({**good, "con1": (9.0, 9.1, 8.9)}).verdict == "refuted"
    # con1 − con4 = +2, −1.7, +1.7: the sign is not established
    assert _v3({**good, "con1": (12.0, 8.5, 11.5)}).verdict == "inconclusive"
    # con4 more than the floor (2) below con8 on every seed: more iterations made it worse
    assert _v3({**good, "con1": (9.0, 9.5, 8.5), "con4": (7.0, 7.2, 6.8)}).verdict == "refuted"
    # not converged: the residual at t = 5 is 0.2 on every seed (and the cosine 0.5)
    assert _v3(good, residual=0.2).verdict == "refuted"
    assert "decided by converged" in _v3(good, residual=0.2).detail
