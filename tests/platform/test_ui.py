"""Web UI lineage: dagster-webserver on loopback shows every group's assets, edges and checks
(GraphQL), and headless Chromium renders the asset graph page (screenshot kept under
data/reports/ui/)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from jobs.definitions import defs
from jobs.papers import PAPERS
from resources.artifacts import data_root
from resources.profiles import REPO_ROOT

pytestmark = pytest.mark.ui
LOCATION = "jobs.definitions"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  # tall enough that the graph renders every node of the largest group (the UI
                  # only puts on-screen nodes in the DOM)
                  "--window-size=1800,1800", "--virtual-time-budget=20000"]
GROUPS = [*PAPERS, "platform"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _graphql(url: str, query: str) -> dict:
    request = urllib.request.Request(f"{url}/graphql", data=json.dumps({"query": query}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def webserver(tmp_path_factory):
    home = tmp_path_factory.mktemp("dagster_home")
    shutil.copy(REPO_ROOT / ".dagster" / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(REPO_ROOT)}
    port = _free_port()
    webserver_bin = Path(sys.executable).parent / "dagster-webserver"
    proc = subprocess.Popen([str(webserver_bin), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
                            cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # own process group: stop it and its children
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                nodes = _graphql(url, "{ assetNodes { id } }")
                if nodes.get("data", {}).get("assetNodes"):
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("dagster-webserver did not come up with the code location loaded")
            time.sleep(1)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def test_graphql_lineage_matches_definitions(webserver):
    data = _graphql(webserver, """{ assetNodes { assetKey { path } groupName dependencyKeys { path }
        assetChecksOrError { ... on AssetChecks { checks { name blocking } } } } }""")["data"]["assetNodes"]
    served = {"/".join(n["assetKey"]["path"]): n for n in data}
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node, name = graph.get(key), key.to_user_string()
        assert name in served, f"{name} missing from the UI"
        assert served[name]["groupName"] == node.group_name
        assert {"/".join(d["path"]) for d in served[name]["dependencyKeys"]} == \
            {k.to_user_string() for k in node.parent_keys}
        checks = {c["name"]: c["blocking"] for c in served[name]["assetChecksOrError"]["checks"]}
        assert checks == {c.name: graph.get(c).blocking for c in node.check_keys}
    for group in GROUPS:
        assert any(n["groupName"] == group for n in data)


@pytest.mark.parametrize("group", GROUPS)
def test_asset_graph_page_renders_in_chromium(webserver, group, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium)")
    page = f"{webserver}/locations/{LOCATION}/asset-groups/{group}"
    out = data_root() / "reports" / "ui" / f"{group}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    common = [chromium, *CHROMIUM_FLAGS]
    subprocess.run([*common, f"--user-data-dir={tmp_path / 'shot'}", f"--screenshot={out}", page],
                   check=True, capture_output=True, timeout=120)
    assert out.stat().st_size > 20_000
    dom = subprocess.run([*common, f"--user-data-dir={tmp_path / 'dom'}", "--dump-dom", page],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    graph = defs.resolve_asset_graph()
    names = [k.path[-1] for k in graph.get_all_asset_keys() if graph.get(k).group_name == group]
    missing = [n for n in names if not rendered(n, dom)]
    assert not missing, f"asset names not rendered on {page}: {missing}"


def rendered(name: str, dom: str) -> bool:
    """The asset graph shows a node label in full, or middle-truncated ("digits_co…_dataset")."""
    if f">{name}<" in dom:
        return True
    labels = re.findall(r">([^<>]*…[^<>]*)<", dom)
    return any(name.startswith(label.split("…")[0]) and name.endswith(label.split("…")[-1])
               and len(label) > 6 for label in labels)


def test_truncated_labels_count_as_rendered():
    assert rendered("digits_concept_dataset", "<div>digits_co…_dataset</div>")
    assert not rendered("digits_concept_dataset", "<div>spiral_dataset</div>")
    assert rendered("streams", "<span>streams</span>")
