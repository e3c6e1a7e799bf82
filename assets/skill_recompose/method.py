"""D&R's method on TableTop-Skills — labeller (with the paper's gripper constraints and post-rules),
planner Ŝ, dual-library retrieval (exact formulas), Variant A recomposition and the
trajectory-imitation executor of the baselines. numpy only, no Dagster import.

Embeddings come in as a lookup `emb(text) -> (384,) unit vector` (MiniLM, computed once by the
text_embeddings asset); cosine similarity is their dot product.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from assets.skill_recompose import sim
from assets.skill_recompose.tasks import GRIPPER_VERBS, OBJECT_TYPES, RELATIONAL, VERBS, Task

Emb = Callable[[str], np.ndarray]
Skill = tuple[str, tuple[str, ...]]


class PlanError(ValueError):
    """Bad input to the method: unknown verb or object, empty library, budget too large."""


def display(obj_type: str) -> str:
    return OBJECT_TYPES[obj_type][1]


def check_skill(skill: Skill, scene_objects: Sequence[str] | None = None) -> None:
    verb, args = skill
    if verb not in VERBS:
        raise PlanError(f"unknown verb {verb!r}; known: {', '.join(VERBS)}")
    if scene_objects is not None:
        missing = [a for a in args if a not in scene_objects]
        if missing:
            raise PlanError(f"{verb}{list(args)}: objects {missing} are not in the scene "
                            f"({', '.join(scene_objects)})")


# ----------------------------------------------------------------------------- labeller

def _nearest(world: sim.World, point: np.ndarray, exclude: Sequence[str] = (), kinds=None, k: int = 3):
    cands = [o for o in world.objects.values() if o.name not in exclude and (kinds is None or o.kind in kinds)]
    cands.sort(key=lambda o: (int(np.abs(o.grasp - point).sum()), o.name))
    return cands[:k]


def _pick_arg(cands, mentions: Sequence[str], emb: Emb, point: np.ndarray) -> str:
    """Argument choice: geometric proximity plus MiniLM similarity of the object's name to the
    instruction's mentions (the paper's VLM grounding, substituted)."""
    if not cands:
        return ""
    ments = [emb(m) for m in mentions if m]

    def score(o):
        sem = max((float(emb(display(o.type)) @ m) for m in ments), default=0.0)
        return -0.5 * float(np.abs(o.grasp - point).sum()) + 3.0 * sem

    return max(cands, key=score).name


def propose_label(w0: sim.World, w1: sim.World, key: np.ndarray, mentions: Sequence[str], emb: Emb) -> Skill:
    """Verb and arguments of one segment from its geometry: the gripper bit change, which object
    moved with the gripper and how (direction relative to the object, contact), and where the
    gripper ended relative to the nearest objects."""
    p = key[:3]
    if w0.open and not key[6]:
        held = w1.held or _pick_arg(_nearest(w0, p), mentions, emb, p)
        return "Grasp", (held,)
    if not w0.open and key[6]:
        held = w0.held or _pick_arg(_nearest(w0, p), mentions, emb, p)
        return "Release", (held,)
    changed = []
    for name, o0 in w0.objects.items():
        o1 = w1.objects[name]
        if not np.array_equal(o0.pos, o1.pos) or o0.yaw != o1.yaw or o0.opening != o1.opening or o0.angle != o1.angle:
            changed.append(name)
    new_flags = set(w1.flags) - set(w0.flags)
    if any(f.startswith("pressed:") for f in new_flags):
        return "Press", (next(f for f in new_flags if f.startswith("pressed:")).split(":")[1],)
    if w0.held and w0.held in changed:
        name = w0.held
        o0, o1 = w0.objects[name], w1.objects[name]
        d = o1.pos - o0.pos
        if o0.kind in ("articulated", "pluggable"):
            return ("Pull" if o1.opening > o0.opening or o1.kind != o0.kind else "Push"), (name,)
        if o0.kind == "rotatable" or (not np.any(d) and o1.yaw != o0.yaw):
            return "Rotate", (name,)
        if d[2] > 0 and not np.any(d[:2]):
            return "Lift", (name,)
        cands = sorted((t for t in w1.objects.values() if t.name != name),
                       key=lambda t: (int(np.abs(t.pos[:2] - o1.pos[:2]).sum()), t.name))[:3]
        target = _pick_arg(cands, mentions, emb, o1.pos)
        t = w1.objects[target]
        if np.array_equal(o1.pos, t.slot):
            return "Insert", (name, target)
        if d[2] == 0 and o1.pos[2] <= t.pos[2] + 1:
            return "Slide", (name, target)
        return "Move", (name, target)
    for name in changed:
        o0, o1 = w0.objects[name], w1.objects[name]
        if o0.kind == "articulated" and o1.opening < o0.opening:
            return "Push", (name,)
        if o0.kind == "rotatable":
            return "Rotate", (name,)
    target = _pick_arg(_nearest(w1, p, kinds=("movable", "articulated", "pluggable", "pressable", "rotatable")),
                       mentions, emb, p)
    return "Reach", (target,)


def noisy_label(label: Skill, world: sim.World, rng: np.random.Generator, rate: float) -> Skill:
    """Label noise at `rate`: the verb replaced by another verb; a relational pair's order swapped."""
    verb, args = label
    if rng.random() < rate:
        verb = VERBS[int(rng.integers(0, len(VERBS)))]
        if verb in RELATIONAL and len(args) == 1:
            others = sorted(n for n in world.objects if n != args[0])
            args = (args[0], others[int(rng.integers(0, len(others)))])
        elif verb not in RELATIONAL:
            args = args[:1]
    if verb in RELATIONAL and len(args) == 2 and rng.random() < rate:
        args = (args[1], args[0])
    return verb, tuple(args)


