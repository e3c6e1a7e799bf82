"""Unit tests of assets/common/inputs.py."""

import json
import re

import numpy as np
import pytest

from assets.common import inputs
from assets.common.inputs import InputError


@pytest.mark.parametrize(
    "content, needle",
    [(None, "no such file"), (b"", "empty"), (b"\xff\xfe\x00a", "not UTF-8"), (b"a;b\n1;2\n", "';'"),
     (b"a,a\n1,2\n", "duplicated"), (b"a,b\n", "header only"), (b"x,b\n1,2\n", "missing column")],
)
def test_read_csv_refuses(tmp_path, content, needle):
    p = tmp_path / "f.csv"
    if content is not None:
        p.write_bytes(content)
    with pytest.raises(InputError, match=needle) as e:
        inputs.read_csv(p, required=("a", "b"))
    assert str(p) in str(e.value)


def test_read_csv_bom_ok(tmp_path):
    p = tmp_path / "f.csv"
    p.write_bytes(b"\xef\xbb\xbfa,b\n1,2\n")
    assert inputs.read_csv(p, required=("a", "b")) == [{"a": "1", "b": "2"}]


def test_jsonl_empty_and_parse_error(tmp_path):
    p = tmp_path / "f.jsonl"
    p.write_text("\n\n")
    with pytest.raises(InputError, match="empty"):
        inputs.read_jsonl(p)
    p.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(InputError, match="line 2 column"):
        inputs.read_jsonl(p)


def test_run_cli_exit2(capsys):
    @inputs.run_cli
    def main(argv=None):
        raise InputError("x.csv: file is empty\n  (second line folded)")

    assert main([]) == 2
    err = capsys.readouterr().err
    assert err == "error: x.csv: file is empty (second line folded)\n"

    @inputs.run_cli(as_json=True)
    def main_json(argv=None):
        raise InputError("y.csv: header only")

    assert main_json([]) == 2
    assert json.loads(capsys.readouterr().err) == {"error": "y.csv: header only"}


def test_check_range():
    with pytest.raises(InputError, match="alpha"):
        inputs.check_range("alpha", 1.5, 0, 1)
    assert inputs.check_range("alpha", 0.1, 0, 1) == 0.1
    with pytest.raises(InputError, match=re.escape("--tau=0: must lie in (0, 1]")):
        inputs.check_range("--tau", 0, 0, 1, lo_open=True)
    assert inputs.check_range("--tau", 1, 0, 1, lo_open=True) == 1
    with pytest.raises(InputError, match="--k=-1: must be >= 0"):
        inputs.check_range("--k", -1, 0)
    for bad in (float("nan"), float("inf"), True, "3"):
        with pytest.raises(InputError, match="finite number"):
            inputs.check_range("--x", bad, 0)


def test_read_csv_row_limit_stops_early_and_ragged_rows(tmp_path):
    p = tmp_path / "big.csv"
    p.write_text("a,b\n" + "1,2\n" * 50)
    assert len(inputs.read_csv(p, max_rows=50)) == 50
    with pytest.raises(InputError, match="more than 49 data rows"):
        inputs.read_csv(p, max_rows=49)
    p.write_text("a,b\n1,2\n3\n")
    with pytest.raises(InputError, match="row 1 has 1 fields, header has 2"):
        inputs.read_csv(p)


def test_read_frame_and_check_finite(tmp_path):
    p = tmp_path / "f.csv"
    p.write_text("x,y,label\n0.5,1,a\n0.25,nan,b\n0.75,inf,\n2,3,c\n")
    frame = inputs.read_frame(p, required=("x", "y"))
    assert list(frame.columns) == ["x", "y", "label"] and frame["x"].dtype.kind == "f"
    inputs.check_finite(frame, ["x"], p)
    with pytest.raises(InputError, match=r"column 'y' row 1: NaN"):
        inputs.check_finite(frame, ["y"], p)
    frame.loc[1, "y"] = 0.0
    with pytest.raises(InputError, match=r"column 'y' row 2: infinite value"):
        inputs.check_finite(frame, ["y"], p)
    with pytest.raises(InputError, match=r"column 'x' row 3: value above 1 2\.0"):
        inputs.check_finite(frame, ["x"], p, lo=0, hi=1)
    with pytest.raises(InputError, match=r"column 'label' row 0: text 'a' \(and 2 more rows\)"):
        inputs.check_finite(frame, ["label"], p, allow_nan=True)


