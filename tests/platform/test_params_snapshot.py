"""Every paper × profile resolves to the parameters in snapshots/params.json (base deep-merged
with the profile). A change of a run parameter is then a reviewed diff, never a side effect
of reorganising params.yaml. After an intended change:
PAPERLAB_UPDATE_SNAPSHOTS=1 pytest tests/platform/test_params_snapshot.py
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from jobs.papers import PAPERS
from resources.profiles import PROFILES, load_params
from resources.versioning import params_hash

SNAPSHOT = Path(__file__).parent / "snapshots" / "params.json"


def resolved() -> dict:
    out = {}
    for slug in PAPERS:
        for profile in PROFILES:
            params = load_params(slug, profile)
            out[f"{slug}.{profile}"] = {"params_hash": params_hash(params), "params": params}
    return out


def test_resolved_parameters_match_the_snapshot():
    current = json.loads(json.dumps(resolved(), sort_keys=True, default=str))
    if os.environ.get("PAPERLAB_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    changed = sorted(k for k in set(current) | set(expected) if current.get(k) != expected.get(k))
    assert not changed, f"parameters changed for {changed}; review, then update the snapshot"