def apply_rules(label: Skill, w0: sim.World, key: np.ndarray) -> Skill:
    """The paper's hard gripper constraints and post-rules, exactly:
    open→closed is Grasp, closed→open is Release; relational verbs take (movable, target) order;
    a relational verb executed with an open gripper is demoted to Move."""
    verb, args = label
    if w0.open and not key[6]:
        return "Grasp", args[:1]
    if not w0.open and key[6]:
        return "Release", args[:1]
    if verb in RELATIONAL and len(args) == 2:
        k0, k1 = (w0.objects[a].kind if a in w0.objects else "" for a in args)
        if k0 != "movable" and k1 == "movable" and w0.held != args[0]:
            args = (args[1], args[0])
        if w0.open and key[6]:
            verb = "Move"
    return verb, tuple(args)


def replay_states(world: sim.World, keys: np.ndarray) -> list[sim.World]:
    """The world before each keyframe and after the last (K + 1 states)."""
    w = world.copy()
    states = [w.copy()]
    for k in keys:
        w.step(k)
        states.append(w.copy())
    return states


def label_demo(world: sim.World, keys: np.ndarray, mentions: Sequence[str], emb: Emb, rng: np.random.Generator,
               noise: float, rules: bool = True) -> list[Skill]:
    """Skill label per extracted segment (the same noise draws with and without the rules)."""
    states = replay_states(world, keys)
    out = []
    for i, k in enumerate(keys):
        raw = propose_label(states[i], states[i + 1], k, mentions, emb)
        lab = noisy_label(raw, states[i], rng, noise)
        out.append(apply_rules(lab, states[i], k) if rules else lab)
    return out


def match_segments(extracted: Sequence[int], true: Sequence[int], tol: int = 2) -> list[int]:
    """For each extracted keyframe sample, the index of the scripted keyframe within `tol`
    samples (nearest), or −1 (a spurious segment)."""
    out = []
    for e in extracted:
        d = [abs(int(e) - int(t)) for t in true]
        j = int(np.argmin(d)) if d else -1
        out.append(j if j >= 0 and d[j] <= tol else -1)
    return out


