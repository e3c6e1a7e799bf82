"""Every counted skill_recompose claim judged from constructed measurements by the one verdict rule."""
import pandas as pd

from assets.skill_recompose import benchmark as bm

SEEDS = [0, 1, 2]
JITTER = (-0.01, 0.0, 0.015)
BASE = {"dnr": 0.8, "xicm": 0.3, "no_labels": 0.3, "dyn_only": 0.6, "icl_labelled": 0.5, "icl_raw": 0.2}


def _rollouts(**means):
    m = {**BASE, **means}
    rows = []
    for method, v in m.items():
        for i, s in enumerate(SEEDS):
            for level in (1, 2):
                # Level-2 success of dnr is 0.2 above dyn_only's unless overridden
                val = v + (JITTER[i] if method != "dnr" else -JITTER[i])
                rows.append({"method": method, "seed": s, "level": level, "task": f"t{level}", "success": val})
    return pd.DataFrame(rows)


def _contexts(full=0.97, dyn=0.3):
    rows = []
    for method, share in (("dnr", full), ("dyn_only", dyn)):
        for q in range(100):
            rows.append({"method": method, "level": 2, "coverage": 1.0 if q < share * 100 else 0.5,
                         "coverage_raw": 0.9})
    return pd.DataFrame(rows)


ACC = {"grip_acc": 1.0, "verb_acc": 0.93, "grip_acc_norules": 0.9, "verb_acc_norules": 0.9}
PLANS = pd.DataFrame({"mode": ["planner"] * 2, "level": [1, 2], "exact": [1.0, 0.8]})


def _claims(rollouts=None, contexts=None, accuracy=ACC):
    rows = bm.evaluate_claims(_rollouts() if rollouts is None else rollouts,
                              _contexts() if contexts is None else contexts, accuracy, PLANS, pd.DataFrame(),
                              SEEDS, 200)
    return {c.claim_id: c for c in rows}


def test_every_counted_claim_holds_on_good_measurements():
    c = _claims()
    for cid in ("dnr_beats_xicm", "labels_matter", "static_helps_level2", "icl_labels_help"):
        assert c[cid].kind == "claim" and c[cid].verdict == "holds", (cid, c[cid].detail)
    assert c["labeller_rules"].kind == "sanity" and not c["labeller_rules"].measured_value.startswith("VIOLATED")


def test_effects_below_the_margin_are_refuted_or_inconclusive():
    assert _claims(_rollouts(xicm=0.79))["dnr_beats_xicm"].verdict == "refuted"
    assert _claims(_rollouts(no_labels=0.82))["labels_matter"].verdict == "refuted"
    assert _claims(_rollouts(dyn_only=0.81))["static_helps_level2"].verdict == "refuted"
    assert _claims(_rollouts(icl_labelled=0.1))["icl_labels_help"].verdict == "refuted"
    # mean above the 5-point margin but within the seeds' spread: the interval decides neither
    noisy = _rollouts()
    noisy.loc[(noisy["method"] == "xicm") & (noisy["seed"] == 2), "success"] = 0.79
    assert _claims(noisy)["dnr_beats_xicm"].verdict == "inconclusive"


def test_coverage_premise_makes_claim_3_inconclusive():
    for ctx in (_contexts(full=0.8), _contexts(dyn=0.95)):
        c = _claims(contexts=ctx)["static_helps_level2"]
        assert c.verdict == "inconclusive" and "FAILED" in c.premise


def test_labeller_sanity_flags_a_broken_gate():
    c = _claims(accuracy={**ACC, "grip_acc": 0.95})["labeller_rules"]
    assert c.kind == "sanity" and c.measured_value.startswith("VIOLATED")
