"""`python -m assets.skill_recompose.cli`: D_dyn, D_cov, coverage, actions and a prompt for your own demos."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from assets.skill_recompose import cli, sim
from assets.skill_recompose.tasks import TASKS


def _demo(name: str, seed: int, i: int) -> dict:
    task = TASKS[name]
    scene = sim.make_scene(task, np.random.default_rng(seed))
    keys, _ = sim.run_expert(scene, task)
    objs = [{"name": o.name, "type": o.type, "kind": o.kind, "pos": [int(v) for v in o.pos], "yaw": int(o.yaw),
             "opening": int(o.opening)} for o in scene.world.objects.values()]
    return {"id": f"d{i}", "instruction": task.instruction, "scene": objs, "keyframes": keys.tolist(),
            "skills": [[v, [scene.roles[r] for r in a]] for v, a in task.skills]}


def test_cli_recomposes_an_unseen_task(tmp_path):
    demos = [_demo("open_drawer", 1, 0), _demo("put_item_in_drawer", 2, 1), _demo("push_buttons", 3, 2)]
    lib = tmp_path / "lib.jsonl"
    lib.write_text("".join(json.dumps(d) + "\n" for d in demos))
    task = TASKS["close_microwave"]
    scene = sim.make_scene(task, np.random.default_rng(9))
    objs = [{"name": o.name, "type": o.type, "kind": o.kind, "pos": [int(v) for v in o.pos], "yaw": int(o.yaw),
             "opening": int(o.opening)} for o in scene.world.objects.values()]
    q = tmp_path / "q.json"
    q.write_text(json.dumps({"instruction": task.instruction, "scene": objs,
                             "plan": [["Reach", ["microwave"]], ["Push", ["microwave"]]]}))
    done = subprocess.run([sys.executable, "-m", "assets.skill_recompose.cli", "--demos", str(lib), "--query", str(q),
                           "--k-sim", "1", "--k-cov", "1"], capture_output=True, text=True, check=True)
    out = json.loads(done.stdout)
    assert "d1" in out["D_dyn"] + out["D_cov"] and len(out["D_dyn"]) == 1 and out["coverage"] == 1.0
    assert "Push[" in out["prompt"] and "Query: close the microwave door" in out["prompt"]
    assert sim.execute(scene, task, np.asarray(out["actions"]))[0]


def test_cli_bad_input_stops_with_a_message(tmp_path, capsys):
    demos = [_demo("open_drawer", 1, 0)]
    lib = tmp_path / "lib.jsonl"
    lib.write_text(json.dumps(demos[0]) + "\n")
    q = tmp_path / "q.json"
    q.write_text(json.dumps({"instruction": "x", "scene": demos[0]["scene"], "plan": [["Teleport", ["drawer"]]]}))
    assert cli.main(["--demos", str(lib), "--query", str(q), "--k-sim", "1", "--k-cov", "0"]) == 2
    assert "unknown verb" in capsys.readouterr().err
    q.write_text(json.dumps({"instruction": "x", "scene": demos[0]["scene"], "plan": [["Reach", ["toaster"]]]}))
    assert cli.main(["--demos", str(lib), "--query", str(q), "--k-sim", "1", "--k-cov", "0"]) == 2
    assert "not in the scene" in capsys.readouterr().err
    q.write_text(json.dumps({"instruction": "x", "scene": demos[0]["scene"], "plan": [["Reach", ["drawer"]]]}))
    assert cli.main(["--demos", str(lib), "--query", str(q), "--k-sim", "1", "--k-cov", "1"]) == 2
    assert "exceeds the library size" in capsys.readouterr().err
    bad = dict(demos[0], keyframes=[[25, 0, 0, 0, 0, 0, 1]] + demos[0]["keyframes"][1:])
    lib.write_text(json.dumps(bad) + "\n")
    assert cli.main(["--demos", str(lib), "--query", str(q), "--k-sim", "1", "--k-cov", "0"]) == 2
    assert "outside the voxel grid" in capsys.readouterr().err
    lib.write_text("")
    assert cli.main(["--demos", str(lib), "--query", str(q)]) == 2
    assert "empty" in capsys.readouterr().err