# ----------------------------------------------------------------------------- planner Ŝ

# action class -> verb-phrase descriptions (a phrase goes to the class of its nearest description)
ACTION_CLASSES: dict[str, tuple[str, ...]] = {
    "open": ("open it", "pull it open", "open the door"),
    "close": ("close it", "shut it", "push it shut", "close the lid"),
    "pick": ("pick it up", "pick up the object"),
    "grasp": ("grab it", "grasp it"),
    "reach": ("reach it", "reach towards it"),
    "put": ("put it on the thing", "place it on top of the thing", "take it and put it on the thing",
            "put it into the thing", "insert it into the thing", "put it in the thing", "screw it into the thing"),
    "press": ("press it", "push the button", "press the switch"),
    "turn": ("turn it", "turn the tap", "twist it"),
    "rotate": ("rotate it", "tilt it", "turn it flat", "tilt it further"),
    "slide": ("slide it to the thing", "drag it to the thing", "sweep it into the thing", "use it to drag the thing"),
    "release": ("let go of it", "drop it", "release it"),
    "move_over": ("move it over the thing", "hold it above the thing"),
    "lift": ("lift it up", "lift it off the thing", "raise it"),
    "pull_out": ("pull it out of the socket", "unplug it"),
}
SLOT_FROM_ABOVE = ("lamp", "rack", "peg", "cup_holder", "sorter", "roll_stand", "shelf")
SLOT_DIRECT = ("safe", "umbrella_stand", "computer", "wire_start")


def ground_mention(mention: str, objects: Sequence[sim.Obj], emb: Emb) -> str:
    """The scene object whose name is MiniLM-nearest to the mention."""
    if not objects:
        raise PlanError("the scene has no objects")
    m = emb(mention)
    return max(objects, key=lambda o: (float(emb(display(o.type)) @ m), o.name)).name


def abstract_phrase(text: str, m1: str, m2: str) -> str:
    """The phrase with its object mentions abstracted ("the knife" → "it", "the board" → "the thing")."""
    out = text
    if m2:
        out = out.replace(f"the {m2}", "the thing")
    if m1:
        out = out.replace(f"the {m1}", "it")
    return out


def classify_phrase(text: str, emb: Emb) -> str:
    """The action class whose nearest description is MiniLM-closest to the phrase."""
    e = emb(text)
    return max(ACTION_CLASSES, key=lambda c: max(float(emb(d) @ e) for d in ACTION_CLASSES[c]))


