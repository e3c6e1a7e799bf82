"""Bring your own demos: D&R retrieval and recomposition on your own skill-labelled library.

    python -m assets.skill_recompose.cli --demos lib.jsonl --query q.json [--k-sim 4 --k-cov 4 ...]

Each line of `lib.jsonl` is a demo: {"id", "instruction", "scene": [{"name", "type", "kind", "pos": [x, y, z],
"yaw"}], "keyframes": [[x, y, z, roll, pitch, yaw, gripper], ...], "skills": [[verb, [args]], ...]} (one skill
per keyframe). `q.json` is the query: {"instruction", "scene", "plan": [[verb, [args]], ...]} (Ŝ from your planner).
Prints JSON: D_dyn and D_cov (demo ids), coverage, the recomposed 7-D actions (Variant A) and a skill-augmented
prompt for your own LLM (instruction, skill sequence, aligned actions per context demo, then the query).
Bad input (an unknown verb or object, keyframes out of range, an empty library, k_sim + k_cov larger than the
library, a plan naming objects not in the scene; a missing, empty, non-UTF-8 or non-JSON file, a demo without a
field, NaN, duplicated keys; weights outside their range) exits with status 2 and one stderr line naming the file
or parameter. Parameters are checked before any file is read.
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from assets.common.inputs import InputError, check_range, read_json, read_jsonl, run_cli
from assets.skill_recompose import method as M
from assets.skill_recompose import runs, sim
from assets.skill_recompose.tasks import OBJECT_TYPES


def _world(scene: list[dict]) -> sim.World:
    for o in scene:
        if o.get("type") not in OBJECT_TYPES and "kind" not in o:
            raise M.PlanError(f"unknown object type {o.get('type')!r} (give its kind)")
        o.setdefault("kind", OBJECT_TYPES.get(o["type"], ("fixture",))[0])
    return runs.world_from_json(json.dumps(scene)) if all(o["type"] in OBJECT_TYPES for o in scene) else \
        sim.World({o["name"]: sim.Obj(o["name"], o["type"], o["kind"], np.array(o["pos"]), int(o.get("yaw", 0)),
                                      int(o.get("opening", 0))) for o in scene})


def _skills(raw) -> list[tuple[str, tuple[str, ...]]]:
    out = [(str(v), tuple(a)) for v, a in raw]
    for s in out:
        M.check_skill(s)
    return out


def prompt(instruction: str, context: list[dict], plan_skills, scene: list[dict]) -> str:
    lines = ["You are a robot arm. Each demo lists its instruction, its atomic skills and the 7-D keyframe action "
             "[x, y, z, roll, pitch, yaw, gripper] aligned with each skill. Decompose the query into skills, "
             "recompose them from the demonstrated skills, and output the list of actions.", ""]
    for d in context:
        lines.append(f"Demo {d['id']}: {d['instruction']}")
        for (verb, args), key in zip(d["skills"], d["keyframes"]):
            lines.append(f"  {verb}[{', '.join(args)}] -> {list(key)}")
    lines += ["", f"Query: {instruction}", "Objects: " + "; ".join(f"{o['name']} at {o['pos']} yaw {o.get('yaw', 0)}"
                                                                 for o in scene),
              "Skills: " + " -> ".join(f"{v}[{', '.join(a)}]" for v, a in plan_skills), "Actions:"]
    return "\n".join(lines)


def run(demos: list[dict], query: dict, hp: M.HParams) -> dict:
    if not demos:
        raise M.PlanError("the demo library is empty")
    worlds, keys, labels = [], [], []
    for d in demos:
        w = _world(d["scene"])
        k = np.asarray(d["keyframes"], dtype=int).reshape(-1, 7)
        s = _skills(d["skills"])
        if len(s) != len(k):
            raise M.PlanError(f"demo {d['id']}: {len(s)} skills for {len(k)} keyframes")
        for sk in s:
            M.check_skill(sk, list(w.objects))
        M.replay_states(w, k)                     # raises ActionError on out-of-range keyframes
        worlds.append(w)
        keys.append(k)
        labels.append(s)
    qworld = _world(query["scene"])
    plan_skills = _skills(query["plan"])
    for sk in plan_skills:
        M.check_skill(sk, list(qworld.objects))
    proj = runs.projection(64, 0)
    vis = np.stack([runs.feature(w, proj) for w in worlds]) @ runs.feature(qworld, proj)
    verbs = [[v for v, _ in s] for s in labels]
    plan_verbs = [v for v, _ in plan_skills]
    dyn, cov = M.retrieve("dnr", plan_verbs, vis, np.zeros(len(demos)), verbs, hp, np.random.default_rng(0))
    segs = [s for rank, i in enumerate(dyn + cov) for s in M.demo_segments(i, rank, worlds[i], keys[i], labels[i])]
    acts, notes = M.recompose(plan_skills, qworld, segs, lambda a, b: float(a == b))
    ctx_tokens = set().union(*(M.tokens(verbs[i]) for i in dyn + cov))
    coverable = set().union(*(M.tokens(v) for v in verbs))
    context = [{"id": demos[i]["id"], "instruction": demos[i]["instruction"], "skills": labels[i],
                "keyframes": keys[i].tolist()} for i in dyn + cov]
    return {"D_dyn": [demos[i]["id"] for i in dyn], "D_cov": [demos[i]["id"] for i in cov],
            "coverage": M.coverage(plan_verbs, ctx_tokens, coverable), "coverage_raw": M.coverage(plan_verbs,
                                                                                                ctx_tokens),
            "actions": acts.tolist(), "notes": notes,
            "prompt": prompt(query["instruction"], context, plan_skills, query["scene"])}


DEMO_FIELDS = ("id", "instruction", "scene", "keyframes", "skills")
QUERY_FIELDS = ("instruction", "scene", "plan")


def _fields(record, fields, where: str) -> None:
    if not isinstance(record, dict):
        raise InputError(f"{where}: a JSON object is needed, got {type(record).__name__}")
    missing = [f for f in fields if f not in record]
    if missing:
        raise InputError(f"{where}: missing field(s) {', '.join(missing)}")


def read_inputs(demos_path: str, query_path: str) -> tuple[list[dict], dict]:
    demos = read_jsonl(demos_path)
    for i, d in enumerate(demos):
        _fields(d, DEMO_FIELDS, f"{demos_path}: demo {i}")
    query = read_json(query_path)
    _fields(query, QUERY_FIELDS, str(query_path))
    return demos, query


@run_cli
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m assets.skill_recompose.cli", description=__doc__.split("\n\n")[0])
    parser.add_argument("--demos", required=True, help="JSONL library of skill-labelled demos")
    parser.add_argument("--query", required=True, help="JSON query (instruction, scene, plan)")
    parser.add_argument("--alpha", type=float, default=0.3)
    parser.add_argument("--lam", type=float, default=0.5)
    parser.add_argument("--beta", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.1)
    parser.add_argument("--k-sim", type=int, default=4)
    parser.add_argument("--k-cov", type=int, default=4)
    args = parser.parse_args(argv)
    for name in ("alpha", "lam"):
        check_range(f"--{name}", getattr(args, name), 0, 1)
    for name in ("beta", "gamma", "k_sim", "k_cov"):
        check_range(f"--{name.replace('_', '-')}", getattr(args, name), 0)
    if args.k_sim + args.k_cov < 1:
        raise InputError("--k-sim + --k-cov must be ≥ 1 (the demo budget)")
    demos, query = read_inputs(args.demos, args.query)
    try:
        out = run(demos, query, M.HParams(args.alpha, args.lam, args.beta, args.gamma, args.k_sim, args.k_cov))
    except (M.PlanError, sim.ActionError, sim.SceneError, KeyError, TypeError, ValueError) as err:
        raise InputError(f"{args.demos} / {args.query}: {err}") from None
    sys.stdout.write(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
