"""LaRI offline data: procedural meshes (objects, rooms), camera rigs, surface samples, array files.

No Dagster import. Units: the world is z-up; every mesh is normalised so its largest bounding-box
side is 1 (unit bbox) and its bbox is centred at the origin. Cameras are OpenCV-style: x right,
y down, z forward; `R` (3, 3) maps camera to world coordinates (its columns are the camera axes in
the world) and `C` (3,) is the camera centre, so X_world = R @ X_cam + C.
"""
from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

OBJECT_GENERATORS = ("tube", "cup", "open_box", "bowl", "union", "mug")
GENERATOR_VERSION = "lari-meshes-1"


class MeshError(ValueError):
    """An empty, non-finite or degenerate mesh (clear error; nothing downstream runs)."""


@dataclass(frozen=True)
class Mesh:
    """A triangle mesh: vertices (V, 3) float64, faces (F, 3) int64, part (F,) int64 (albedo groups)."""

    vertices: np.ndarray
    faces: np.ndarray
    part: np.ndarray

    @property
    def triangles(self) -> np.ndarray:
        """(F, 3, 3) corner coordinates."""
        return self.vertices[self.faces]


def validate_mesh(vertices: np.ndarray, faces: np.ndarray, name: str = "mesh") -> None:
    """Raise MeshError for an empty, non-finite, out-of-range or degenerate (zero-area / zero-extent) mesh."""
    v = np.asarray(vertices)
    f = np.asarray(faces)
    if v.ndim != 2 or v.shape[1] != 3 or len(v) < 3:
        raise MeshError(f"{name}: vertices must be (V ≥ 3, 3), got {v.shape}")
    if f.ndim != 2 or f.shape[1] != 3 or len(f) == 0:
        raise MeshError(f"{name}: faces must be (F ≥ 1, 3), got {f.shape} (empty mesh)")
    if not np.isfinite(v).all():
        raise MeshError(f"{name}: non-finite vertex coordinates")
    if f.min() < 0 or f.max() >= len(v):
        raise MeshError(f"{name}: face indices outside [0, {len(v)})")
    extent = v.max(axis=0) - v.min(axis=0)
    if extent.max() <= 1e-9:
        raise MeshError(f"{name}: degenerate mesh (bounding box extent {extent.tolist()})")
    tri = v[f]
    area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    if area.sum() <= 1e-12:
        raise MeshError(f"{name}: degenerate mesh (total area {area.sum():.3g})")


def normalise(vertices: np.ndarray) -> np.ndarray:
    """Scale so the largest bbox side is 1 and centre the bbox at the origin (the paper's step 1)."""
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    return (vertices - (lo + hi) / 2) / (hi - lo).max()


