"""Same seed twice → byte-identical outputs (md5), in two separate data directories."""
from __future__ import annotations

import dagster as dg

from assets.oscs import definitions as oscs
from resources.versioning import file_md5


def _run(tmp_path, monkeypatch, name):
    from jobs.definitions import resources
    from resources.compute import ComputeResource

    root = tmp_path / name
    root.mkdir()
    monkeypatch.setenv("PAPERLAB_DATA_DIR", str(root))
    res = resources()
    res["compute"] = ComputeResource(profile="smoke")
    upto_decisions = [a for a in oscs.assets if a.key != oscs.REPORT_KEY]
    assert dg.materialize(upto_decisions, resources=res).success
    return {p.relative_to(root).as_posix(): file_md5(p) for p in sorted(root.rglob("*"))
            if p.is_file() and p.suffix in {".parquet", ".json"} and "results" not in p.parts}


def test_same_seed_gives_identical_files(tmp_path, monkeypatch):
    first = _run(tmp_path, monkeypatch, "a")
    second = _run(tmp_path, monkeypatch, "b")
    assert {"oscs/benign_corpus.parquet", "oscs/streams.parquet", "oscs/decisions.parquet"} <= set(first)
    # the checkpoint sidecar carries the git sha of the run, identical here as well
    assert first == second
