"""Bring your own: annotate a mesh file, predict layered points for an image with the smoke checkpoints;
bad input is a clear error (exit status 2)."""
from __future__ import annotations

import numpy as np
import trimesh

from assets.lari import cli
from tests.conftest import smoke_run

run = smoke_run("lari")


def test_annotate_a_mesh_file(tmp_path, capsys):
    mesh = tmp_path / "tube.ply"
    trimesh.creation.annulus(r_min=0.3, r_max=0.4, height=1.0).export(mesh)
    assert cli.main(["annotate", "--mesh", str(mesh), "--out", str(tmp_path / "out"), "--views", "2",
                     "--size", "16"]) == 0
    arrays = np.load(tmp_path / "out" / "annotation.npz")
    assert arrays["z"].shape == (2, 16, 16, 8) and arrays["rgb"].dtype == np.uint8
    assert arrays["stop"].max() == 4 and (tmp_path / "out" / "view_1.png").exists()
    assert "stop index counts" in capsys.readouterr().out


def test_annotate_refuses_empty_meshes_and_bad_focal(tmp_path, capsys):
    empty = tmp_path / "empty.ply"
    trimesh.Trimesh(vertices=np.zeros((3, 3)), faces=np.array([[0, 1, 2]]), process=False).export(empty)
    assert cli.main(["annotate", "--mesh", str(empty), "--out", str(tmp_path / "o")]) == 2
    assert "degenerate" in capsys.readouterr().err
    good = tmp_path / "box.ply"
    trimesh.creation.box().export(good)
    assert cli.main(["annotate", "--mesh", str(good), "--out", str(tmp_path / "o"), "--focal", "-1"]) == 2
    assert "--focal=-1.0: must be > 0" in capsys.readouterr().err


def test_annotate_refuses_an_unknown_mesh_format_naming_the_supported_ones(tmp_path, capsys):
    cloud = tmp_path / "points.xyz"                 # trimesh reads it as a point cloud (was a NotImplementedError)
    cloud.write_text("0 0 0\n1 0 0\n0 1 0\n")
    assert cli.main(["annotate", "--mesh", str(cloud), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{cloud}: unknown mesh format '.xyz'; supported: .obj, .off, .ply, .stl" in err
    assert not (tmp_path / "o").exists()


def test_predict_writes_a_ply_and_refuses_bad_images(run, tmp_path, capsys):
    from PIL import Image

    from assets.lari import runs as R

    rgb = R._arrays(run.data_dir / "lari" / "rgb_object.npz")["rgb"][0]
    image = tmp_path / "view.png"
    Image.fromarray(rgb).save(image)
    out = tmp_path / "points.ply"
    assert cli.main(["predict", "--image", str(image), "--data-dir", str(run.data_dir), "--out", str(out)]) == 0
    header = out.read_text().splitlines()
    assert header[0] == "ply" and header[2].startswith("element vertex")
    np.save(tmp_path / "wrong.npy", np.zeros((8, 8, 3), np.uint8))
    assert cli.main(["predict", "--image", str(tmp_path / "wrong.npy"), "--data-dir", str(run.data_dir)]) == 2
    assert "(16, 16, 3)" in capsys.readouterr().err
    np.save(tmp_path / "nan.npy", np.full(rgb.shape, np.nan, np.float32))
    assert cli.main(["predict", "--image", str(tmp_path / "nan.npy"), "--data-dir", str(run.data_dir)]) == 2
    assert "non-finite" in capsys.readouterr().err
    ckpt = run.data_dir / "lari" / "checkpoints"
    assert cli.main(["predict", "--image", str(image), "--layers", "4", "--checkpoint",
                     str(ckpt / "pointmap_object_L1_s0.pt"), "--stop-checkpoint", str(ckpt / "stop_object_L4_s0.pt"),
                     "--out", str(tmp_path / "x.ply")]) == 2
    assert "L = 1 layers, expected L = 4" in capsys.readouterr().err