def _random_rotation(rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _tm_mesh(mesh) -> Mesh:
    faces = np.asarray(mesh.faces, dtype=np.int64)
    return Mesh(np.asarray(mesh.vertices, dtype=np.float64), faces, np.zeros(len(faces), np.int64))


def _primitive(rng: np.random.Generator):
    import trimesh

    kind = rng.choice(["box", "cylinder", "capsule", "sphere"])
    if kind == "box":
        return trimesh.creation.box(extents=rng.uniform(0.2, 0.6, size=3))
    if kind == "cylinder":
        return trimesh.creation.cylinder(radius=rng.uniform(0.1, 0.25), height=rng.uniform(0.3, 0.8), sections=20)
    if kind == "capsule":
        return trimesh.creation.capsule(radius=rng.uniform(0.08, 0.2), height=rng.uniform(0.2, 0.6), count=[12, 12])
    return trimesh.creation.icosphere(subdivisions=2, radius=rng.uniform(0.15, 0.3))


def object_mesh(generator: str, rng: np.random.Generator) -> Mesh:
    """One procedural object: thin-walled hollow shapes (4–6 layers) or unions of overlapping parts,
    under a random non-uniform scale and rotation, normalised to the unit bbox. Watertight by design."""
    import trimesh

    if generator == "tube":
        r_in = rng.uniform(0.2, 0.4)
        mesh = trimesh.creation.annulus(r_min=r_in, r_max=r_in + rng.uniform(0.04, 0.1),
                                        height=rng.uniform(0.5, 1.2), sections=24)
    elif generator == "cup":
        r, h = rng.uniform(0.25, 0.45), rng.uniform(0.4, 0.9)
        w, b = rng.uniform(0.03, 0.07), rng.uniform(0.03, 0.08)
        profile = np.array([[0, 0], [r, 0], [r, h], [r - w, h], [r - w, b], [0, b]])
        mesh = trimesh.creation.revolve(profile, sections=24)
    elif generator == "open_box":
        e = rng.uniform(0.5, 1.0, size=3)
        w = rng.uniform(0.04, 0.08)
        inner = trimesh.creation.box(extents=e - 2 * w)
        inner.apply_translation([0, 0, 2 * w])
        mesh = trimesh.creation.box(extents=e).difference(inner, engine="manifold")
    elif generator == "bowl":                                # a spherical shell cut open at the top
        r = rng.uniform(0.35, 0.5)
        shell = trimesh.creation.icosphere(subdivisions=2, radius=r).difference(
            trimesh.creation.icosphere(subdivisions=2, radius=r * rng.uniform(0.82, 0.9)), engine="manifold")
        cut = trimesh.creation.box(extents=[3 * r, 3 * r, 2 * r])
        cut.apply_translation([0, 0, r * rng.uniform(1.2, 1.6)])     # keeps z < 0.2–0.6 r
        mesh = shell.difference(cut, engine="manifold")
    elif generator == "union":                               # 2–3 overlapping parts, one of them hollow
        r_in = rng.uniform(0.12, 0.2)
        parts = [trimesh.creation.annulus(r_min=r_in, r_max=r_in + rng.uniform(0.03, 0.06),
                                          height=rng.uniform(0.4, 0.8), sections=20)]
        for _ in range(int(rng.integers(1, 3))):
            p = _primitive(rng)
            p.apply_transform(_homogeneous(_random_rotation(rng), rng.uniform(-0.3, 0.3, size=3)))
            parts.append(p)
        mesh = trimesh.boolean.union(parts, engine="manifold")
    elif generator == "mug":                                 # a cup with a torus handle (unioned)
        r, h, w = rng.uniform(0.25, 0.4), rng.uniform(0.5, 0.9), rng.uniform(0.03, 0.06)
        cup = trimesh.creation.revolve(np.array([[0, 0], [r, 0], [r, h], [r - w, h], [r - w, w], [0, w]]),
                                       sections=24)
        handle = trimesh.creation.torus(major_radius=h / 4, minor_radius=rng.uniform(0.025, 0.05),
                                        major_sections=16, minor_sections=8)
        handle.apply_transform(_homogeneous(np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]]), np.array([r, 0, h / 2])))
        mesh = trimesh.boolean.union([cup, handle], engine="manifold")
    else:
        raise ValueError(f"unknown object generator {generator!r}; one of {OBJECT_GENERATORS}")
    out = _tm_mesh(mesh)
    scale = rng.uniform(0.7, 1.3, size=3)
    v = (out.vertices * scale) @ _random_rotation(rng).T
    out = Mesh(normalise(v), out.faces, out.part)
    validate_mesh(out.vertices, out.faces, generator)
    return out


def _homogeneous(rot: np.ndarray, shift: np.ndarray) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = rot, shift
    return m


