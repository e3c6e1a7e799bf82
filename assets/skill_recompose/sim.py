"""TableTop-Skills: a symbolic/kinematic tabletop simulator with AGNOSTOS-style 7-D discrete
keyframe actions — numpy only, no Dagster import.

Units: positions are voxel indices on a GRID³ grid (0..GRID-1); yaw is in 45° bins (0..7, the
scripted scenes use even bins = quarter turns); roll and pitch bins are 0..7 too (unused by the
tasks, kept for the format); the gripper bit is 1 = open, 0 = closed.
An action is the int vector [x, y, z, roll, pitch, yaw, gripper] (shape (7,)).

The executor (`World.step`) applies one keyframe: the gripper moves in a straight line, a held
object follows (articulated parts only along their axis; a held movable may rotate only in a
pure rotation, and is dropped if a keyframe both moves and turns it), then the gripper bit
changes (closing exactly at a graspable's grasp point with matching yaw grabs it; opening drops
a held movable onto whatever is below). Goal flags ("on:lid:jar", "open:drawer", ...) are set
when their predicate first becomes true; a task succeeds when its goal flags were all set, in
order.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from assets.skill_recompose.tasks import GRASPABLE, OBJECT_TYPES, Task

GRID = 20
YAW_BINS = 8
TABLE_Z = 2
LIFT = 4            # voxels a Lift raises
HOVER = 4           # Move ends this far above the target
PULL = 4            # voxels a Pull/Push travels along the part's axis
OPEN_AT = 3         # opening ≥ 3 counts as open
MAX_ACTIONS = 26    # X-ICM executes at most 26 actions


class ActionError(ValueError):
    """A keyframe outside the voxel / Euler / gripper ranges."""


class SceneError(ValueError):
    """A scene or plan refers to an object that is not there."""


def rot(q: int, v) -> np.ndarray:
    """Rotate the integer vector v (x, y, z) by q quarter turns about z (exact)."""
    x, y, z = (int(c) for c in v)
    for _ in range(int(q) % 4):
        x, y = -y, x
    return np.array([x, y, z], dtype=int)


@dataclass
class Obj:
    name: str            # unique in the scene ("drawer", "block#2")
    type: str
    kind: str
    pos: np.ndarray      # (3,) voxel of the object's base (articulated: the handle when closed)
    yaw: int             # 45° bins, even
    opening: int = 0     # articulated / pluggable displacement along the axis
    angle: int = 0       # rotatable: accumulated yaw bins; movable: rotation while held
    z0: int = TABLE_Z

    @property
    def axis(self) -> np.ndarray:
        return rot(self.yaw // 2, (1, 0, 0))

    @property
    def grasp(self) -> np.ndarray:
        """Grasp point (voxel): the handle for articulated parts, the top for pressables."""
        if self.kind in ("articulated", "pluggable"):
            return self.pos + self.opening * self.axis
        if self.kind == "pressable":
            return self.pos + np.array([0, 0, 1])
        return self.pos.copy()

    @property
    def slot(self) -> np.ndarray:
        """Insertion slot of a fixture: one voxel above its base."""
        return self.pos + np.array([0, 0, 1])


@dataclass
class World:
    objects: dict[str, Obj]
    gripper: np.ndarray = field(default_factory=lambda: np.array([GRID // 2, GRID // 2, 12]))
    yaw: int = 0
    open: int = 1
    held: str | None = None
    flags: dict[str, int] = field(default_factory=dict)   # flag -> step it was first set
    t: int = 0
    log: list[str] = field(default_factory=list)

    def copy(self) -> World:
        return copy.deepcopy(self)

    def state(self) -> np.ndarray:
        """The gripper as a 7-D action-like vector."""
        return np.array([*self.gripper, 0, 0, self.yaw, self.open], dtype=int)

    def _flag(self, name: str) -> None:
        if name not in self.flags:
            self.flags[name] = self.t

    def step(self, action) -> None:
        a = np.asarray(action)
        if a.shape != (7,):
            raise ActionError(f"an action has 7 entries [x, y, z, roll, pitch, yaw, gripper], got shape {a.shape}")
        if not np.all(np.isfinite(a.astype(float))) or np.any(a != np.round(a)):
            raise ActionError(f"action entries must be integers, got {a.tolist()}")
        a = a.astype(int)
        if np.any(a[:3] < 0) or np.any(a[:3] >= GRID):
            raise ActionError(f"keyframe position {a[:3].tolist()} outside the voxel grid 0..{GRID - 1}")
        if np.any(a[3:6] < 0) or np.any(a[3:6] >= YAW_BINS):
            raise ActionError(f"Euler bins {a[3:6].tolist()} outside 0..{YAW_BINS - 1}")
        if a[6] not in (0, 1):
            raise ActionError(f"gripper bit must be 0 or 1, got {a[6]}")
        self.t += 1
        p0, p1 = self.gripper.copy(), a[:3].copy()
        delta = p1 - p0
        dyaw = (int(a[5]) - self.yaw + 4) % YAW_BINS - 4          # signed, in bins
        moved = bool(np.any(delta != 0))
        if self.held is not None:
            self._carry(self.objects[self.held], delta, dyaw, moved)
        elif self.open:
            for o in self.objects.values():
                if o.kind == "articulated" and np.array_equal(p0, o.grasp) and moved:
                    along = int(delta @ o.axis)
                    if along < 0 and np.array_equal(delta, along * o.axis):       # an open-gripper push
                        before = o.opening
                        o.opening = max(0, o.opening + along)
                        if before > 0 and o.opening == 0:
                            self._flag(f"closed:{o.name}")
                if o.kind == "rotatable" and np.array_equal(p0, o.grasp) and not moved and dyaw:
                    o.angle += dyaw
                    if abs(o.angle) >= 2:
                        self._flag(f"turned:{o.name}")
        self.gripper, self.yaw = p1, int(a[5])
        if int(a[6]) == 1:
            for o in self.objects.values():
                if o.kind == "pressable" and np.array_equal(p1, o.grasp - np.array([0, 0, 1])) \
                        and np.array_equal(p0, o.grasp):
                    self._flag(f"pressed:{o.name}")
        if self.open and int(a[6]) == 0:
            self._close()
        elif not self.open and int(a[6]) == 1:
            self._release()
        self.open = int(a[6])

    def _carry(self, o: Obj, delta: np.ndarray, dyaw: int, moved: bool) -> None:
        if o.kind == "movable":
            if moved and dyaw:
                self.log.append(f"t{self.t}: {o.name} dropped (moved and turned at once)")
                self._release()
                return
            o.pos = o.pos + delta
            o.yaw = (o.yaw + dyaw) % YAW_BINS
            o.angle += dyaw
            if abs(o.angle) >= 2:
                self._flag(f"rotated:{o.name}")
            for t in self.objects.values():
                if t is o:
                    continue
                above = abs(o.pos[0] - t.pos[0]) <= 1 and abs(o.pos[1] - t.pos[1]) <= 1 and o.pos[2] > t.pos[2]
                if abs(o.angle) >= 4 and above:
                    self._flag(f"poured:{o.name}:{t.name}")
                if moved and delta[2] == 0 and o.pos[2] <= t.pos[2] + 1 and np.array_equal(o.pos[:2], t.pos[:2]):
                    self._flag(f"at:{o.name}:{t.name}")
                if moved and t.kind == "fixture" and np.array_equal(o.pos, t.slot) and dyaw == 0 \
                        and (o.yaw - t.yaw) % 4 == 0:
                    self._flag(f"in:{o.name}:{t.name}")
            if o.pos[2] >= o.z0 + 3:
                self._flag(f"lifted:{o.name}")
        elif o.kind in ("articulated", "pluggable"):
            along = int(delta @ o.axis)
            if dyaw or not np.array_equal(delta, along * o.axis):
                self.log.append(f"t{self.t}: grip on {o.name} slipped (off-axis motion)")
                self.held = None
                return
            o.opening = int(np.clip(o.opening + along, 0, PULL))
            if o.opening >= OPEN_AT:
                self._flag(f"{'open' if o.kind == 'articulated' else 'unplugged'}:{o.name}")
                if o.kind == "pluggable":                 # out of its socket: a free movable now
                    o.pos, o.kind, o.opening, o.z0 = o.pos + o.opening * o.axis, "movable", 0, int(o.pos[2])
        elif o.kind == "rotatable":
            if moved:
                self.log.append(f"t{self.t}: grip on {o.name} slipped (moved while turning)")
                self.held = None
                return
            o.angle += dyaw
            if abs(o.angle) >= 2:
                self._flag(f"turned:{o.name}")

    def _close(self) -> None:
        for o in self.objects.values():
            if o.kind in GRASPABLE and np.array_equal(self.gripper, o.grasp) and (self.yaw - o.yaw) % 4 == 0:
                self.held = o.name
                o.angle = 0 if o.kind == "movable" else o.angle
                return

    def _release(self) -> None:
        name, self.held = self.held, None
        if name is None:
            return
        o = self.objects[name]
        if o.kind != "movable":
            return
        supports = [t for t in self.objects.values() if t is not o and abs(o.pos[0] - t.pos[0]) <= 1
                    and abs(o.pos[1] - t.pos[1]) <= 1 and t.pos[2] < o.pos[2]]
        if supports:
            top = max(supports, key=lambda t: t.pos[2])
            o.pos = np.array([o.pos[0], o.pos[1], top.pos[2] + 1])
            self._flag(f"on:{o.name}:{top.name}")
        else:
            o.pos = np.array([o.pos[0], o.pos[1], TABLE_Z])


def goal_flags(task: Task, names: dict[str, str]) -> list[str]:
    """The task's goal flags with roles replaced by scene object names."""
    out = []
    for g in task.goal:
        kind, *roles = g.split(":")
        out.append(":".join([kind, *(names[r] for r in roles)]))
    return out


