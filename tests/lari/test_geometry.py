"""The annotation engine: caster vs the analytic sphere and trimesh's intersector, de-duplication, the
pixel-centre convention, layered GT invariants, bad meshes / intrinsics, deterministic array files."""
from __future__ import annotations

import numpy as np
import pytest
import trimesh

from assets.lari import data as D
from assets.lari import render as RD
from assets.lari import runs


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield


def test_icosphere_hits_match_the_analytic_sphere_within_facet_error():
    sphere = trimesh.creation.icosphere(subdivisions=3, radius=0.5)
    # facet error: the inscribed radius of the facets is ≥ r·cos(max edge angle)
    centres = sphere.triangles_center
    r_in = np.abs((centres * sphere.face_normals).sum(1)).min()
    rng = np.random.default_rng(0)
    origin = np.array([0.0, 0.0, -2.0])
    target = rng.uniform(-0.3, 0.3, size=(200, 3)) * [1, 1, 0]
    d = target - origin
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    t, face = RD.cast(sphere.vertices, sphere.faces, np.broadcast_to(origin, d.shape).copy(), d)
    z, _ = RD.dedupe(t, face)
    assert (np.isfinite(z).sum(1) == 2).all()                   # entry and exit on every ray
    b = (origin * d).sum(1)
    disc = np.sqrt(b ** 2 - ((origin ** 2).sum() - 0.25))
    exact = np.stack([-b - disc, -b + disc], 1)                 # analytic |o + t d| = 0.5
    inner_b = np.sqrt(np.maximum(b ** 2 - ((origin ** 2).sum() - r_in ** 2), 0))
    bound = np.abs(np.stack([-b - inner_b, -b + inner_b], 1) - exact) + 1e-9   # the sphere of radius r_in
    assert (np.abs(z[:, :2] - exact) <= bound).all()
    assert np.abs(z[:, :2] - exact).max() < 0.01


def test_hits_equal_trimesh_multi_hit_intersector_on_100_rays():
    rng = np.random.default_rng(3)
    mesh = D.object_mesh("cup", rng)
    R, C = D.object_cameras(rng, 1, (1.5, 2.2))[0]
    target = D.sample_surface(mesh, 100, rng)                    # rays aimed at the surface: every one hits
    d = target - C
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    d_cam = d @ R                                                # camera-frame directions (for z = t · d_z)
    o = np.broadcast_to(C, d.shape).copy()
    t, face = RD.cast(mesh.vertices, mesh.faces, o, d)
    ours, _ = RD.dedupe(t * d_cam[:, 2:3], face)
    theirs = runs.trimesh_hits(mesh, o, d, d_cam)
    assert runs.same_hits(ours, theirs) == 100
    assert (np.isfinite(ours).sum(1) >= 2).all() and (np.isfinite(ours).sum(1) >= 4).any()


def test_dedupe_merges_shared_edge_hits_but_keeps_thin_walls():
    z = np.array([[1.0, 1.0 + 1e-9, 1.0 + 1e-5, np.inf]])
    f = np.array([[3, 4, 5, -1]])
    out, faces = RD.dedupe(z, f)
    assert out[0, :2].tolist() == [1.0, 1.0 + 1e-5] and np.isinf(out[0, 2:]).all()
    assert faces[0, :2].tolist() == [3, 5]
    # a ray through a shared edge of a box: trimesh-style inclusive test returns both faces, dedupe keeps one
    box = trimesh.creation.box(extents=[1, 1, 1])
    o, d = np.array([[0.0, 0.0, -3.0]]), np.array([[0.0, 0.0, 1.0]])   # through the diagonal of the faces
    t, face = RD.cast(box.vertices, box.faces, o, d)
    assert np.isfinite(t).sum() == 4                                   # two triangles × two faces
    z, _ = RD.dedupe(t, face)
    assert np.isfinite(z).sum() == 2 and np.allclose(z[0, :2], [2.5, 3.5])


def test_project_of_unproject_is_the_pixel_within_1e_3_px():
    rng = np.random.default_rng(1)
    z = rng.uniform(0.5, 3.0, size=(16, 16, 3))
    f = D.focal_length(16)
    uv = RD.project(RD.unproject(z, f), f, 16, 16)
    grid = np.stack(np.meshgrid(np.arange(16), np.arange(16)), -1)[:, :, None, :]
    assert np.abs(uv - grid).max() < 1e-3
    # and the caster's points lie on their pixel's ray (the same +0.5 convention)
    d = RD.pixel_directions(16, 16, f)
    assert np.abs(RD.project(d, f, 16, 16) - grid[:, :, 0]).max() < 1e-9