def _quad(corners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A single-sided rectangle from 4 corners (in order): (4, 3) vertices, (2, 3) faces."""
    return corners, np.array([[0, 1, 2], [0, 2, 3]])


def room_mesh(rng: np.random.Generator, furniture: tuple[int, int] = (2, 4)) -> Mesh:
    """A room: floor and 3 walls (single-sided quads; the 4th side is open for the camera) and 2–4
    furniture pieces (boxes, cylinders, tables) on the floor in the back part. Normalised to the unit bbox.
    Open mesh (not watertight): parity is not checked on rooms."""
    import trimesh

    W, D, H = rng.uniform(1.0, 1.4), rng.uniform(0.9, 1.3), rng.uniform(0.55, 0.8)
    pieces = [_quad(np.array([[0, 0, 0], [W, 0, 0], [W, D, 0], [0, D, 0]])),
              _quad(np.array([[0, D, 0], [W, D, 0], [W, D, H], [0, D, H]])),
              _quad(np.array([[0, 0, 0], [0, D, 0], [0, D, H], [0, 0, H]])),
              _quad(np.array([[W, 0, 0], [W, 0, H], [W, D, H], [W, D, 0]]))]
    n = int(rng.integers(furniture[0], furniture[1] + 1))
    slots = rng.permutation(6)[:n]                         # a 3 × 2 grid over the back 70 % of the room
    for slot in slots:
        cx = W * (0.2 + 0.3 * (slot % 3)) + rng.uniform(-0.04, 0.04)
        cy = D * (0.45 + 0.3 * (slot // 3)) + rng.uniform(-0.04, 0.04)
        kind = rng.choice(["box", "cylinder", "table"])
        if kind == "box":
            e = np.array([rng.uniform(0.12, 0.28), rng.uniform(0.12, 0.28), rng.uniform(0.1, 0.4)])
            m = trimesh.creation.box(extents=e)
            m.apply_translation([cx, cy, e[2] / 2])
        elif kind == "cylinder":
            r, h = rng.uniform(0.05, 0.12), rng.uniform(0.15, 0.45)
            m = trimesh.creation.cylinder(radius=r, height=h, sections=16)
            m.apply_translation([cx, cy, h / 2])
        else:                                                # a table: top slab over 4 legs (unioned)
            tw, td, th = rng.uniform(0.18, 0.3), rng.uniform(0.14, 0.24), rng.uniform(0.15, 0.3)
            top = trimesh.creation.box(extents=[tw, td, 0.03])
            top.apply_translation([0, 0, th - 0.015])
            legs = []
            for sx in (-1, 1):
                for sy in (-1, 1):
                    leg = trimesh.creation.box(extents=[0.025, 0.025, th - 0.03])
                    leg.apply_translation([sx * (tw / 2 - 0.02), sy * (td / 2 - 0.02), (th - 0.03) / 2])
                    legs.append(leg)
            m = trimesh.boolean.union([top, *legs], engine="manifold")
            m.apply_translation([cx, cy, 0])
        m.apply_translation([0, 0, 1e-4])                      # just above the floor: no coplanar faces
        pieces.append((np.asarray(m.vertices), np.asarray(m.faces)))
    verts, faces, part, offset = [], [], [], 0
    for i, (v, f) in enumerate(pieces):
        verts.append(v)
        faces.append(f + offset)
        part.append(np.full(len(f), i))
        offset += len(v)
    v = normalise(np.concatenate(verts).astype(np.float64))
    out = Mesh(v, np.concatenate(faces).astype(np.int64), np.concatenate(part).astype(np.int64))
    validate_mesh(out.vertices, out.faces, "room")
    return out


def is_watertight(mesh: Mesh) -> bool:
    import trimesh

    return bool(trimesh.Trimesh(mesh.vertices, mesh.faces, process=False).is_watertight)


def look_at(centre: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Camera-to-world rotation (3, 3) of an OpenCV camera at `centre` looking at `target` (world z up)."""
    forward = target - centre
    forward = forward / np.linalg.norm(forward)
    up = np.array([0.0, 0.0, 1.0]) if abs(forward[2]) < 0.95 else np.array([0.0, 1.0, 0.0])
    right = np.cross(forward, up)
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    return np.stack([right, down, forward], axis=1)


def focal_length(width: int) -> float:
    """The paper's lens: 35 mm on a 32 mm sensor, f = 35/32 · W pixels."""
    return 35.0 / 32.0 * width


def object_cameras(rng: np.random.Generator, views: int, radius: tuple[float, float]) -> list[tuple]:
    """(R, C) per view: a random point on a sphere of radius U(radius) around the origin, looking at it."""
    out = []
    for _ in range(views):
        d = rng.normal(size=3)
        d /= np.linalg.norm(d)
        c = d * rng.uniform(*radius)
        out.append((look_at(c, np.zeros(3)), c))
    return out


def room_cameras(lo: np.ndarray, hi: np.ndarray, rng: np.random.Generator, views: int) -> list[tuple]:
    """(R, C) per view inside the room bbox [lo, hi] near its open side, looking at the furniture area."""
    size = np.asarray(hi) - np.asarray(lo)
    out = []
    for _ in range(views):
        c = lo + size * np.array([rng.uniform(0.3, 0.7), rng.uniform(0.02, 0.12), rng.uniform(0.45, 0.8)])
        t = lo + size * np.array([rng.uniform(0.35, 0.65), rng.uniform(0.55, 0.75), rng.uniform(0.05, 0.25)])
        out.append((look_at(c, t), c))
    return out


def sample_surface(mesh: Mesh, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, 3) points uniform by area on the mesh surface (world frame)."""
    tri = mesh.triangles
    area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    face = rng.choice(len(tri), size=n, p=area / area.sum())
    a, b = rng.random(n), rng.random(n)
    flip = a + b > 1
    a[flip], b[flip] = 1 - a[flip], 1 - b[flip]
    t = tri[face]
    return t[:, 0] + a[:, None] * (t[:, 1] - t[:, 0]) + b[:, None] * (t[:, 2] - t[:, 0])


def save_arrays(path: Path, arrays: dict[str, np.ndarray]) -> Path:
    """An .npz that np.load reads, byte-identical for identical arrays (fixed zip timestamps)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for name in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, buf.getvalue())
    return path


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}