def succeeded(world: World, goals: list[str]) -> bool:
    """All goal flags set, in order (ties allowed)."""
    steps = [world.flags.get(g) for g in goals]
    return all(s is not None for s in steps) and steps == sorted(steps)


@dataclass
class Scene:
    task: str
    world: World
    roles: dict[str, str]        # role -> object name

    def observation(self) -> list[dict]:
        """What a policy sees: object name, type, voxel position, yaw bin (the initial obs)."""
        return [{"name": o.name, "type": o.type, "pos": [int(v) for v in o.pos], "yaw": int(o.yaw),
                 "opening": int(o.opening)} for o in self.world.objects.values()]


def _free_spot(rng: np.random.Generator, taken: list[np.ndarray], margin: int = 5) -> np.ndarray:
    for _ in range(500):
        xy = rng.integers(margin, GRID - margin, size=2)
        if all(np.abs(xy - t).max() >= 3 for t in taken):
            return xy
    raise SceneError("could not place the objects (grid too crowded)")


def make_scene(task: Task, rng: np.random.Generator, distractors: int = 2) -> Scene:
    """A randomised scene: positions, yaw (quarter turns; the hinge side of articulated parts),
    1–`distractors` distractor objects of other types."""
    objects, roles, taken = {}, {}, []
    for role, typ in task.objects.items():
        kind = OBJECT_TYPES[typ][0]
        xy = _free_spot(rng, taken)
        taken.append(xy)
        name = typ if typ not in objects else f"{typ}#{len(objects)}"
        objects[name] = Obj(name, typ, kind, np.array([*xy, TABLE_Z]), 2 * int(rng.integers(0, 4)))
        roles[role] = name
        if role in task.start_open:
            objects[name].opening = PULL
    # inserted movables start aligned with their slot's yaw (or a quarter turn off when asked)
    for verb, args in task.skills:
        if verb == "Insert":
            o, t = objects[roles[args[0]]], objects[roles[args[1]]]
            o.yaw = (t.yaw + (2 if args[0] in task.misaligned else 0)) % YAW_BINS
    used = set(task.objects.values())
    pool = [d for d in ("block", "cup", "can", "item", "book", "rubbish", "ball", "money") if d not in used]
    for _ in range(int(rng.integers(1, distractors + 1))):
        typ = pool[int(rng.integers(0, len(pool)))]
        xy = _free_spot(rng, taken)
        taken.append(xy)
        name = f"{typ}#d{len(objects)}"
        objects[name] = Obj(name, typ, OBJECT_TYPES[typ][0], np.array([*xy, TABLE_Z]), 2 * int(rng.integers(0, 4)))
    return Scene(task.name, World(objects), roles)


