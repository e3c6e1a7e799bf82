"""Input readers for the bring-your-own-data CLIs (issue 46, first part).

A bad file raises :class:`InputError`; :func:`run_cli` turns it into exit status 2 and one
stderr line that names the file and what is wrong. Rows in messages are data rows counted
from 0 (the first row under the header), as pandas numbers them. Pure module: no dagster import.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
import zipfile
from functools import wraps
from pathlib import Path

MESH_FORMATS = (".obj", ".off", ".ply", ".stl")
TEXT_MESH_FORMATS = (".obj", ".off")
IMAGE_FORMATS = (".png", ".jpg", ".jpeg", ".npy")


class InputError(Exception):
    """A user's input file or parameter is unusable; the message is one line for stderr."""


def _one_line(exc) -> str:
    return " ".join(str(exc).split())


def run_cli(main=None, *, as_json=False):
    """Wrap ``main(argv)``: an :class:`InputError` prints one stderr line (``error: ...``, or
    ``{"error": ...}`` with ``as_json``) and main returns 2. Use as ``@run_cli`` or
    ``@run_cli(as_json=True)``."""

    def decorate(fn):
        @wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except InputError as exc:
                line = json.dumps({"error": _one_line(exc)}) if as_json else f"error: {_one_line(exc)}"
                print(line, file=sys.stderr)
                return 2

        return wrapper

    return decorate(main) if main is not None else decorate


def check_range(name, value, lo=None, hi=None, *, lo_open=False, hi_open=False):
    """Refuse a parameter outside [lo, hi] (or open bounds) before any data is read."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{name}={value!r}: must be a finite number")
    below = lo is not None and (value <= lo if lo_open else value < lo)
    above = hi is not None and (value >= hi if hi_open else value > hi)
    if below or above:
        if lo is not None and hi is not None:
            want = f"lie in {'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}"
        elif lo is not None:
            want = f"be {'>' if lo_open else '>='} {lo}"
        else:
            want = f"be {'<' if hi_open else '<='} {hi}"
        raise InputError(f"{name}={value!r}: must {want}")
    return value


def read_bytes(path) -> bytes:
    """Read a file's bytes; refuse a missing path, a directory, or an empty (or blank) file."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    if p.is_dir():
        raise InputError(f"{p}: is a directory, not a file")
    data = p.read_bytes()
    if not data.strip():
        raise InputError(f"{p}: file is empty" + (" (whitespace only)" if data else ""))
    return data


def _decode(path, data: bytes) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from None
    if "\x00" in text:
        raise InputError(f"{path}: binary data, not text")
    if not text.strip():
        raise InputError(f"{path}: file is empty (BOM and whitespace only)")
    return text


def read_text(path) -> str:
    """Read UTF-8 text (a leading BOM is dropped); refuse missing, empty, binary or non-UTF-8 files."""
    return _decode(path, read_bytes(path))


def _header(path, first: list[str], required) -> list[str]:
    header = [h.strip() for h in first]
    if len(header) == 1 and ";" in header[0]:
        raise InputError(f"{path}: header uses ';' separators; expected ','")
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise InputError(f"{path}: duplicated column(s) {', '.join(dup)}")
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}; header is {', '.join(header)}")
    return header


def _csv_rows(path, text: str, required, max_rows):
    """(header, data rows) of CSV text; stops reading once max_rows is passed."""
    reader = csv.reader(io.StringIO(text))
    try:
        header = _header(path, next(reader), required)
        body = []
        for r in reader:
            if not any(c.strip() for c in r):
                continue
            if max_rows is not None and len(body) >= max_rows:
                raise InputError(f"{path}: more than {max_rows} data rows (the limit)")
            if len(r) != len(header):
                raise InputError(f"{path}: row {len(body)} has {len(r)} fields, header has {len(header)}")
            body.append(r)
    except csv.Error as exc:
        raise InputError(f"{path}: not CSV ({_one_line(exc)})") from None
    if not body:
        raise InputError(f"{path}: header only, no data rows")
    return header, body


def read_csv(path, required=(), *, max_rows=None):
    """Read a CSV into a list of dicts; check header, columns, separators, and row count."""
    header, body = _csv_rows(path, read_text(path), required, max_rows)
    return [dict(zip(header, r, strict=True)) for r in body]