def plan(phrases: Sequence[tuple[str, str, str]], world: sim.World, emb: Emb) -> list[Skill]:
    """Ŝ from the instruction phrases and the scene only (never the task's skills): each phrase
    → its MiniLM-nearest action class; the affordance table expands (class, object kinds, what
    the plan holds) into skills; a plan ending with the object held ends with Release."""
    objs = list(world.objects.values())
    kinds = {o.name: o.kind for o in objs}
    types = {o.name: o.type for o in objs}
    out: list[Skill] = []
    held: str | None = None

    def pick(o: str) -> None:
        nonlocal held
        if held != o:
            if held:
                out.append(("Release", (held,)))
            out.extend([("Reach", (o,)), ("Grasp", (o,)), ("Lift", (o,))])
            held = o

    for text, m1, m2 in phrases:
        cls = classify_phrase(abstract_phrase(text, m1, m2), emb)
        o = ground_mention(m1, objs, emb)
        t = ground_mention(m2, [x for x in objs if x.name != o], emb) if m2 else None
        last_reach = bool(out) and out[-1] == ("Reach", (o,))
        if cls == "open" or (cls == "pull_out" and kinds[o] == "articulated"):
            out.extend([("Reach", (o,)), ("Grasp", (o,)), ("Pull", (o,))])
            if cls == "open":
                out.append(("Release", (o,)))
            else:
                held = o
        elif cls == "pull_out":
            out.extend([("Reach", (o,)), ("Grasp", (o,)), ("Pull", (o,))])
            held = o
        elif cls == "close":
            out.extend([("Reach", (o,)), ("Push", (o,))])
        elif cls == "press":
            out.extend([] if last_reach else [("Reach", (o,))])
            out.append(("Press", (o,)))
        elif cls in ("turn", "rotate") and held == o:
            out.append(("Rotate", (o,)))
        elif cls == "turn" and kinds[o] == "rotatable":
            out.extend([("Reach", (o,)), ("Grasp", (o,)), ("Rotate", (o,)), ("Release", (o,))])
        elif cls in ("turn", "rotate"):
            out.extend([] if last_reach else [("Reach", (o,))])
            out.append(("Rotate", (o,)))
        elif cls == "reach":
            out.append(("Reach", (o,)))
        elif cls == "grasp":
            if held != o:
                out.extend([("Reach", (o,)), ("Grasp", (o,))])
                held = o
        elif cls == "pick" or (cls == "lift" and held != o):
            pick(o)
        elif cls == "lift":
            out.append(("Lift", (o,)))
        elif cls == "release":
            if held:
                out.append(("Release", (held,)))
                held = None
        elif cls in ("put", "move_over", "slide"):
            if t is None:
                raise PlanError(f"phrase {text!r} needs a target object")
            if cls == "slide":
                if held != o:
                    out.extend([("Reach", (o,)), ("Grasp", (o,))])
                    held = o
                out.append(("Slide", (o, t)))
                continue
            pick(o)
            if cls == "put" and types[t] in SLOT_DIRECT:
                out.append(("Insert", (o, t)))
            elif cls == "put" and types[t] in SLOT_FROM_ABOVE:
                out.extend([("Move", (o, t)), ("Insert", (o, t))])
            else:
                out.append(("Move", (o, t)))
            if cls != "move_over":
                out.append(("Release", (o,)))
                held = None
    if held:
        out.append(("Release", (held,)))
    return out


def perturb_plan(skills: Sequence[Skill], p_err: float, rng: np.random.Generator) -> list[Skill]:
    """Planner noise: each skill is dropped (prob p_err/2) or swapped with its successor (p_err/2)."""
    s = list(skills)
    i = 0
    out = []
    while i < len(s):
        u = rng.random()
        if u < p_err / 2:
            i += 1
            continue
        if u < p_err and i + 1 < len(s):
            out.extend([s[i + 1], s[i]])
            i += 2
            continue
        out.append(s[i])
        i += 1
    return out


# ----------------------------------------------------------------------------- retrieval

def jaccard(a: set, b: set) -> float:
    """|A ∩ B| / |A ∪ B|, and 0 for two empty sets."""
    u = a | b
    return len(a & b) / len(u) if u else 0.0


def verb_set(verbs: Sequence[str]) -> set[str]:
    return set(verbs)


def bigram_set(verbs: Sequence[str]) -> set[str]:
    v = list(verbs)
    return {f"{a}->{b}" for a, b in zip(v, v[1:])}


def tokens(verbs: Sequence[str]) -> set[str]:
    """Object-agnostic tokens T(d) = {V:v} ∪ {B:v1→v2}."""
    return {f"V:{v}" for v in verbs} | {f"B:{b}" for b in bigram_set(verbs)}


def idf_weights(token_sets: Sequence[set[str]], beta: float) -> dict[str, float]:
    """w_t = (log((N + 1) / (df(t) + 1)) + 1)^β, N = number of demos, df = demos containing t."""
    n = len(token_sets)
    df = Counter(t for s in token_sets for t in s)
    return {t: (math.log((n + 1) / (c + 1)) + 1.0) ** beta for t, c in df.items()}


def plan_similarity(plan_verbs: Sequence[str], demo_verbs: Sequence[str], lam: float) -> float:
    """s^plan = λ·J(V(Ŝ), V(S_i)) + (1 − λ)·J(B(Ŝ), B(S_i))."""
    return lam * jaccard(verb_set(plan_verbs), verb_set(demo_verbs)) + \
        (1 - lam) * jaccard(bigram_set(plan_verbs), bigram_set(demo_verbs))


