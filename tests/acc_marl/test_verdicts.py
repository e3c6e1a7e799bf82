"""Every counted acc_marl claim judged by the one rule on constructed cells: a holds case, a refuted or
inconclusive case, and the trained-beats-random premise failing → inconclusive."""
from __future__ import annotations

import pandas as pd

from assets.acc_marl import benchmark as B
from assets.common.claims import HOLDS, INCONCLUSIVE, REFUTED

SEEDS = [0, 1, 2, 3]
LAYOUTS = ["buttons2", "rooms2"]
JIT = [0.0, 0.01, -0.01, 0.005]


def evals(pbrs=0.8, no_pbrs=0.5, gru=0.5, rnd=0.3, ood=0.6, rnd_ood=0.2, value=None, length=(40.0, 50.0),
          buttons_value=None) -> pd.DataFrame:
    rows = []

    def add(layout, variant, split, assignment, success, ln=50.0):
        for s, j in zip(SEEDS, JIT):
            rows.append({"layout": layout, "variant": variant, "seed": s, "sampler": "RAD", "split": split,
                         "assignment": assignment, "success": success + j, "length": ln + 10 * j})

    for name in LAYOUTS:
        add(name, "pbrs", "in", "random", pbrs, length[1])
        v = (buttons_value if name == "buttons2" and buttons_value is not None else
             (value if value is not None else pbrs + 0.005))
        add(name, "pbrs", "in", "value", v, length[0] if name == "rooms2" else length[1])
        add(name, "no_pbrs", "in", "random", no_pbrs)
        add(name, "gru", "in", "random", gru)
        add(name, "random", "in", "random", rnd)
        add(name, "pbrs", "ood", "random", ood)
        add(name, "random", "ood", "random", rnd_ood)
    return pd.DataFrame(rows)


def study(agree: int, n: int = 100) -> pd.DataFrame:
    return pd.DataFrame([{"layout": "rooms2", "seed": 0, "instance": i, "oracle_gap": 0.5, "value_choice": 0,
                          "oracle_choice": 0 if i < agree else 1} for i in range(n)])


def traces(success: float, held: float, n: int = 50) -> pd.DataFrame:
    rows = []
    for name in LAYOUTS:
        for s, j in zip(SEEDS, JIT):
            k = round((success + j) * n)
            for e in range(n):
                rows.append({"layout": name, "seed": s, "scenario": "hold_the_door", "success": e < k,
                             "helper_held": e < round(held * k)})
    return pd.DataFrame(rows)


def verdicts(ev, st=None, tr=None) -> dict[str, str]:
    out = B.claims(ev, study(90) if st is None else st, traces(0.8, 0.95) if tr is None else tr, None, LAYOUTS,
                   SEEDS)
    return {c.claim_id: c.verdict for c in out if c.kind == "claim"}


def test_all_claims_hold_on_a_trained_policy():
    assert set(verdicts(evals()).values()) == {HOLDS}


def test_untrained_policy_fails_the_premise_and_claims_1_to_4_are_inconclusive():
    v = verdicts(evals(pbrs=0.3, rnd=0.3, no_pbrs=0.0, gru=0.0))   # gaps would hold, the premise does not
    for cid in ("pbrs_beats_sparse", "progression_beats_gru", "value_assignment", "ood_graceful"):
        assert v[cid] == INCONCLUSIVE, cid
    c = next(c for c in B.claims(evals(pbrs=0.3, rnd=0.3), study(90), traces(0.8, 0.95), None, LAYOUTS, SEEDS)
             if c.claim_id == "pbrs_beats_sparse")
    assert "premise" in c.judgement.reason and "FAILED" in c.premise


def test_a_gap_claim_whose_arm_was_not_trained_is_not_evaluated():
    """The cpu profile trains ACC-MARL only: claims 1–2 are inconclusive (not evaluated, their
    premise 'both arms trained' failed), claims 3–5 are still judged."""
    ev = evals()
    ev = ev[~ev["variant"].isin(["no_pbrs", "gru"])]
    out = {c.claim_id: c for c in B.claims(ev, study(90), traces(0.8, 0.95), None, LAYOUTS, SEEDS)}
    for cid, arm in (("pbrs_beats_sparse", "no_pbrs"), ("progression_beats_gru", "gru")):
        assert out[cid].verdict == INCONCLUSIVE and arm in out[cid].measured_value, cid
    assert {out[c].verdict for c in ("value_assignment", "ood_graceful", "hold_the_door")} == {HOLDS}


def test_gap_claims_refuted_when_the_gap_is_small():
    v = verdicts(evals(no_pbrs=0.78, gru=0.79))
    assert v["pbrs_beats_sparse"] == REFUTED and v["progression_beats_gru"] == REFUTED


def test_value_assignment_is_one_claim_over_rooms_and_buttons():
    assert verdicts(evals(buttons_value=0.9))["value_assignment"] == REFUTED      # Buttons-2 not neutral
    assert verdicts(evals(), st=study(40))["value_assignment"] == REFUTED         # oracle agreement 0.4
    assert verdicts(evals(length=(50.0, 50.0)))["value_assignment"] == REFUTED   # no shorter episodes
    ids = [c.claim_id for c in B.claims(evals(), study(90), traces(0.8, 0.95), None, LAYOUTS, SEEDS)]
    assert "value_assignment" in ids and "assignment_buttons_neutral" not in ids


def test_ood_and_hold_the_door():
    assert verdicts(evals(ood=0.25, rnd_ood=0.2))["ood_graceful"] == REFUTED
    assert verdicts(evals(), tr=traces(0.1, 1.0))["hold_the_door"] == REFUTED
    one_seed = traces(0.8, 0.95)
    assert verdicts(evals(), tr=one_seed[one_seed["seed"] == 0])["hold_the_door"] == INCONCLUSIVE
