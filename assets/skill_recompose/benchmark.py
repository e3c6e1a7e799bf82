"""skill_recompose claims: measured tables → Claims — no Dagster import. Thresholds are module
constants (never per profile); comparisons between methods are paired CIs over seeds."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.claims import Claim, Premise, comparative_claim, observation, sanity, seeds_label

XICM_MARGIN = 0.05           # claim 1: ≥ 5 points (paired 90 % t CI over seeds, rule "effect")
LABELS_MARGIN = 0.05         # claim 2
STATIC_L2_MARGIN = 0.03      # claim 3
FULL_COVERAGE_SHARE = 0.95   # claim 3 premise: coverage 1.0 on ≥ 95 % of Level-2 queries with static
NO_STATIC_SHARE = 0.90       # ... and on < 90 % without (the static library has something to add)
MIN_VERB_ACC = 0.9           # labeller_rules (a sanity row: the blocking gate enforces it)
ICL_MARGIN = 0.0             # claim 5: labelled beats raw (no size given) — paired CI over seeds

PAPER_PER_TASK = {"close_microwave": (45.3, 62.7), "toilet_seat_down": (48.0, 72.0), "lamp_off": (58.7, 67.0),
                  "lamp_on": (50.7, 52.3), "open_fridge": (22.7, 34.7), "put_knife_on_chopping_board": (26.7, 21.3),
                  "phone_on_base": (57.3, 42.7)}


def per_seed(rollouts: pd.DataFrame, level: int | None = None) -> pd.DataFrame:
    """(method × seed) mean success, optionally on one level."""
    r = rollouts if level is None else rollouts[rollouts["level"] == level]
    return r.groupby(["method", "seed"])["success"].mean().unstack("seed")


def _pair(table: pd.DataFrame, a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
    return table.loc[a].to_numpy(dtype=float), table.loc[b].to_numpy(dtype=float)


def evaluate_claims(rollouts: pd.DataFrame, contexts: pd.DataFrame, accuracy: dict, plans: pd.DataFrame,
                    icl_losses: pd.DataFrame, seeds, n_boot: int) -> list[Claim]:
    seeds = sorted(int(s) for s in seeds)
    label = seeds_label(seeds)
    out = []
    overall = per_seed(rollouts)
    # 1 ---------------------------------------------------------------------------------
    d, x = _pair(overall, "dnr", "xicm")
    out.append(comparative_claim("dnr_beats_xicm", "D&R − X-ICM-like ≥ 5 points overall",
                                 "+2.9 (26.4 vs 23.5) [S, single source]", d, x, margin=XICM_MARGIN, seeds=seeds,
                                 names=("D&R", "X-ICM-like"),
                                 detail="per seed " + ", ".join(f"{v:+.3f}" for v in d - x)))
    # 2 ---------------------------------------------------------------------------------
    d, n = _pair(overall, "dnr", "no_labels")
    out.append(comparative_claim("labels_matter", "D&R − no skill labels ≥ 5 points", "labels: the most "
                                 "critical component [S, qualitative]", d, n, margin=LABELS_MARGIN, seeds=seeds,
                                 names=("D&R", "no labels")))
    # 3 ---------------------------------------------------------------------------------
    l2 = per_seed(rollouts, level=2)
    d, y = _pair(l2, "dnr", "dyn_only")
    cl2 = contexts[contexts["level"] == 2]
    share_full = float((cl2[cl2["method"] == "dnr"]["coverage"] >= 1 - 1e-9).mean())
    share_dyn = float((cl2[cl2["method"] == "dyn_only"]["coverage"] >= 1 - 1e-9).mean())
    coverage = Premise(f"the static library completes coverage: full coverable coverage on ≥ {FULL_COVERAGE_SHARE:.0%} "
                       f"of Level-2 queries with static, < {NO_STATIC_SHARE:.0%} dynamic-only",
                       f"{share_full:.1%} with static, {share_dyn:.1%} dynamic-only",
                       share_full >= FULL_COVERAGE_SHARE and share_dyn < NO_STATIC_SHARE)
    c = comparative_claim("static_helps_level2", "D&R − dynamic-only ≥ 3 points on Level-2",
                          "dynamic-only drops on multi-step tasks [S, qualitative]", d, y, margin=STATIC_L2_MARGIN,
                          seeds=seeds, names=("D&R L2", "dynamic-only L2"), premises=coverage)
    c.measured_value += f"; full coverage with static {share_full:.1%}, dynamic-only {share_dyn:.1%}"
    out.append(c)
    # 4: implied by the blocking gate (Grasp/Release 1.0, verbs ≥ 0.9) and, without the rules, by the
    # injected noise the rules overwrite → sanity ---------------------------------------------------
    ok4 = (accuracy["grip_acc"] == 1.0 and accuracy["verb_acc"] >= MIN_VERB_ACC
           and accuracy["grip_acc_norules"] < accuracy["grip_acc"] and accuracy["verb_acc_norules"] <
           accuracy["verb_acc"])
    out.append(sanity("labeller_rules", "Labeller with gripper constraints: Grasp/Release 100 %, verb accuracy ≥ 0.9; "
                      "both lower without the rules", "no gripper constraints → noisier labels [S, qualitative]",
                      f"with rules: Grasp/Release {accuracy['grip_acc']:.3f}, verbs {accuracy['verb_acc']:.3f}; "
                      f"without: {accuracy['grip_acc_norules']:.3f}, {accuracy['verb_acc_norules']:.3f}", ok=bool(ok4),
                      detail="true by construction: the blocking gate on the annotations enforces the 'with rules' "
                      "half, and the rules overwrite the injected label noise that the 'without' half measures",
                      seeds=label))
    # 5 ---------------------------------------------------------------------------------
    a, b = _pair(overall, "icl_labelled", "icl_raw")
    out.append(comparative_claim("icl_labels_help", "Variant B: labelled contexts beat raw contexts",
                                 "skill labels help the in-context learner [S]", a, b, margin=ICL_MARGIN, seeds=seeds,
                                 names=("labelled", "raw"),
                                 detail="per seed " + ", ".join(f"{u:.3f}/{v:.3f}" for u, v in zip(a, b))))
    # observations ---------------------------------------------------------------------
    task = rollouts.groupby(["task", "method"])["success"].mean().unstack("method")
    parts = [f"{t}: paper X-ICM {px}/D&R {pd_}, ours X-ICM {100 * task.loc[t, 'xicm']:.1f}/D&R "
             f"{100 * task.loc[t, 'dnr']:.1f}" for t, (px, pd_) in PAPER_PER_TASK.items() if t in task.index]
    out.append(observation("per_task_vs_paper", "per-task success vs the paper's partial Table 1 (%)",
                           "partial Table 1 [S]", "; ".join(parts), seeds=label))
    wins_x = sorted(t for t in task.index if task.loc[t, "xicm"] > task.loc[t, "dnr"])
    out.append(observation("xicm_wins", "tasks where X-ICM-like beats D&R", "Knife and Phone [S]",
                           ", ".join(wins_x) or "none", seeds=label))
    pl = plans[plans["mode"] == "planner"]
    out.append(observation("planner_accuracy", "planner Ŝ equals the ground-truth skills", "—",
                           f"exact {pl['exact'].mean():.3f} (L1 {pl[pl['level'] == 1]['exact'].mean():.3f}, "
                           f"L2 {pl[pl['level'] == 2]['exact'].mean():.3f})", seeds=label))
    means = overall.mean(axis=1)
    out.append(observation("ablations", "overall success per method (mean over seeds)", "qualitative [S]",
                           ", ".join(f"{m} {v:.3f}" for m, v in means.sort_values(ascending=False).items()),
                           seeds=label))
    raw = contexts[contexts["level"] == 2].groupby("method")["coverage_raw"].mean()
    out.append(observation("coverage_raw", "Level-2 raw coverage |T(Ŝ) ∩ T(D)| / |T(Ŝ)| (an unseen bigram never "
                           "is coverable)", "—", ", ".join(f"{m} {v:.3f}" for m, v in raw.items()), seeds=label))
    return out