def expert_keyframe(world: World, verb: str, args: list[str]) -> np.ndarray:
    """The scripted expert's keyframe for one skill in the current world (shape (7,))."""
    objs = world.objects
    for a in args:
        if a not in objs:
            raise SceneError(f"skill {verb}{args} names {a!r}, which is not in the scene")
    p, yaw, g = world.gripper, world.yaw, world.open
    o, t = objs[args[0]], objs[args[-1]]
    if verb == "Reach":
        pos, yaw, g = o.grasp, o.yaw, 1
    elif verb == "Grasp":
        pos, g = p, 0
    elif verb == "Release":
        pos, g = p, 1
    elif verb == "Lift":
        pos = p + np.array([0, 0, LIFT])
    elif verb == "Move":
        pos = t.pos + np.array([0, 0, HOVER])
    elif verb == "Insert":
        pos = t.slot
    elif verb == "Slide":
        pos = np.array([t.pos[0], t.pos[1], p[2]])
    elif verb == "Rotate":
        pos, yaw = p, (yaw + 2) % YAW_BINS
    elif verb == "Pull":
        pos, g = p + PULL * o.axis, 0
    elif verb == "Push":
        pos, g = p - o.opening * o.axis, 1
    elif verb == "Press":
        pos, g = o.grasp - np.array([0, 0, 1]), 1
    else:
        raise SceneError(f"unknown verb {verb!r}")
    return np.array([*pos, 0, 0, yaw, g], dtype=int)


