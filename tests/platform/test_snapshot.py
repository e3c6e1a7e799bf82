"""Snapshot of every asset spec (key, deps, group, kinds, tags, pool, checks).

A change to the asset graph shows up as a reviewed diff of snapshots/asset_specs.json.
After an intended change: PAPERLAB_UPDATE_SNAPSHOTS=1 pytest tests/platform/test_snapshot.py
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from jobs.definitions import defs

SNAPSHOT = Path(__file__).parent / "snapshots" / "asset_specs.json"


def asset_spec_snapshot() -> dict:
    graph = defs.resolve_asset_graph()
    specs = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        specs[key.to_user_string()] = {
            "group": node.group_name,
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "kinds": sorted(node.kinds),
            "tags": dict(sorted(node.tags.items())),
            "pool": node.pools and sorted(node.pools) or None,
            "checks": sorted(f"{c.name}{' (blocking)' if graph.get(c).blocking else ''}"
                             for c in node.check_keys),
        }
    return specs


def test_asset_specs_match_snapshot():
    current = asset_spec_snapshot()
    if os.environ.get("PAPERLAB_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert current == expected, ("the asset graph changed; review and update the snapshot with "
                                 "PAPERLAB_UPDATE_SNAPSHOTS=1")