def normalise(x: np.ndarray) -> np.ndarray:
    """Min–max over the candidates (0 when they are all equal) [I]."""
    x = np.asarray(x, dtype=float)
    span = x.max() - x.min() if x.size else 0.0
    return (x - x.min()) / span if span > 0 else np.zeros_like(x)


def dynamic_scores(vis: np.ndarray, plan_verbs: Sequence[str], demo_verbs: Sequence[Sequence[str]], alpha: float,
                   lam: float) -> np.ndarray:
    """s_i = α·s̃_i^vis + (1 − α)·s_i^plan over the candidate demos."""
    sp = np.array([plan_similarity(plan_verbs, v, lam) for v in demo_verbs])
    return alpha * normalise(vis) + (1 - alpha) * sp


def top_k(scores: np.ndarray, k: int) -> list[int]:
    """Indices of the k best scores (ties by index)."""
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
    return order[:k]


def greedy_coverage(gap: set[str], token_sets: Sequence[set[str]], lengths: Sequence[int],
                    weights: dict[str, float], gamma: float, k_cov: int, exclude: Sequence[int] = ()) -> list[int]:
    """D_cov: repeatedly add the demo maximising Σ_{t ∈ T(d) ∩ (G \\ C)} w_t / (1 + γ·|S_d|);
    stop after k_cov demos, when G is covered, or when no demo adds a gap token."""
    chosen: list[int] = []
    covered: set[str] = set()
    banned = set(exclude)
    while len(chosen) < k_cov and gap - covered:
        best, best_gain = -1, 0.0
        for i, ts in enumerate(token_sets):
            if i in banned or i in chosen:
                continue
            gain = sum(weights.get(t, 0.0) for t in ts & (gap - covered)) / (1 + gamma * lengths[i])
            if gain > best_gain + 1e-12:
                best, best_gain = i, gain
        if best < 0:
            break
        chosen.append(best)
        covered |= token_sets[best] & gap
    return chosen


@dataclass(frozen=True)
class HParams:
    alpha: float
    lam: float
    beta: float
    gamma: float
    k_sim: int
    k_cov: int


def retrieve(method: str, plan_verbs: Sequence[str], vis: np.ndarray, instr: np.ndarray,
             demo_verbs: Sequence[Sequence[str]], hp: HParams, rng: np.random.Generator,
             weights: dict[str, float] | None = None, token_sets: Sequence[set[str]] | None = None,
             xicm_alpha: float = 0.5) -> tuple[list[int], list[int]]:
    """(D_dyn, D_cov) as candidate indices for one query. Methods: dnr, dyn_only, static_only,
    random, xicm (visual + instruction ranking). The demo budget is k_sim + k_cov for every method."""
    n = len(demo_verbs)
    budget = hp.k_sim + hp.k_cov
    if n == 0:
        raise PlanError("the demo library is empty")
    if budget > n:
        raise PlanError(f"k_sim + k_cov = {budget} exceeds the library size {n}")
    if token_sets is None:
        token_sets = [tokens(v) for v in demo_verbs]
    if weights is None:
        weights = idf_weights(token_sets, hp.beta)
    lengths = [len(v) for v in demo_verbs]
    if method == "xicm":
        s = xicm_alpha * normalise(vis) + (1 - xicm_alpha) * normalise(instr)
        return top_k(s, budget), []
    if method == "random":
        return [int(i) for i in rng.choice(n, size=budget, replace=False)], []
    if method == "static_only":
        cov = greedy_coverage(tokens(plan_verbs), token_sets, lengths, weights, hp.gamma, budget)
        return [], cov
    s = dynamic_scores(vis, plan_verbs, demo_verbs, hp.alpha, hp.lam)
    if method == "dyn_only":
        return top_k(s, budget), []
    if method != "dnr":
        raise PlanError(f"unknown retrieval method {method!r}")
    dyn = top_k(s, hp.k_sim)
    have = set().union(*(token_sets[i] for i in dyn)) if dyn else set()
    gap = tokens(plan_verbs) - have
    cov = greedy_coverage(gap, token_sets, lengths, weights, hp.gamma, hp.k_cov, exclude=dyn)
    return dyn, cov


