"""Predicates on corrupted inputs, layout and task errors, the bring-your-own CLI, typed profiles."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from assets.acc_marl import checks, cli, runs
from assets.acc_marl import layouts as L
from assets.acc_marl.params import AccMarlParams
from assets.common.params import parse
from resources.profiles import PROFILES, load_params
from tests.conftest import typed_params


@pytest.fixture(scope="module")
def params():
    return typed_params(AccMarlParams, "acc_marl", "smoke")


@pytest.fixture(scope="module")
def built(params):
    layouts = runs.layouts_table(params)
    pool = runs.build_pool(params, layouts, lambda *k: np.random.default_rng([len(k), sum(map(len, map(str, k)))]))
    return layouts, pool


def test_every_profile_parses():
    for profile in PROFILES:
        p = parse(AccMarlParams, load_params("acc_marl", profile), f"acc_marl.{profile}")
        assert p.pool.ood_max_size > p.pool.max_size and p.train.lr == 3e-4 and p.train.ent_coef == 0.02


@pytest.mark.parametrize("text,message", [
    ("@..|..", "ragged rows"),
    ("@.*|...", "unknown cell '\\*'"),
    ("@.x|...", "button 'x' opens no door"),
    ("@.A|...", "door 'A' has no button 'a'"),
    ("#..|...|agents: 0,0", "agent 0 starts on a wall"),
    ("...|...", "no agent start"),
])
def test_bad_layouts_raise_clear_errors(text, message):
    with pytest.raises(L.LayoutError, match=message):
        L.parse(text)


def test_layout_gate(params, built):
    layouts, _ = built
    assert checks.layouts_valid(layouts).passed
    bad = layouts.copy()
    bad.loc[0, "text"] = "@.A|..."
    assert "has no button" in " ".join(checks.layouts_valid(bad).problems)


def test_pool_gate_passes_and_names_each_corruption(params, built):
    layouts, pool = built
    assert checks.pool_valid(pool, layouts, params).passed, checks.pool_valid(pool, layouts, params).problems
    leak = pd.concat([pool, pool[pool["role"] == "train"].iloc[[0]].assign(role="test")])
    assert any("test ∩ train" in s for s in checks.pool_valid(leak, layouts, params).problems)
    small = pool.copy()
    small.loc[small.index[small["role"] == "ood"][0], "n_states"] = 2
    assert any("OOD" in s for s in checks.pool_valid(small, layouts, params).problems)
    broken = pool.copy()
    i = broken.index[0]
    nxt = json.loads(broken.loc[i, "next_id"])
    nxt[0] = 10 ** 6
    broken.loc[broken["id"] == broken.loc[i, "id"], "next_id"] = json.dumps(nxt)
    assert any("not closed" in s for s in checks.pool_valid(broken, layouts, params).problems)
    unmin = pool.copy()
    j = unmin.index[unmin["role"] == "train"][0]
    t = json.loads(unmin.loc[j, "trans"])
    unmin.loc[j, "trans"] = json.dumps(t + [t[-1]])                   # a duplicated (unreachable) state
    unmin.loc[j, "accept"] = json.dumps(json.loads(unmin.loc[j, "accept"]) + [0])
    assert any("not minimal" in s for s in checks.pool_valid(unmin, layouts, params).problems)
    no_nine = layouts.assign(tokens=json.dumps(list(range(9))))
    unsat = pool.copy()
    k = unsat.index[unsat["role"] == "scenario"][0]
    unsat.loc[k, ["trans", "accept"]] = [json.dumps([[1 if s == 0 and tok == 9 else s for tok in range(10)]
                                                     for s in range(2)]), json.dumps([0, 1])]
    assert any("unsatisfiable" in s for s in checks.pool_valid(unsat, no_nine, params).problems)


def test_eval_gate_names_missing_cells_and_fake_successes(params):
    rows = []
    for name in params.layouts:
        for v in (*params.variants, "random"):
            for s in params.seeds:
                for cell in runs.eval_cells(params, v):
                    for e in range(params.eval.episodes):
                        rows.append({"layout": name, "variant": v, "seed": s, "sampler": cell[0], "split": cell[1],
                                     "assignment": cell[2], "episode": e, "success": False, "length": 5,
                                     "all_accept": False, "any_reject": False})
    table = pd.DataFrame(rows)
    assert checks.eval_valid(table, params).passed
    fake = table.copy()
    fake.loc[0, "success"] = True
    assert "count success" in checks.eval_valid(fake, params).problems[0]
    assert "expected" in checks.eval_valid(table.iloc[1:], params).problems[0]


def test_eval_gate_reports_the_trained_minus_random_gap():
    """The premise of claims 1–4, reported by the eval gate per layout (not blocking)."""
    rows = []
    for name, lift in (("buttons2", 0.0), ("rooms2", 0.3)):
        for s, jit in zip(range(3), (0.0, 0.02, -0.02)):
            for v, base in (("pbrs", 0.4 + lift + jit), ("random", 0.4)):
                for e in range(100):
                    ok = e < round(100 * base)
                    rows.append({"layout": name, "variant": v, "seed": s, "sampler": "RAD", "split": "in",
                                 "assignment": "random", "episode": e, "success": ok, "length": 5,
                                 "all_accept": ok, "any_reject": False})
    found = checks.eval_valid(pd.DataFrame(rows))
    assert found.passed
    gaps = found.metadata["trained_minus_random"]
    assert "NOT above random" in gaps["buttons2"] and "beats random" in gaps["rooms2"]
    assert "+0.3" in gaps["rooms2"] and gaps["rooms2"] in found.ok


def write(tmp_path, name, obj):
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def test_task_errors(tmp_path):
    lay = L.parse(L.ROOMS_2)
    reach9 = {"states": 2, "accepting": [1], "transitions": {"0": {"9": 1}}}
    assert len(cli.load_tasks(write(tmp_path, "a.json", [reach9, "trivial"]), lay)) == 2
    with pytest.raises(cli.TaskError, match="2 agents need 2 DFAs"):
        cli.load_tasks(write(tmp_path, "b.json", [reach9]), lay)
    with pytest.raises(cli.TaskError, match="unsatisfiable"):
        cli.load_tasks(write(tmp_path, "c.json", [{"states": 2, "accepting": [], "transitions": {}}, "trivial"]), lay)
    no_nine = L.parse(L.ROOMS_2.replace("9", "."))
    with pytest.raises(cli.TaskError, match="token 9 is absent"):
        cli.load_tasks(write(tmp_path, "d.json", [reach9, "trivial"]), no_nine)


def test_cli_runs_a_checkpoint_and_rejects_a_layout_mismatch(tmp_path, data_dir, capsys):
    import torch

    from assets.acc_marl import ppo
    from resources.artifacts import save_checkpoint

    torch.manual_seed(0)
    net = ppo.net_for(torch, L.parse(L.ROOMS_2), ppo.PPOConfig(), "pbrs")
    ref = save_checkpoint(data_dir / "p.pt", net.state_dict(), provenance={}, config=ppo.PPOConfig().as_dict(),
                          seed=0, layout="rooms2", variant="pbrs")
    ckpt = data_dir / "p.pt"
    assert ref["md5"]
    tasks = write(tmp_path, "t.json", [{"states": 2, "accepting": [1], "transitions": {"0": {"8": 1}}}, "trivial"])
    rooms = write(tmp_path, "rooms.txt", L.ROOMS_2.replace("|", "\n"))
    assert cli.main(["--layout", str(rooms), "--dfas", str(tasks), "--checkpoint", str(ckpt), "--episodes", "4",
                     "--max-len", "10"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"agents", "assignment", "given", "value"} and 0 <= out["value"]["success"] <= 1
    buttons = write(tmp_path, "buttons.txt", L.BUTTONS_2)
    assert cli.main(["--layout", str(buttons), "--dfas", str(tasks), "--checkpoint", str(ckpt)]) == 2
    assert "checkpoint/layout mismatch" in capsys.readouterr().err
