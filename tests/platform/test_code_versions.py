"""Every paper asset carries the hash of its DVC stage's dependencies as its code_version, so the
web UI marks exactly the changed paper's assets unsynced."""
from __future__ import annotations

import yaml

from jobs.papers import PAPERS, load_paper
from resources.profiles import PARAMS_FILE
from resources.versioning import stage_code_version


def test_every_paper_asset_has_its_stage_hash_as_code_version():
    for slug in PAPERS:
        paper = load_paper(slug)
        expected = stage_code_version(slug)
        versions = {k.to_user_string(): a.code_versions_by_key[k] for a in paper.assets for k in a.keys}
        assert set(versions.values()) == {expected}, (slug, versions)


def test_changing_one_papers_params_changes_only_its_code_version(tmp_path):
    params = yaml.safe_load(PARAMS_FILE.read_text(encoding="utf-8"))
    changed = tmp_path / "params.yaml"
    params["hir"].setdefault("cpu", {})["probe_key_for_the_test"] = 1
    changed.write_text(yaml.safe_dump(params), encoding="utf-8")
    before = {slug: stage_code_version(slug) for slug in PAPERS}
    after = {slug: stage_code_version(slug, changed) for slug in PAPERS}
    assert [s for s in PAPERS if before[s] != after[s]] == ["hir"]