@pytest.mark.parametrize("text, needle", [
    ('{"a": 1, "a": 2}', "line 1: duplicated key(s) 'a'"),
    ('{"a": NaN}', "line 1: NaN is not a JSON number"),
    ('\n{"a": -Infinity}', "line 2: -Infinity is not a JSON number"),
])
def test_jsonl_refuses_duplicated_keys_and_non_numbers(tmp_path, text, needle):
    p = tmp_path / "f.jsonl"
    p.write_text(text)
    with pytest.raises(InputError, match=re.escape(needle)):
        inputs.read_jsonl(p)
    q = tmp_path / "f.json"
    q.write_text(text)
    with pytest.raises(InputError, match=re.escape(needle.split(": ", 1)[1])):
        inputs.read_json(q)


def test_read_text_binary_and_bom_only(tmp_path):
    p = tmp_path / "t.txt"
    p.write_bytes(b"ab\x00cd")
    with pytest.raises(InputError, match="binary data"):
        inputs.read_text(p)
    p.write_bytes(b"\xef\xbb\xbf\n")
    with pytest.raises(InputError, match="BOM and whitespace only"):
        inputs.read_text(p)
    p.write_bytes(b"\xef\xbb\xbfhello")
    assert inputs.read_text(p) == "hello"


def test_read_npz_refuses_garbage_and_pickles(tmp_path):
    p = tmp_path / "a.npz"
    np.savez(p, x=np.arange(3))
    assert inputs.read_npz(p)["x"].tolist() == [0, 1, 2]
    p.write_bytes(b"\x93NUMPY not an archive")
    with pytest.raises(InputError, match="not a zip file"):
        inputs.read_npz(p)
    np.savez(p, x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(InputError, match="refused"):
        inputs.read_npz(p)


def test_read_mesh_formats_and_refusals(tmp_path):
    import trimesh

    box = trimesh.creation.box()
    for ext in inputs.MESH_FORMATS:
        path = tmp_path / f"box{ext}"
        box.export(path)
        v, f = inputs.read_mesh(path)
        assert f.shape == (12, 3) and np.allclose(v[f].mean(axis=(0, 1)), 0, atol=0.2), ext   # STL: unindexed
    cases = {"m.xyz": (b"0 0 0\n", "unknown mesh format '.xyz'; supported: .obj, .off, .ply, .stl"),
             "m.obj": (b"v 0 0 0\nv 1 0 0\nv 0 1 0\n", "no faces"),
             "n.obj": (b"v 0 0 0\nv nan 0 0\nv 0 1 0\nf 1 2 3\n", "non-finite coordinates at vertex 1"),
             "u.obj": (b"v 0 0 0\n# \xff\n", "not UTF-8"),
             "g.ply": (bytes(range(1, 200)), "PLY"),
             "noext": (b"v 0 0 0\n", "(no extension)")}
    for name, (data, needle) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(InputError, match=re.escape(needle)) as e:
            inputs.read_mesh(tmp_path / name)
        assert str(tmp_path / name) in str(e.value)


def test_read_image_formats_and_refusals(tmp_path):
    from PIL import Image

    rgb = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
    Image.fromarray(rgb).save(tmp_path / "a.png")
    assert np.array_equal(inputs.read_image(tmp_path / "a.png"), rgb)
    np.save(tmp_path / "a.npy", rgb.astype(np.float32) / 255)
    assert inputs.read_image(tmp_path / "a.npy").dtype == np.float32
    (tmp_path / "b.png").write_bytes(b"\x89PNG broken")
    with pytest.raises(InputError, match="not a valid PNG image"):
        inputs.read_image(tmp_path / "b.png")
    (tmp_path / "c.gif").write_bytes(b"GIF89a")
    with pytest.raises(InputError, match=re.escape("supported: .png, .jpg, .jpeg, .npy")):
        inputs.read_image(tmp_path / "c.gif")
    np.save(tmp_path / "d.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match="not a valid .npy array"):
        inputs.read_image(tmp_path / "d.npy")
