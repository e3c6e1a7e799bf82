"""dvc.lock matches the committed code (issue 50): every stage's code dependencies and params in
dvc.lock hash to what the files hold now, so a warm `make reproduce` after a pull recomputes
nothing. Needs no outputs: file hashes are DVC's (md5 of the bytes; a directory's is the md5 of
its sorted {md5, relpath} list, minus .dvcignore's __pycache__/ and *.pyc, with a ".dir" suffix).

When it fails: a commit changed a paper's code or params without re-running its stage. Re-run
it (`make reproduce PAPERS=<paper>`), or, when the change cannot alter any output (a comment, a
rename verified by the paper's tests), `dvc commit <paper>` and say so in the commit message."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
import yaml

from resources.versioning import NOT_IN_STAGE, file_md5

ROOT = Path(__file__).resolve().parents[2]
LOCK = yaml.safe_load((ROOT / "dvc.lock").read_text(encoding="utf-8"))["stages"]
STAGES = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))


def dvc_md5(path: Path, skip: tuple[str, ...] = ()) -> str:
    """DVC 3's md5 of a file, or of a directory (".dir" suffix), .dvcignore applied: __pycache__/,
    *.pyc, and the relative paths in `skip` (a paper folder's cli.py, NOT_IN_STAGE)."""
    if path.is_file():
        return file_md5(path)
    entries = []
    for folder, subfolders, files in os.walk(path):
        subfolders[:] = [d for d in subfolders if d != "__pycache__"]
        for name in files:
            file = Path(folder) / name
            relpath = file.relative_to(path).as_posix()
            if not name.endswith(".pyc") and relpath not in skip:
                entries.append({"md5": file_md5(file), "relpath": relpath})
    entries.sort(key=lambda e: tuple(e["relpath"].split("/")))
    return hashlib.md5(json.dumps(entries, sort_keys=True).encode()).hexdigest() + ".dir"


def _plain(value):
    """YAML 1.2 numbers: DVC writes 1e-05 quoted, and PyYAML (YAML 1.1) reads an unquoted 1e-05 as a str."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _code_deps(deps: list) -> list:
    """Committed code dependencies only: data/ ones (the inputs fingerprint) are written at run time."""
    return [d for d in deps if not (d if isinstance(d, str) else d["path"]).startswith("data/")]


def test_dir_hash_is_dvcs(tmp_path):
    """Known answer from dvc 3.67.1: `dvc add` of this folder, with the repo's .dvcignore."""
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "a.txt").write_text("a\n")
    (tmp_path / "d" / "sub" / "b.txt").write_text("b\n")
    (tmp_path / "d" / "__pycache__").mkdir()
    (tmp_path / "d" / "__pycache__" / "x.pyc").write_bytes(b"ignored")
    assert dvc_md5(tmp_path / "d" / "a.txt") == "60b725f10c9c85c70d97880dfe8191b3"
    assert dvc_md5(tmp_path / "d") == "849835d274483dc683eb416d6e4f887d.dir"


def test_a_paper_folders_cli_is_outside_its_stage(tmp_path):
    """Known answer from dvc 3.67.1: `dvc add assets/x` with the repo's .dvcignore ignores
    assets/x/cli.py, not assets/x/sub/cli.py."""
    folder = tmp_path / "assets" / "x"
    (folder / "sub").mkdir(parents=True)
    for rel, text in (("a.py", "a\n"), ("cli.py", "c\n"), ("sub/cli.py", "d\n")):
        (folder / rel).write_text(text)
    assert "/assets/*/cli.py" in (ROOT / ".dvcignore").read_text().split()
    assert dvc_md5(folder, skip=NOT_IN_STAGE) == "e37c123f0a3fa271a911d7a8698a0c8f.dir"


def test_every_stage_is_locked():
    assert sorted(LOCK) == sorted(STAGES), "dvc.yaml and dvc.lock name different stages"


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_lock_matches_the_code(stage):
    locked = {d["path"]: d["md5"] for d in _code_deps(LOCK[stage]["deps"])}
    declared = _code_deps(STAGES[stage]["deps"])
    assert sorted(locked) == sorted(declared), f"{stage}: dvc.lock's deps differ from dvc.yaml's"
    stale = [path for path, md5 in locked.items()
             if dvc_md5(ROOT / path, NOT_IN_STAGE if path == f"assets/{stage}" else ()) != md5]
    assert not stale, f"{stage}: dvc.lock records other code for {', '.join(stale)} (module docstring)"
    params = LOCK[stage]["params"]["params.yaml"]
    changed = [key for key, value in params.items() if _plain(PARAMS.get(key)) != _plain(value)]
    assert not changed, f"{stage}: dvc.lock records other params.yaml values for {', '.join(changed)}"
