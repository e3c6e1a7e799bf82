"""The generic top-level names resolve to this repository, never to site-packages."""
from __future__ import annotations

import importlib
import importlib.metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["assets", "resources", "jobs"])
def test_top_level_package_is_this_repo(name):
    module = importlib.import_module(name)
    assert Path(module.__file__).resolve().parent == REPO / name


def test_project_installs_no_top_level_packages():
    try:
        files = importlib.metadata.files("paperlab") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("paperlab is not pip-installed in this environment")
    installed = {Path(str(f)).parts[0] for f in files}
    assert not installed & {"assets", "resources", "jobs"}


@pytest.mark.parametrize("path", ["pyproject.toml", "Makefile", "workspace.yaml", "dvc.yaml",
                                  "params.yaml", "README.md", ".ci/run", ".dagster/dagster.yaml"])
def test_layout_files_exist(path):
    assert (REPO / path).is_file()
