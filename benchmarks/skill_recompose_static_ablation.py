"""Why static coverage barely moves Level-2 success (claim 3): read a finished run's contexts, plans and
rollouts and split the Level-2 queries by whether dynamic-only's context holds every *verb* of Ŝ (what the
per-verb recomposition needs) versus every coverable token (verbs and bigrams).

    PAPERLAB_DATA_DIR=/tmp/pnew/skill_recompose/data .venv/bin/python -m benchmarks.skill_recompose_static_ablation
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd


def main() -> str:
    root = Path(os.environ.get("PAPERLAB_DATA_DIR", "data")) / "skill_recompose"
    ctx, plans = pd.read_parquet(root / "contexts.parquet"), pd.read_parquet(root / "planner_predictions.parquet")
    roll, ann = pd.read_parquet(root / "rollouts.parquet"), pd.read_parquet(root / "skill_annotations.parquet")
    verbs = {(r.seed, r.demo_id): json.loads(r.verbs) for r in ann.itertuples()}
    plan = {(r.seed, r.task, r.episode): [v for v, _ in json.loads(r.skills)]
            for r in plans[plans["mode"] == "planner"].itertuples()}
    ok = roll.set_index(["seed", "method", "task", "episode"])["success"]
    rows = []
    for c in ctx[(ctx["level"] == 2) & ctx["method"].isin(["dnr", "dyn_only"])].itertuples():
        ids = json.loads(c.d_dyn) + json.loads(c.d_cov)
        have = set().union(*(set(verbs[(c.seed, d)]) for d in ids))
        want = set(plan[(c.seed, c.task, c.episode)])
        rows.append({"method": c.method, "task": c.task, "seed": c.seed, "episode": c.episode,
                     "all_verbs": want <= have, "full_coverage": c.coverage >= 1 - 1e-9,
                     "success": int(ok[(c.seed, c.method, c.task, c.episode)])})
    t = pd.DataFrame(rows)
    share = t.groupby("method")[["all_verbs", "full_coverage", "success"]].mean()
    dyn = t[t["method"] == "dyn_only"].set_index(["task", "seed", "episode"])
    dnr = t[t["method"] == "dnr"].set_index(["task", "seed", "episode"])
    missing = dyn[~dyn["all_verbs"]].index
    split = pd.DataFrame({
        "queries": [len(missing), len(dyn) - len(missing)],
        "dyn_only_success": [dyn.loc[missing, "success"].mean(), dyn.drop(missing)["success"].mean()],
        "dnr_success": [dnr.loc[missing, "success"].mean(), dnr.drop(missing)["success"].mean()]},
        index=["dyn_only misses a verb of Ŝ", "dyn_only holds every verb"])
    return share.to_string() + "\n\n" + split.to_string()


if __name__ == "__main__":
    print(main())