def read_frame(path, required=(), *, max_rows=None):
    """A checked CSV (as :func:`read_csv`) as a pandas DataFrame with pandas' type inference."""
    import pandas as pd

    text = read_text(path)
    _csv_rows(path, text, required, max_rows)
    try:
        frame = pd.read_csv(io.StringIO(text))
    except (pd.errors.ParserError, ValueError) as exc:
        raise InputError(f"{path}: not CSV ({_one_line(exc)[:120]})") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def check_finite(frame, columns, path, *, lo=None, hi=None, allow_nan=False):
    """Refuse text, NaN (unless allow_nan), ±inf or a value outside [lo, hi] in numeric columns,
    naming the column and the first bad row."""
    import numpy as np
    import pandas as pd

    for col in columns:
        raw = frame[col]
        x = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        problems = (("text", np.isnan(x) & raw.notna().to_numpy()),
                    ("NaN (a missing value)", np.isnan(x) & raw.isna().to_numpy() & (not allow_nan)),
                    ("infinite value", np.isinf(x)),
                    (f"value below {lo}", (x < lo) if lo is not None else np.zeros(len(x), bool)),
                    (f"value above {hi}", (x > hi) if hi is not None else np.zeros(len(x), bool)))
        for what, bad in problems:
            rows = np.flatnonzero(bad)
            if len(rows):
                more = f" (and {len(rows) - 1} more rows)" if len(rows) > 1 else ""
                cell = raw.iloc[rows[0]]
                cell = cell.item() if hasattr(cell, "item") else cell
                raise InputError(f"{path}: column {col!r} row {int(rows[0])}: {what} {cell!r}{more}")
    return frame


def _no_duplicate_keys(pairs):
    keys = [k for k, _ in pairs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"duplicated key(s) {', '.join(map(repr, dup))}")
    return dict(pairs)


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def _loads(text: str):
    return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)


def read_jsonl(path, *, max_rows=None):
    """Read JSON Lines; report the line (and column) of a parse error, a duplicated key or a
    NaN / Infinity; refuse zero records."""
    out = []
    for n, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(_loads(line))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {n} column {exc.colno}: {exc.msg}") from None
        except ValueError as exc:
            raise InputError(f"{path}: line {n}: {exc}") from None
        if max_rows is not None and len(out) > max_rows:
            raise InputError(f"{path}: more than {max_rows} records (the limit)")
    if not out:
        raise InputError(f"{path}: no records")
    return out


def read_json(path):
    """Read one JSON document; report the line and column of a parse error; refuse a duplicated
    key or NaN / Infinity."""
    try:
        return _loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None


def read_npz(path):
    """Read an .npz without pickles; refuse a non-zip or a pickled array."""
    import numpy as np

    read_bytes(path)
    if not zipfile.is_zipfile(path):
        raise InputError(f"{path}: not a valid .npz archive (not a zip file)")
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except ValueError as exc:
        raise InputError(f"{path}: refused ({_one_line(exc)[:80]})") from None
    except Exception:
        raise InputError(f"{path}: not a valid .npz archive") from None


def _suffix(path, formats, what) -> str:
    ext = Path(path).suffix.lower()
    if ext not in formats:
        raise InputError(f"{path}: unknown {what} format {ext or '(no extension)'!r}; supported: {', '.join(formats)}")
    return ext


def read_mesh(path):
    """(vertices (V, 3) float64, faces (F, 3) int64) of a mesh file (MESH_FORMATS); refuse another
    extension, a missing / empty / binary text file, a file trimesh cannot parse, a mesh without
    faces, and non-finite vertices."""
    import numpy as np

    ext = _suffix(path, MESH_FORMATS, "mesh")
    data = read_bytes(path)
    if ext in TEXT_MESH_FORMATS:
        _decode(path, data)
    import trimesh

    try:
        mesh = trimesh.load(io.BytesIO(data), file_type=ext[1:], force="mesh", process=False)
        v = np.asarray(getattr(mesh, "vertices", np.zeros((0, 3))), dtype=np.float64).reshape(-1, 3)
        f = np.asarray(getattr(mesh, "faces", np.zeros((0, 3))), dtype=np.int64).reshape(-1, 3)
    except Exception as exc:
        raise InputError(f"{path}: not a valid {ext[1:].upper()} mesh ({type(exc).__name__})") from None
    if len(f) == 0:
        raise InputError(f"{path}: no faces (not a {ext[1:].upper()} mesh, or an empty one)")
    bad = np.flatnonzero(~np.isfinite(v).all(axis=1))
    if len(bad):
        raise InputError(f"{path}: non-finite coordinates at vertex {int(bad[0])}")
    return v, f


def read_image(path):
    """An image file (IMAGE_FORMATS: .png / .jpg via Pillow, .npy without pickles) as an array,
    unchanged (the caller checks shape and dtype); refuse another extension or an unreadable file."""
    import numpy as np

    ext = _suffix(path, IMAGE_FORMATS, "image")
    read_bytes(path)
    if ext == ".npy":
        try:
            return np.load(path, allow_pickle=False)
        except Exception as exc:
            raise InputError(f"{path}: not a valid .npy array ({_one_line(exc)[:80]})") from None
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            return np.asarray(im)
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise InputError(f"{path}: not a valid {ext[1:].upper()} image ({type(exc).__name__})") from None
