"""Input readers for the bring-your-own-data CLIs (issue 46, first part).

A bad file raises :class:`InputError`; :func:`run_cli` turns it into exit status 2 and one
stderr line that names the file and what is wrong. Pure module: no dagster import.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from functools import wraps
from pathlib import Path


class InputError(Exception):
    """A user's input file or parameter is unusable; the message is one line for stderr."""


def run_cli(main):
    """Wrap ``main(argv)`` so an :class:`InputError` ends with exit 2 and one stderr line."""

    @wraps(main)
    def wrapper(*args, **kwargs):
        try:
            return main(*args, **kwargs)
        except InputError as exc:
            print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
            raise SystemExit(2) from None

    return wrapper


def check_range(name, value, lo=None, hi=None, *, lo_open=False, hi_open=False):
    """Refuse a parameter outside [lo, hi] (or open bounds) before any data is read."""
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{name}={value!r}: must be a finite number")
    if lo is not None and (value <= lo if lo_open else value < lo):
        raise InputError(f"{name}={value!r}: must be {'>' if lo_open else '>='} {lo}")
    if hi is not None and (value >= hi if hi_open else value > hi):
        raise InputError(f"{name}={value!r}: must be {'<' if hi_open else '<='} {hi}")
    return value


def read_bytes(path) -> bytes:
    """Read a file's bytes; refuse a missing path, a directory, or an empty file."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    if p.is_dir():
        raise InputError(f"{p}: is a directory, not a file")
    data = p.read_bytes()
    if not data.strip():
        raise InputError(f"{p}: file is empty")
    return data


def read_text(path) -> str:
    """Read UTF-8 text (a leading BOM is dropped); refuse missing, empty, or non-UTF-8 files."""
    data = read_bytes(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from None
    if "\x00" in text:
        raise InputError(f"{path}: binary data, not text")
    return text


def read_csv(path, required=(), *, max_rows=None):
    """Read a CSV into a list of dicts; check header, columns, separators, and row count."""
    text = read_text(path)
    rows = list(csv.reader(io.StringIO(text)))
    header = [h.strip() for h in rows[0]]
    if len(header) == 1 and ";" in header[0]:
        raise InputError(f"{path}: header uses ';' separators; expected ','")
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise InputError(f"{path}: duplicated column(s) {', '.join(dup)}")
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}; header is {', '.join(header)}")
    body = [r for r in rows[1:] if any(c.strip() for c in r)]
    if not body:
        raise InputError(f"{path}: header only, no data rows")
    if max_rows is not None and len(body) > max_rows:
        raise InputError(f"{path}: {len(body)} rows, limit is {max_rows}")
    out = []
    for i, r in enumerate(body, start=2):
        if len(r) != len(header):
            raise InputError(f"{path}: row {i} has {len(r)} fields, header has {len(header)}")
        out.append(dict(zip(header, r, strict=True)))
    return out


def read_jsonl(path, *, max_rows=None):
    """Read JSON Lines; report the line and column of a parse error; refuse zero records."""
    out = []
    for n, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {n} column {exc.colno}: {exc.msg}") from None
        if max_rows is not None and len(out) > max_rows:
            raise InputError(f"{path}: more than {max_rows} records")
    if not out:
        raise InputError(f"{path}: no records")
    return out


def read_json(path):
    """Read one JSON document; report the line and column of a parse error."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: line {exc.lineno} column {exc.colno}: {exc.msg}") from None


def read_npz(path):
    """Read an .npz without pickles; refuse a non-zip or a pickled array."""
    import numpy as np

    read_bytes(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except ValueError as exc:
        raise InputError(f"{path}: refused ({' '.join(str(exc).split())[:80]})") from None
    except Exception:
        raise InputError(f"{path}: not a valid .npz archive") from None