def run_expert(scene: Scene, task: Task) -> tuple[np.ndarray, list[World]]:
    """Scripted demo: keyframes (K, 7) and the world before each keyframe (K + 1 states)."""
    w = scene.world.copy()
    states, keys = [w.copy()], []
    for verb, roles in task.skills:
        k = expert_keyframe(w, verb, [scene.roles[r] for r in roles])
        w.step(k)
        keys.append(k)
        states.append(w.copy())
    return np.stack(keys), states


def execute(scene: Scene, task: Task, actions) -> tuple[bool, str, World]:
    """Run up to MAX_ACTIONS keyframes; success as soon as the goal flags are set in order."""
    w = scene.world.copy()
    goals = goal_flags(task, scene.roles)
    for a in list(actions)[:MAX_ACTIONS]:
        w.step(a)
        if succeeded(w, goals):
            return True, "", w
    missing = [g for g in goals if g not in w.flags]
    reason = f"goal flags not set: {missing}" if missing else "goal flags set out of order"
    return False, (reason + ("; " + "; ".join(w.log) if w.log else "")), w


# ----------------------------------------------------------------------------- traces

def trace(keyframes: np.ndarray, start: np.ndarray, rng: np.random.Generator, steps: int = 6, dwell: int = 2,
          noise: float = 0.03) -> tuple[np.ndarray, np.ndarray]:
    """A low-level trace through the keyframes: cosine-profile interpolation of position and
    yaw (`steps` samples per segment, speed ≈ 0 at the ends), `dwell` still samples at each
    keyframe, Gaussian pose noise. Returns (poses (T, 4) float: x, y, z, yaw; gripper (T,) int;
    the sample index of each scripted keyframe (K,) — ground truth for calibration only)."""
    poses, grip, ends = [], [], []
    prev = np.array([*start[:3], start[5]], dtype=float)
    g_prev = int(start[6])
    for k in keyframes:
        nxt = np.array([*k[:3], k[5]], dtype=float)
        d = nxt - prev
        d[3] = (d[3] + 4) % YAW_BINS - 4
        if np.any(d != 0):
            for s in range(1, steps + 1):
                poses.append(prev + d * (1 - np.cos(np.pi * s / steps)) / 2)
                grip.append(g_prev)
        for _ in range(dwell + (1 if int(k[6]) != g_prev else 0)):
            poses.append(prev + d)
            grip.append(int(k[6]))
        ends.append(len(poses) - 1)
        prev, g_prev = prev + d, int(k[6])
    p = np.asarray(poses) + rng.normal(0, noise, size=(len(poses), 4))
    return p, np.asarray(grip, dtype=int), np.asarray(ends, dtype=int)


def extract_keyframes(poses: np.ndarray, grip: np.ndarray, threshold: float) -> list[int]:
    """Keyframe sample indices: the last sample of every low-speed run (speed < threshold,
    runs split where the gripper bit changes) ∪ the last sample before each gripper change ∪
    the episode end. Speed is the norm of the per-sample change of (x, y, z, yaw)."""
    if len(poses) == 0:
        return []
    speed = np.r_[np.inf, np.linalg.norm(np.diff(poses, axis=0), axis=1)]
    low = speed < threshold
    change = np.r_[False, grip[1:] != grip[:-1]]
    keys = set()
    for i in range(len(poses)):
        end_of_run = low[i] and (i + 1 == len(poses) or not low[i + 1] or change[i + 1])
        if end_of_run or (i + 1 < len(poses) and change[i + 1]):
            keys.add(i)
    keys.add(len(poses) - 1)
    return sorted(keys)


def keyframes_from_trace(poses: np.ndarray, grip: np.ndarray, idx: list[int]) -> np.ndarray:
    """Discrete 7-D actions at the keyframe samples (rounded voxel and yaw bin, gripper)."""
    out = []
    for i in idx:
        x, y, z, yaw = np.round(poses[i]).astype(int)
        out.append([int(np.clip(x, 0, GRID - 1)), int(np.clip(y, 0, GRID - 1)), int(np.clip(z, 0, GRID - 1)),
                    0, 0, int(yaw) % YAW_BINS, int(grip[i])])
    return np.asarray(out, dtype=int).reshape(-1, 7)
