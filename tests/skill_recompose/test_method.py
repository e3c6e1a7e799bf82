"""skill_recompose mathematics: Jaccard, IDF and greedy coverage on hand cases; the gripper rules;
keyframes of a known trace; re-grounding under a rigid transform; the simulator's rules."""
from __future__ import annotations

import math

import numpy as np
import pytest

from assets.skill_recompose import method as M
from assets.skill_recompose import sim
from assets.skill_recompose.tasks import SEEN, TASKS, UNSEEN


def test_jaccard_hand_cases():
    assert M.jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(1 / 3)
    assert M.jaccard(set(), set()) == 0.0
    assert M.jaccard({"a"}, {"a"}) == 1.0
    # s_plan = λ J(verbs) + (1 − λ) J(bigrams): Reach→Push vs Reach→Grasp→Pull→Release
    plan, demo = ["Reach", "Push"], ["Reach", "Grasp", "Pull", "Release"]
    assert M.plan_similarity(plan, demo, 0.5) == pytest.approx(0.5 * (1 / 5) + 0.5 * 0.0)
    assert M.plan_similarity(plan, plan, 0.3) == pytest.approx(1.0)


def test_idf_closed_form():
    sets = [{"V:Reach", "V:Press"}, {"V:Reach"}, {"V:Reach", "B:Reach->Press"}]
    w = M.idf_weights(sets, beta=2.0)
    n = 3
    assert w["V:Reach"] == pytest.approx((math.log((n + 1) / (3 + 1)) + 1) ** 2)     # = 1
    assert w["V:Press"] == pytest.approx((math.log(4 / 2) + 1) ** 2)
    assert w["B:Reach->Press"] > w["V:Reach"]                                          # rarer → heavier
    assert M.tokens(["Reach", "Press", "Reach"]) == {"V:Reach", "V:Press", "B:Reach->Press", "B:Press->Reach"}


def test_greedy_coverage_hand_case():
    # gap {x, y, z}; demo 0 covers x, y with 2 skills; demo 1 covers x, y, z with 10 skills; demo 2 covers z
    sets = [{"x", "y"}, {"x", "y", "z"}, {"z"}]
    w = {"x": 1.0, "y": 1.0, "z": 1.0}
    # γ = 0: the biggest gain (demo 1, gain 3) wins and covers the gap alone
    assert M.greedy_coverage({"x", "y", "z"}, sets, [2, 10, 1], w, 0.0, 3) == [1]
    # γ = 1: demo 0 (2/3) beats demo 1 (3/11), then demo 2 (1/2) fills z; then the gap is covered
    assert M.greedy_coverage({"x", "y", "z"}, sets, [2, 10, 1], w, 1.0, 3) == [0, 2]
    # k_cov stops it; already-covered tokens give no gain; excluded demos are never picked
    assert M.greedy_coverage({"x", "y", "z"}, sets, [2, 10, 1], w, 1.0, 1) == [0]
    assert M.greedy_coverage({"q"}, sets, [2, 10, 1], w, 1.0, 3) == []
    assert M.greedy_coverage({"x", "y", "z"}, sets, [2, 10, 1], w, 0.0, 3, exclude=[1]) == [0, 2]


def test_dual_retrieval_budget_and_errors():
    verbs = [["Reach", "Press"], ["Reach", "Grasp", "Pull", "Release"], ["Reach", "Push"], ["Reach", "Grasp", "Lift"]]
    hp = M.HParams(alpha=0.0, lam=0.5, beta=1.0, gamma=0.1, k_sim=1, k_cov=2)
    dyn, cov = M.retrieve("dnr", ["Reach", "Grasp", "Pull", "Release", "Reach", "Push"], np.zeros(4), np.zeros(4),
                          verbs, hp, np.random.default_rng(0))
    assert dyn == [1] and cov == [2]                      # the gap {Push, Release→Reach, Reach→Push} → demo 2
    assert M.coverage(["Reach", "Push"], M.tokens(verbs[2])) == 1.0
    with pytest.raises(M.PlanError, match="exceeds the library size"):
        M.retrieve("dnr", ["Reach"], np.zeros(4), np.zeros(4), verbs, M.HParams(0, 0.5, 1, 0.1, 3, 2),
                   np.random.default_rng(0))
    with pytest.raises(M.PlanError, match="empty"):
        M.retrieve("dnr", ["Reach"], np.zeros(0), np.zeros(0), [], hp, np.random.default_rng(0))


def _world():
    objs = {"block": sim.Obj("block", "block", "movable", np.array([5, 5, 2]), 0),
            "plate": sim.Obj("plate", "plate", "fixture", np.array([10, 12, 2]), 2)}
    return sim.World(objs)


def test_gripper_rules_force_grasp_release_order_and_demotion():
    w = _world()
    close = np.array([5, 5, 2, 0, 0, 0, 0])
    assert M.apply_rules(("Push", ("block",)), w, close) == ("Grasp", ("block",))        # open → closed
    w.open = 0
    assert M.apply_rules(("Lift", ("block",)), w, np.array([5, 5, 2, 0, 0, 0, 1])) == ("Release", ("block",))
    w.open, w.held = 0, "block"
    # (movable, target) order
    assert M.apply_rules(("Move", ("plate", "block")), w, np.array([10, 12, 6, 0, 0, 0, 0])) == \
        ("Move", ("block", "plate"))
    w.open, w.held = 1, None
    # a relational verb with an open gripper is demoted to Move
    assert M.apply_rules(("Insert", ("block", "plate")), w, np.array([10, 12, 3, 0, 0, 0, 1]))[0] == "Move"