def coverage(plan_verbs: Sequence[str], context_tokens: set[str], coverable: set[str] | None = None) -> float:
    """|T(Ŝ) ∩ T(D)| / |T(Ŝ)| (restricted to coverable tokens when `coverable` is given)."""
    want = tokens(plan_verbs)
    if coverable is not None:
        want = want & coverable
    return len(want & context_tokens) / len(want) if want else 1.0


# ----------------------------------------------------------------------------- recomposition

Code = tuple[int, int, int, str, int, int]     # rel x, y, z (anchor frame), yaw mode, yaw value, gripper


def encode(w0: sim.World, anchor: str, key: np.ndarray) -> Code:
    """A keyframe relative to its anchor object in world state w0: position in the anchor's
    frame (origin its grasp point, axes turned by its yaw); yaw as a change of the gripper's
    yaw when the gripper is closed (manipulating), else relative to the anchor's yaw; gripper bit."""
    o = w0.objects[anchor]
    rel = sim.rot(-(o.yaw // 2), np.asarray(key[:3]) - o.grasp)
    if not w0.open:
        mode, val = "d", (int(key[5]) - w0.yaw) % sim.YAW_BINS
    else:
        mode, val = "a", (int(key[5]) - o.yaw) % sim.YAW_BINS
    return int(rel[0]), int(rel[1]), int(rel[2]), mode, int(val), int(key[6])


def reground(code: Code, w: sim.World, anchor: str) -> np.ndarray:
    """Inverse of `encode` on another world's anchor object (a rigid re-grounding; positions
    clipped to the grid)."""
    if anchor not in w.objects:
        raise PlanError(f"anchor {anchor!r} is not in the scene")
    o = w.objects[anchor]
    pos = o.grasp + sim.rot(o.yaw // 2, code[:3])
    base = w.yaw if code[3] == "d" else o.yaw
    yaw = (base + code[4]) % sim.YAW_BINS
    pos = np.clip(pos, 0, sim.GRID - 1)
    return np.array([*pos, 0, 0, yaw, code[5]], dtype=int)


@dataclass
class Segment:
    demo: int            # demo id
    rank: int            # position of the demo in the context
    verb: str | None     # label (None: unlabelled)
    prev: str | None
    code: Code


def demo_segments(demo_id: int, rank: int, world: sim.World, keys: np.ndarray,
                  labels: Sequence[Skill] | None) -> list[Segment]:
    """A context demo as segments. Labelled: anchor = the label's last argument. Unlabelled:
    anchor = the object whose grasp point is nearest to the keyframe (trajectory imitation)."""
    states = replay_states(world, keys)
    out = []
    for i, k in enumerate(keys):
        if labels is not None:
            verb, args = labels[i]
            anchor = args[-1] if args and args[-1] in states[i].objects else _nearest(states[i], k[:3], k=1)[0].name
            prev = labels[i - 1][0] if i else None
        else:
            verb, prev = None, None
            anchor = _nearest(states[i], k[:3], k=1)[0].name
        out.append(Segment(demo_id, rank, verb, prev, encode(states[i], anchor, k)))
    return out


def choose_segment(verb: str, prev: str | None, segments: Sequence[Segment]) -> Segment | None:
    """The modal (re-grounding) code among the context segments labelled `verb` — a vote that
    outvotes single mislabelled segments; ties go to a segment that follows `prev`, then to
    the better-ranked demo."""
    same = [s for s in segments if s.verb == verb]
    if not same:
        return None
    counts = Counter(s.code for s in same)
    best = max(counts.values())
    return min((s for s in same if counts[s.code] == best), key=lambda s: (s.prev != prev, s.rank, s.demo))


def recompose(plan_skills: Sequence[Skill], world: sim.World, segments: Sequence[Segment],
              verb_similarity: Callable[[str, str], float]) -> tuple[np.ndarray, list[str]]:
    """Variant A: for each skill of Ŝ, a same-verb segment of the retrieved context re-grounded
    on the query's objects (open loop: the kinematics of the query's initial scene predict
    where things are). A verb missing from the context falls back to the nearest verb present.
    Returns (actions (K, 7), notes)."""
    w = world.copy()
    have = sorted({s.verb for s in segments if s.verb})
    acts, notes = [], []
    prev = None
    for verb, args in plan_skills:
        check_skill((verb, args), list(w.objects))
        seg = choose_segment(verb, prev, segments)
        if seg is None:
            if not have:
                raise PlanError("the context has no labelled segments")
            alt = max(have, key=lambda v: (verb_similarity(verb, v), v))
            notes.append(f"{verb} missing from the context: fell back to {alt}")
            seg = choose_segment(alt, prev, segments)
        a = reground(seg.code, w, args[-1])
        try:
            w.step(a)
        except sim.ActionError as err:
            notes.append(str(err))
            break
        acts.append(a)
        prev = verb
    return np.asarray(acts, dtype=int).reshape(-1, 7), notes


def role_map(demo_world: sim.World, query_world: sim.World, query_mentions: Sequence[str], emb: Emb) -> dict:
    """X-ICM-like re-targeting: each demo object → a query object of the same kind, query
    objects ranked by how strongly the instruction mentions them (MiniLM), demo objects in scene
    order; objects of a kind absent from the query map to the best-mentioned query object."""
    ments = [emb(m) for m in query_mentions if m]

    def mention_score(o):
        return max((float(emb(display(o.type)) @ m) for m in ments), default=0.0)

    ranked = sorted(query_world.objects.values(), key=lambda o: (-mention_score(o), o.name))
    out = {}
    by_kind: dict[str, list] = {}
    for o in ranked:
        by_kind.setdefault(o.kind, []).append(o.name)
    used: dict[str, int] = {}
    for o in demo_world.objects.values():
        pool = by_kind.get(o.kind) or [ranked[0].name]
        i = used.get(o.kind, 0)
        out[o.name] = pool[min(i, len(pool) - 1)]
        used[o.kind] = i + 1
    return out


def imitate(demo_world: sim.World, keys: np.ndarray, query_world: sim.World, mapping: dict) -> np.ndarray:
    """Whole-trajectory imitation of one demo: each keyframe relative to its nearest demo object,
    re-grounded on the mapped query object (open loop, as in `recompose`)."""
    states = replay_states(demo_world, keys)
    w = query_world.copy()
    acts = []
    for i, k in enumerate(keys):
        anchor = _nearest(states[i], k[:3], k=1)[0].name
        a = reground(encode(states[i], anchor, k), w, mapping[anchor])
        try:
            w.step(a)
        except sim.ActionError:
            break
        acts.append(a)
    return np.asarray(acts, dtype=int).reshape(-1, 7)


def scene_feature(objects: Sequence[sim.Obj], projection: np.ndarray, n_types: int, type_index: dict) -> np.ndarray:
    """'Visual' feature: a 32×32 top-down class image (each object paints a 3×3 patch with its
    class value) through a fixed random projection (1024 → D), unit norm."""
    img = np.zeros((32, 32))
    for o in objects:
        cx, cy = int(o.pos[0]) * 32 // sim.GRID, int(o.pos[1]) * 32 // sim.GRID
        img[max(cx - 1, 0):cx + 2, max(cy - 1, 0):cy + 2] = (type_index[o.type] + 1) / n_types
    v = img.ravel() @ projection
    return v / (np.linalg.norm(v) + 1e-12)


def is_gripper_segment(w0_open: int, key_grip: int) -> bool:
    return bool(w0_open) != bool(key_grip)


__all__ = ["GRIPPER_VERBS", "Task"]
