"""Shared fixtures. Every test writes under a temporary data directory, never data/.

- `data_dir`: a fresh PAPERLAB_DATA_DIR for one test.
- `smoke(slug)`: the paper's whole smoke group, materialized once per test session into a
  shared directory (every paper test reads the same run instead of repeating it).
- `rerun(paper, [names], tmp_path, monkeypatch)`: a gating test's run — a copy of the smoke
  outputs, then only the named assets (and their checks) materialized again on top of the
  stored upstream values, so a corrupted asset costs seconds, not a whole group.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
DATA_DIR_ENV = "PAPERLAB_DATA_DIR"


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A fresh PAPERLAB_DATA_DIR for one test (the IO manager, reports, warehouse use it)."""
    path = tmp_path / "data"
    path.mkdir()
    monkeypatch.setenv(DATA_DIR_ENV, str(path))
    return path


def typed_params(params_type, slug: str, profile: str = "smoke", **overrides):
    """A paper's parameter block at `profile` (resources.profiles.load_params), deep-merged with
    `overrides`, parsed into its typed dataclass `params_type`; a bad value is named "<slug>.<profile>"."""
    from assets.common.params import parse
    from resources.profiles import deep_merge, load_params

    return parse(params_type, deep_merge(load_params(slug, profile), overrides), f"{slug}.{profile}")


def smoke_resources_dict(**compute_fields) -> dict:
    from jobs.definitions import resources
    from resources.compute import ComputeResource

    res = resources()
    res["compute"] = ComputeResource(profile="smoke", **compute_fields)
    return res


@pytest.fixture
def smoke_resources(data_dir):
    """The project's resources at the smoke profile, writing under data_dir."""
    return smoke_resources_dict()


def outcomes(result) -> dict:
    """{"assets": materialized asset keys (str), "checks": {check name: passed},
    "details": {"<asset>:<check>": (passed, description)}, "success": bool}."""
    assets = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    evaluations = result.get_asset_check_evaluations()
    checks = {e.check_name: e.passed for e in evaluations}
    details = {f"{e.asset_key.to_user_string()}:{e.check_name}": (e.passed, e.description) for e in evaluations}
    return {"assets": assets, "checks": checks, "details": details, "success": result.success}


@dataclass
class SmokeRun:
    paper: object                # PaperDefinition
    result: object               # dagster ExecuteInProcessResult
    seen: dict                   # outcomes(result)
    data_dir: Path

    def value(self, name: str):
        """The stored value of <slug>/<name> (parquet → DataFrame, json → dict)."""
        import pandas as pd

        from resources.artifacts import read_json

        for base in (self.data_dir, self.data_dir / "runs"):
            stem = base / self.paper.slug / name
            if stem.with_suffix(".parquet").exists():
                return pd.read_parquet(stem.with_suffix(".parquet"))
            if stem.with_suffix(".json").exists():
                return read_json(stem.with_suffix(".json"))
        raise FileNotFoundError(f"{self.paper.slug}/{name} was not stored under {self.data_dir}")


def _with_data_dir(path: Path):
    """Context manager: PAPERLAB_DATA_DIR = path for a block (session fixtures can't monkeypatch)."""
    from contextlib import contextmanager

    @contextmanager
    def scope():
        before = os.environ.get(DATA_DIR_ENV)
        os.environ[DATA_DIR_ENV] = str(path)
        try:
            yield path
        finally:
            if before is None:
                os.environ.pop(DATA_DIR_ENV, None)
            else:
                os.environ[DATA_DIR_ENV] = before

    return scope()


def materialize_group(paper, resources: dict, data_dir: Path, selection=None):
    import dagster as dg

    with _with_data_dir(data_dir):
        return dg.materialize([*paper.assets, *paper.asset_checks], resources=resources,
                              selection=selection, raise_on_error=False)


@pytest.fixture(scope="session")
def smoke_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("smoke")


_SMOKE_RUNS: dict[str, SmokeRun] = {}


@pytest.fixture(scope="session")
def smoke(smoke_root):
    """smoke(slug) -> SmokeRun: the paper's whole smoke group, run once per session."""
    from jobs.papers import load_paper

    def get(slug: str) -> SmokeRun:
        if slug not in _SMOKE_RUNS:
            paper = load_paper(slug)
            root = smoke_root / slug
            root.mkdir(exist_ok=True)
            result = materialize_group(paper, smoke_resources_dict(), root)
            _SMOKE_RUNS[slug] = SmokeRun(paper, result, outcomes(result), root)
        return _SMOKE_RUNS[slug]

    return get


def smoke_run(slug: str):
    """The `run` fixture of a paper's test module, declared there as `run = smoke_run("<slug>")`:
    module-scoped, it is the paper's session smoke run (`smoke(slug)`, a SmokeRun), so every test
    of the module reads the one materialized smoke group."""

    @pytest.fixture(scope="module", name="run")
    def run(smoke) -> SmokeRun:
        return smoke(slug)

    return run


@pytest.fixture
def in_smoke_data(run, monkeypatch):
    """The test module's smoke run (its `run` fixture), with the data-directory variable pointing
    at it so checkpoint references resolve there."""
    monkeypatch.setenv(DATA_DIR_ENV, str(run.data_dir))
    return run


def copy_smoke(run: SmokeRun, dest: Path) -> Path:
    """A private copy of a smoke run's data directory (tests may corrupt it)."""
    shutil.copytree(run.data_dir, dest)
    return dest