def test_keyframes_of_a_known_trace():
    keys = np.array([[5, 5, 2, 0, 0, 0, 1], [5, 5, 2, 0, 0, 0, 0], [5, 5, 6, 0, 0, 0, 0], [5, 5, 6, 0, 0, 2, 0],
                     [5, 5, 6, 0, 0, 2, 1]])
    start = np.array([10, 10, 12, 0, 0, 0, 1])
    poses, grip, ends = sim.trace(keys, start, np.random.default_rng(0), noise=0.0)
    idx = sim.extract_keyframes(poses, grip, threshold=0.2)
    # the slow start of the next segment can extend a still run by one sample: same voxel, same action
    assert len(idx) == len(ends) and max(abs(i - e) for i, e in zip(idx, ends)) <= 1
    assert (sim.keyframes_from_trace(poses, grip, idx) == keys).all()
    # a threshold above the motion speed merges segments: fewer keyframes than the script
    assert len(sim.extract_keyframes(poses, grip, threshold=5.0)) < len(keys)


@pytest.mark.parametrize("quarter", [0, 1, 2, 3])
def test_regrounding_is_exact_under_a_rigid_transform(quarter):
    task = TASKS["place_shape_in_shape_sorter"]
    scene = sim.make_scene(task, np.random.default_rng(3))
    keys, states = sim.run_expert(scene, task)
    # the same scene turned by `quarter` quarter turns about (10, 10) and shifted
    moved = scene.world.copy()
    for o in moved.objects.values():
        o.pos = sim.rot(quarter, o.pos - np.array([10, 10, 0])) + np.array([10, 10, 0]) + np.array([-1, 1, 0])
        o.yaw = (o.yaw + 2 * quarter) % 8
    w = moved.copy()
    w.gripper, w.yaw = sim.rot(quarter, scene.world.gripper - np.array([10, 10, 0])) + np.array([9, 11, 0]), \
        (scene.world.yaw + 2 * quarter) % 8
    for i, ((verb, roles), k) in enumerate(zip(task.skills, keys)):
        anchor = scene.roles[roles[-1]]
        code = M.encode(states[i], anchor, k)
        a = M.reground(code, w, anchor)
        expected = sim.rot(quarter, k[:3] - np.array([10, 10, 0])) + np.array([9, 11, 0])
        assert a[:3].tolist() == expected.tolist(), verb
        w.step(a)
    assert sim.succeeded(w, sim.goal_flags(task, scene.roles))


def test_simulator_rules():
    w = _world()
    with pytest.raises(sim.ActionError, match="outside the voxel grid"):
        w.step([20, 0, 0, 0, 0, 0, 1])
    with pytest.raises(sim.ActionError, match="Euler"):
        w.step([1, 1, 1, 0, 0, 8, 1])
    w.step([5, 5, 2, 0, 0, 2, 1])
    w.step([5, 5, 2, 0, 0, 2, 0])
    assert w.held is None                           # the yaw does not match the block's grasp yaw
    w.step([5, 5, 2, 0, 0, 0, 1])
    w.step([5, 5, 2, 0, 0, 0, 0])
    assert w.held == "block"
    w.step([10, 12, 6, 0, 0, 2, 0])                 # moved and turned at once: dropped
    assert w.held is None and "dropped" in w.log[-1]


def test_every_expert_demo_succeeds_and_level2_needs_an_unseen_bigram():
    from assets.skill_recompose.tasks import bigrams, seen_bigrams

    rng = np.random.default_rng(0)
    for task in (*SEEN, *UNSEEN):
        scene = sim.make_scene(task, rng)
        keys, _ = sim.run_expert(scene, task)
        assert sim.execute(scene, task, keys)[0], task.name
    assert all(bigrams(t.verbs) - seen_bigrams() for t in UNSEEN if t.level == 2)
    assert not any(bigrams(t.verbs) - seen_bigrams() for t in UNSEEN if t.level == 1)


def test_recompose_uses_only_the_context_and_falls_back():
    task = TASKS["open_drawer"]
    scene = sim.make_scene(task, np.random.default_rng(1))
    keys, _ = sim.run_expert(scene, task)
    labels = [(v, tuple(scene.roles[r] for r in a)) for v, a in task.skills]
    segs = M.demo_segments(0, 0, scene.world, keys, labels)
    fridge = TASKS["open_fridge"]
    q = sim.make_scene(fridge, np.random.default_rng(2))
    plan = [(v, tuple(q.roles[r] for r in a)) for v, a in fridge.skills]
    acts, notes = M.recompose(plan, q.world, segs, lambda a, b: 0.0)
    assert sim.execute(q, fridge, acts)[0] and not notes
    # a verb absent from the context falls back (and says so); an object not in the scene is an error
    acts, notes = M.recompose([("Reach", ("fridge",)), ("Press", ("fridge",))], q.world, segs, lambda a, b: 1.0)
    assert notes and "Press missing" in notes[0]
    with pytest.raises(M.PlanError, match="not in the scene"):
        M.recompose([("Reach", ("toaster",))], q.world, segs, lambda a, b: 0.0)
    with pytest.raises(M.PlanError, match="unknown verb"):
        M.recompose([("Teleport", ("fridge",))], q.world, segs, lambda a, b: 0.0)
