"""acc_marl claims: measured tables → Claims — no Dagster import. Thresholds are module
constants (never per profile); "every seed" claims are checked seed by seed, the assignment
claim by a paired CI over seeds."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.claims import OBSERVATION, Claim, comparative_claim, observation, paired_ci, seeds_label

PBRS_GAP = 0.10             # claim 1: PBRS − no-PBRS success, every seed, both layouts
GRU_GAP = 0.10              # claim 2: progression − GRU success
ASSIGN_MARGIN = -0.02       # claim 3: paired 90 % CI of Δsuccess (value − random) above this (Rooms-2)
ASSIGN_LENGTH = -3.0        # claim 3: mean Δlength ≤ this (Rooms-2)
ORACLE_AGREEMENT = 0.7      # claim 3: value-argmax = MC-oracle argmax where the oracle gap > 0.1
NEUTRAL = 0.03              # claim 3: |Δsuccess| ≤ this on Buttons-2
OOD_OVER_RANDOM = 0.10      # claim 4: OOD success ≥ random policy + this
HOLD_SUCCESS = 0.5          # claim 5
HOLD_EVENT = 0.8            # claim 5: helper on the button as the partner crosses, share of successes
MAIN = ("RAD", "in", "random")      # the cell of claims 1–2 (RAD sampler, in-distribution, random assignment)


def cell_table(evals: pd.DataFrame) -> pd.DataFrame:
    """Success rate and mean length per layout × variant × seed × sampler × split × assignment."""
    keys = ["layout", "variant", "seed", "sampler", "split", "assignment"]
    return evals.groupby(keys).agg(success=("success", "mean"), length=("length", "mean"),
                                   episodes=("success", "size")).reset_index()


def _cell(cells: pd.DataFrame, layout: str, variant: str, sampler: str, split: str, assignment: str,
          metric: str = "success") -> pd.Series:
    sel = cells[(cells["layout"] == layout) & (cells["variant"] == variant) & (cells["sampler"] == sampler)
                & (cells["split"] == split) & (cells["assignment"] == assignment)]
    return sel.set_index("seed")[metric].sort_index()


def every_seed_claim(cid: str, text: str, paper: str, cells: pd.DataFrame, layouts, treat: str, control: str,
                     gap: float, seeds) -> Claim:
    parts, ok = [], True
    for name in layouts:
        a, b = _cell(cells, name, treat, *MAIN), _cell(cells, name, control, *MAIN)
        d = (a - b).reindex(list(seeds))
        ok &= bool(d.notna().all() and (d >= gap).all())
        ci = paired_ci(a.to_numpy(), b.to_numpy()) if len(a) == len(b) and len(a) else None
        per = ", ".join(f"{v:+.3f}" for v in d.to_numpy())
        parts.append(f"{name}: {treat} {a.mean():.3f} vs {control} {b.mean():.3f}, per seed Δ [{per}]"
                     + (f"; {ci.text()}" if ci else ""))
    return Claim(cid, text, paper, "; ".join(parts), ok, detail=f"criterion: Δ ≥ {gap} on every seed and layout "
                 "(RAD sampler, in-distribution, random assignment).", seeds=seeds_label(seeds))


def claims(evals: pd.DataFrame, study: pd.DataFrame, traces: pd.DataFrame, perf: pd.DataFrame | None,
           layouts, seeds) -> list[Claim]:
    cells = cell_table(evals)
    seeds = list(seeds)
    out = [
        every_seed_claim("pbrs_beats_sparse", "Per-agent PBRS beats the sparse team reward by ≥ 0.10 success "
                         "on both layouts, every seed.", "+0.27–0.37 at 10 M steps (+0.12–0.14 at 2 M)", cells,
                         layouts, "pbrs", "no_pbrs", PBRS_GAP, seeds),
        every_seed_claim("progression_beats_gru", "Conditioning on the progressed DFA beats a GRU(128) on the "
                         "initial DFA by ≥ 0.10 success on both layouts, every seed.", "+0.33–0.47", cells,
                         layouts, "pbrs", "gru", GRU_GAP, seeds),
        assignment_rooms(cells, study, seeds),
        assignment_buttons(cells, seeds),
        ood_graceful(cells, layouts, seeds),
        hold_the_door(traces, layouts, seeds),
    ]
    out += observations(cells, traces, perf, layouts, seeds)
    return out


def assignment_rooms(cells: pd.DataFrame, study: pd.DataFrame, seeds) -> Claim:
    name = "rooms2"
    text = ("Rooms-2: value-based assignment is no worse than random (paired 90 % CI of Δsuccess > −0.02), "
            "shortens episodes by ≥ 3 steps, and agrees with a Monte-Carlo oracle ≥ 70 % where its gap > 0.1.")
    paper = "success 0.870 → 0.914, length 52 → 35"
    val, rnd = _cell(cells, name, "pbrs", "RAD", "in", "value"), _cell(cells, name, "pbrs", "RAD", "in", "random")
    if not len(val) or len(val) != len(rnd):
        return Claim("assignment_rooms", text, paper, "no Rooms-2 value/random cells", False, seeds=seeds_label(seeds))
    base = comparative_claim("assignment_rooms", text, paper, val.to_numpy(), rnd.to_numpy(), expect="greater",
                             margin=ASSIGN_MARGIN, seeds=seeds, names=("value", "random"))
    dlen = float((_cell(cells, name, "pbrs", "RAD", "in", "value", "length")
                  - _cell(cells, name, "pbrs", "RAD", "in", "random", "length")).mean())
    agree, n_gap = oracle_agreement(study, name)
    ok = bool(base.holds and dlen <= ASSIGN_LENGTH and n_gap > 0 and agree >= ORACLE_AGREEMENT)
    measured = (f"{base.measured_value}; Δlength {dlen:+.1f} steps; oracle agreement "
                + (f"{agree:.2f} on {n_gap} instances with gap > 0.1" if n_gap else "n/a (no instance with gap > 0.1)"))
    return Claim("assignment_rooms", text, paper, measured, ok,
                 detail=f"{base.detail} Δlength ≤ {ASSIGN_LENGTH}; agreement ≥ {ORACLE_AGREEMENT}.",
                 seeds=seeds_label(seeds))


def oracle_agreement(study: pd.DataFrame, layout: str, gap: float = 0.1) -> tuple[float, int]:
    inst = study[(study["layout"] == layout)].drop_duplicates(["seed", "instance"])
    inst = inst[inst["oracle_gap"] > gap]
    if not len(inst):
        return float("nan"), 0
    return float((inst["value_choice"] == inst["oracle_choice"]).mean()), len(inst)


def assignment_buttons(cells: pd.DataFrame, seeds) -> Claim:
    name = "buttons2"
    val, rnd = _cell(cells, name, "pbrs", "RAD", "in", "value"), _cell(cells, name, "pbrs", "RAD", "in", "random")
    d = float((val - rnd).mean()) if len(val) else float("nan")
    return Claim("assignment_buttons_neutral", "Buttons-2: value-based assignment is neutral, |Δsuccess| ≤ 0.03.",
                 "0.859 → 0.864 (≈ 0)", f"value {val.mean():.3f} vs random {rnd.mean():.3f}, Δ {d:+.3f}",
                 bool(np.isfinite(d) and abs(d) <= NEUTRAL), detail=f"criterion: |mean Δ| ≤ {NEUTRAL} over seeds.",
                 seeds=seeds_label(seeds))


def ood_graceful(cells: pd.DataFrame, layouts, seeds) -> Claim:
    parts, ok = [], True
    for name in layouts:
        ind = _cell(cells, name, "pbrs", "RAD", "in", "random").mean()
        ood = _cell(cells, name, "pbrs", "RAD", "ood", "random").mean()
        rnd = _cell(cells, name, "random", "RAD", "ood", "random").mean()
        ok &= bool(ood < ind and ood >= rnd + OOD_OVER_RANDOM)
        parts.append(f"{name}: OOD {ood:.3f} vs in-dist {ind:.3f}, random policy OOD {rnd:.3f}")
    return Claim("ood_graceful", "OOD success (larger DFAs, longer episodes) is below in-distribution and ≥ the "
                 "random policy + 0.10, on both layouts.", "Rooms-2 0.870 → 0.699 OOD; Buttons-2 0.859 → 0.601",
                 "; ".join(parts), ok, detail="RAD sampler, random assignment, mean over seeds.",
                 seeds=seeds_label(seeds))


def hold_the_door(traces: pd.DataFrame, layouts, seeds) -> Claim:
    parts, ok = [], True
    for name in layouts:
        t = traces[(traces["layout"] == name) & (traces["scenario"] == "hold_the_door")]
        succ = float(t["success"].mean())
        wins = t[t["success"]]
        held = float(wins["helper_held"].mean()) if len(wins) else float("nan")
        ok &= bool(succ >= HOLD_SUCCESS and np.isfinite(held) and held >= HOLD_EVENT)
        parts.append(f"{name}: success {succ:.2f}; helper on the button as the partner crosses in "
                     + (f"{held:.0%} of {len(wins)} successes" if len(wins) else "— (no success)"))
    return Claim("hold_the_door", "Hold-the-door (agent 0's token behind a door, agent 1 trivial): success ≥ 0.5, "
                 "with the helper on the button as the partner crosses in ≥ 80 % of successes.",
                 "shown qualitatively (GIF traces)", "; ".join(parts), ok,
                 detail="events detected from the recorded positions; pooled over seeds.", seeds=seeds_label(seeds))


def observations(cells, traces, perf, layouts, seeds) -> list[Claim]:
    rows = []
    for name in layouts:
        for sampler in sorted(cells["sampler"].unique()):
            for split in ("in", "ood"):
                r = _cell(cells, name, "pbrs", sampler, split, "random").mean()
                v = _cell(cells, name, "pbrs", sampler, split, "value").mean()
                rows.append(f"{name} {sampler}/{split}: {r:.2f} → {v:.2f}")
    out = [observation("success_by_sampler", "ACC-MARL success per sampler, random → value assignment.",
                       "see the paper table (RAD rows)", "; ".join(rows), seeds=seeds_label(seeds))]
    parts = []
    for scen in ("helper", "short_circuit"):
        for name in layouts:
            t = traces[(traces["layout"] == name) & (traces["scenario"] == scen)]
            if not len(t):
                continue
            wins = t[t["success"]]
            if scen == "helper":
                both = float((wins["helper_held"] & wins["partner_held"]).mean()) if len(wins) else float("nan")
                parts.append(f"helper {name}: success {t['success'].mean():.2f}, each held the door for the other "
                             f"in {both:.0%} of successes")
            else:
                short = float((~wins["mover_crossed"]).mean()) if len(wins) else float("nan")
                parts.append(f"short-circuit {name}: success {t['success'].mean():.2f}, accepted without crossing "
                             f"(own-room token) in {short:.0%} of successes")
    out.append(observation("coordination_events", "Helper and short-circuit scenarios (events from traces).",
                           "qualitative GIFs", "; ".join(parts), seeds=seeds_label(seeds)))
    if perf is not None and len(perf):
        m = dict(zip(perf["metric"], perf["value"]))
        out.append(Claim("progression_speed", "Table progression vs a per-env loop minimising on the fly (same "
                         "trajectories); value-assignment time.", "— (engineering)",
                         f"{m['env_steps_per_s_table']:.0f} vs {m['env_steps_per_s_minimise']:.0f} env steps/s "
                         f"({m['table_speedup']:.1f}×); assignment {m['assignment_ms_per_episode']:.2f} ms/episode",
                         None, kind=OBSERVATION, volatile=True))
    else:
        out.append(Claim("progression_speed", "Table progression vs on-the-fly minimisation.", "—",
                         "not measured in this run", None, kind=OBSERVATION, volatile=True))
    return out