def rerun_result(run: SmokeRun, names: list[str], dest: Path, drop: tuple[str, ...] = (), **compute_fields):
    """Materialize only <slug>/<name> for `names` (with their checks) on a copy of the smoke
    outputs; returns the Dagster result (to read a failed step's error). Patch the pure function
    feeding the gated asset first. `drop`: paths under the copied data directory to delete first
    (e.g. "runs/<slug>/timings")."""
    import dagster as dg

    root = copy_smoke(run, dest)
    for rel in drop:
        target = root / rel
        shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
    keys = [dg.AssetKey([run.paper.slug, n]) for n in names]
    return materialize_group(run.paper, smoke_resources_dict(**compute_fields), root,
                             selection=dg.AssetSelection.assets(*keys))


def rerun(run: SmokeRun, names: list[str], dest: Path, drop: tuple[str, ...] = (), **compute_fields) -> dict:
    """rerun_result(...) as outcomes(): what materialized and which checks passed."""
    return outcomes(rerun_result(run, names, dest, drop, **compute_fields))


def assert_group_complete(run: SmokeRun) -> dict:
    """The smoke contract of a paper group: the run succeeded, every asset materialized,
    every blocking check ran and passed, and there is one claim check per claim id."""
    paper, seen = run.paper, run.seen
    assert run.result.success
    assert seen["assets"] == {k.to_user_string() for k in paper.keys}
    blocking = {spec.name for c in paper.asset_checks for spec in c.check_specs if spec.blocking}
    assert blocking and all(seen["checks"].get(name) for name in blocking), \
        {n: seen["checks"].get(n) for n in blocking if not seen["checks"].get(n)}
    assert {f"claim_{cid}" for cid in paper.claim_ids} <= set(seen["checks"])
    return seen


def pytest_itemcollected(item):
    """Under pytest-xdist (--dist loadgroup) every test of one paper runs in the same worker,
    so that paper's session smoke run happens once: tests/<slug>/… and the smoke-contract
    tests parametrized by slug share the group <slug>; the web-UI tests share one server.
    (Marked here, at collection, so the mark exists before xdist reads it.)"""
    from jobs.papers import PAPERS

    parts = item.path.parts
    group = None
    if "tests" in parts and len(parts) > parts.index("tests") + 1 and parts[parts.index("tests") + 1] in PAPERS:
        group = parts[parts.index("tests") + 1]
    slug = item.callspec.params.get("slug") if hasattr(item, "callspec") else None
    if slug in PAPERS and item.path.name == "test_smoke_contract.py":
        group = slug
    if item.get_closest_marker("ui"):
        group = "ui"
    if group:
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture
def one_torch_thread():
    """Torch on one intra-op thread for a test (thousands of tiny ops: 2 threads on 2 shared,
    loaded cores thrash, 20-50× slower, measured)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def corrupt_saved_checkpoints(monkeypatch, module, name: str = "save_checkpoint") -> None:
    """Patch `module.<name>` (a save_checkpoint) so every checkpoint it writes gets bytes
    appended after its sidecar recorded the md5: the reload check must then fail."""
    real = getattr(module, name)

    def corrupting(path, state, **kwargs):
        written = real(path, state, **kwargs)
        with open(path, "ab") as fh:
            fh.write(b"garbage")
        return written

    monkeypatch.setattr(module, name, corrupting)


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not __import__("torch").cuda.is_available(), reason="no CUDA device"))]


# The relative differences a device check's parity reports per model: exactly 0 on the CPU, where
# both sides run the same kernels.
PARITY_DIFFS = ("forward_max_rel", "loss_rel_diff", "grad_max_rel", "step_l2_rel_diff", "after_step_loss_rel_diff")


def load_device_check(slug: str):
    """benchmarks/<slug>_device_check.py, imported as a module (it is a script, not a package)."""
    import importlib.util

    script = Path(__file__).resolve().parents[1] / "benchmarks" / f"{slug}_device_check.py"
    spec = importlib.util.spec_from_file_location(f"{slug}_device_check", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_device_check(slug: str, device: str, tmp_path: Path, *extra: str) -> tuple[int, dict | None]:
    """Run benchmarks/<slug>_device_check.py's main at --tiny size on `device`: (exit code, its
    JSON report, or None when it wrote none)."""
    import json

    out = tmp_path / f"{slug}_device_check.json"
    code = load_device_check(slug).main(["--device", device, "--tiny", "--out", str(out), *extra])
    return code, json.loads(out.read_text()) if out.exists() else None


def assert_device_check_times_the_gpu_profile(slug: str, tmp_path: Path) -> dict:
    """A device check (benchmarks/<slug>_device_check.py at --tiny on the CPU) of a paper whose gpu
    profile puts nothing on a device: it exits 0 with parity n/a, every timed part has positive
    seconds a unit and units, the projection adds up, is positive and has a note. Returns the report."""
    code, report = run_device_check(slug, "cpu", tmp_path)
    assert code == 0 and report["paper"] == slug and report["tiny"]
    assert report["parity"].startswith("n/a")
    projection = report["projection"]
    assert projection["parts"] and all(r["seconds_per_unit"] > 0 and r["units"] > 0 for r in projection["parts"])
    assert_projection_adds_up(projection)
    assert projection["gpu_profile_s"] > 0 and projection["note"]
    return report


def assert_projection_adds_up(projection: dict) -> None:
    """A device check's projection: its total is the sum of its phases' seconds."""
    import pytest

    assert projection["gpu_profile_s"] == pytest.approx(sum(p["seconds"] for p in projection["parts"]), abs=1e-3)