def test_a_tube_seen_from_the_side_gives_four_sorted_layers_at_known_depths():
    tube = trimesh.creation.annulus(r_min=0.3, r_max=0.4, height=1.0, sections=64)
    # camera on −y at distance 2, looking at the origin: the centre ray crosses walls at y = −.4, −.3, .3, .4
    R = D.look_at(np.array([0.0, -2.0, 0.0]), np.zeros(3))
    lay = RD.layered_view(tube.vertices, tube.faces, R, np.array([0.0, -2.0, 0.0]), 32, D.focal_length(32), 8, 0.03)
    assert lay.stop[16, 16] == 4 and lay.count[16, 16] == 4
    cos_half = np.cos(np.pi / 64)                       # facets of a 64-gon lie at r·cos(π/64) between corners
    z = lay.z[16, 16, :4]
    assert (np.diff(z) > 0).all()
    assert np.all(np.abs(z - np.array([1.6, 1.7, 2.3, 2.4])) < 0.4 * (1 - cos_half) + 0.02)
    # prefix mask and S = Σ mask everywhere; parity even on a closed mesh
    valid = lay.z > 0
    assert not (valid[..., 1:] & ~valid[..., :-1]).any() and (valid.sum(-1) == lay.stop).all()
    assert (lay.count % 2 == 0).all()


def test_small_layers_are_dropped_with_every_deeper_one():
    tube = trimesh.creation.annulus(r_min=0.3, r_max=0.4, height=1.0, sections=64)
    C = np.array([0.0, -2.0, 0.0])
    R = D.look_at(C, np.zeros(3))
    full = RD.layered_view(tube.vertices, tube.faces, R, C, 32, D.focal_length(32), 8, 0.0)
    area = [(full.stop > l).sum() for l in range(4)]
    ratio = area[2] / area[0]
    cut = RD.layered_view(tube.vertices, tube.faces, R, C, 32, D.focal_length(32), 8, ratio + 1e-6)
    assert cut.stop.max() == 2 and (cut.z[..., 2:] == 0).all()


@pytest.mark.parametrize("vertices,faces,message", [
    (np.zeros((0, 3)), np.zeros((0, 3), int), "vertices must be"),
    (np.eye(3), np.zeros((0, 3), int), "empty mesh"),
    (np.zeros((3, 3)), np.array([[0, 1, 2]]), "degenerate"),
    (np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0.0]]), np.array([[0, 1, 2]]), "degenerate"),
    (np.array([[0, 0, 0], [1, 0, 0], [np.nan, 1, 0]]), np.array([[0, 1, 2]]), "non-finite"),
    (np.eye(3), np.array([[0, 1, 5]]), "outside"),
])
def test_bad_meshes_raise_clear_errors(vertices, faces, message):
    with pytest.raises(D.MeshError, match=message):
        D.validate_mesh(vertices, faces)


@pytest.mark.parametrize("f", [0.0, -3.0, float("nan")])
def test_non_positive_focal_is_refused(f):
    with pytest.raises(RD.CameraError, match="focal length"):
        RD.pixel_directions(8, 8, f)


def test_generated_objects_are_watertight_unit_bbox_and_rgb_matches_layer1():
    rng = np.random.default_rng(5)
    for generator in D.OBJECT_GENERATORS:
        mesh = D.object_mesh(generator, rng)
        assert D.is_watertight(mesh), generator
        side = mesh.vertices.max(0) - mesh.vertices.min(0)
        assert abs(side.max() - 1) < 1e-9 and np.abs(mesh.vertices.max(0) + mesh.vertices.min(0)).max() < 1e-9
        R, C = D.object_cameras(rng, 1, (1.5, 2.2))[0]
        lay = RD.layered_view(mesh.vertices, mesh.faces, R, C, 16, D.focal_length(16), 8, 0.03)
        rgb = RD.shade(mesh.vertices, mesh.faces, mesh.part, lay, R, C, D.focal_length(16),
                       np.array([[0.3, 0.3, 0.3]]), np.array([0.0, 0.0, 1.0]), 4.0)
        assert (RD.foreground(rgb) == (lay.face >= 0)).all(), generator


def test_saved_arrays_are_byte_identical(tmp_path):
    arrays = {"a": np.arange(10.0), "b": np.ones((2, 3), np.int8)}
    one, two = D.save_arrays(tmp_path / "1.npz", arrays), D.save_arrays(tmp_path / "2.npz", arrays)
    assert one.read_bytes() == two.read_bytes()
    back = D.load_arrays(one)
    assert np.array_equal(back["a"], arrays["a"]) and back["b"].dtype == np.int8
