"""The paper contract over the registry: every paper's smoke group materializes completely
(once per session, shared with the paper's own tests), writes its report, warehouse rows
and run record, keeps run ids and git shas out of every DVC-tracked file, and reruns to the
same bytes; every profile's parameters parse into the paper's typed parameters."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from jobs.papers import PAPERS, load_paper
from resources.profiles import PROFILES, load_params
from resources.versioning import file_md5, git_sha
from tests.conftest import assert_group_complete, materialize_group, smoke_resources_dict

SLUGS = list(PAPERS)


def dvc_tracked(root, slug) -> dict[str, str]:
    """md5 of every file DVC tracks for the paper (its stage's outputs)."""
    places = [root / slug, root / "results" / slug, root / "reports" / slug / "plots"]
    files = [p for base in places if base.exists() for p in sorted(base.rglob("*")) if p.is_file()]
    files += [root / "reports" / slug / name for name in ("REPORT.md", "metrics.json")]
    return {p.relative_to(root).as_posix(): file_md5(p) for p in files if p.exists()}


@pytest.mark.parametrize("slug", SLUGS)
def test_smoke_group_is_complete_and_published(smoke, slug):
    run = smoke(slug)
    assert_group_complete(run)
    paper, root = run.paper, run.data_dir
    report = root / "reports" / slug
    assert (report / "REPORT.md").read_text(encoding="utf-8").startswith(f"# {slug} — benchmark report (smoke")
    stable = pd.read_parquet(root / "results" / slug / "claims.parquet")
    timed = root / "runs" / slug / "claims_timings.parquet"
    claims = pd.concat([stable, pd.read_parquet(timed)]) if timed.exists() else stable
    assert sorted(claims["claim_id"]) == sorted([*paper.claim_ids, *paper.observation_ids])
    # metrics.json (DVC-tracked) counts the reproducible claims; wall-clock ones are run records
    metrics = json.loads((report / "metrics.json").read_text())
    assert metrics["claims_total"] == int((stable["kind"] == "claim").sum())
    assert metrics["claims_total"] + int((claims["volatile"] & (claims["kind"] == "claim")).sum()) == \
        len(paper.claim_ids)
    record = json.loads((root / "runs" / slug / "run.json").read_text())
    assert record["run_id"] == run.result.run_id and record["profile"] == "smoke"


@pytest.mark.parametrize("slug", SLUGS)
def test_dvc_tracked_files_carry_no_run_id_or_git_sha(smoke, slug):
    run = smoke(slug)
    markers = [run.result.run_id.encode(), git_sha().split("-")[0].encode()]
    offenders = [path for path in dvc_tracked(run.data_dir, slug)
                 if any(m in (run.data_dir / path).read_bytes() for m in markers)]
    assert not offenders, f"run ids / git shas belong in data/runs/, found in {offenders}"


@pytest.mark.parametrize("slug", SLUGS)
def test_rerun_at_the_same_seed_writes_the_same_bytes(smoke, slug, tmp_path):
    first = smoke(slug)
    second = tmp_path / "data"
    second.mkdir()
    assert materialize_group(first.paper, smoke_resources_dict(), second).success
    a, b = dvc_tracked(first.data_dir, slug), dvc_tracked(second, slug)
    assert a.keys() == b.keys()
    assert {k for k in a if a[k] != b[k]} == set()


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("slug", SLUGS)
def test_every_profile_parses_into_typed_parameters(slug, profile):
    from assets.common.params import parse

    paper = load_paper(slug)
    if paper.params_type is None:
        pytest.skip(f"{slug} has no typed parameters yet")
    parse(paper.params_type, load_params(slug, profile), f"{slug}.{profile}")
