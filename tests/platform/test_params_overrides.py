"""A params_overrides with an unknown key or a wrong type is refused before any asset runs, with
the key's path."""
from __future__ import annotations

import dagster as dg
import pytest

from resources.compute import ComputeResource
from resources.profiles import override_problems


def test_known_overrides_pass():
    assert override_problems({"oscs": {"stream_length": 2000}}) == []
    ComputeResource(profile="smoke", params_overrides={"oscs": {"stream_length": 300}})


@pytest.mark.parametrize("overrides, message", [
    ({"oscs": {"stream_lenght": 2000}}, "params_overrides.oscs.stream_lenght: unknown key"),
    ({"nope": {"x": 1}}, "params_overrides.nope: no paper 'nope'"),
    ({"oscs": {"stream_length": "long"}}, "params_overrides.oscs.stream_length: str 'long', params.yaml has int"),
    ({"oscs": 3}, "params_overrides.oscs: a mapping of parameters"),
])
def test_unknown_keys_and_wrong_types_are_named_by_path(overrides, message):
    assert any(message in p for p in override_problems(overrides))
    with pytest.raises(Exception, match="params_overrides"):
        ComputeResource(profile="smoke", params_overrides=overrides)


def test_a_launchpad_run_with_a_bad_override_runs_no_asset():
    ran = []

    @dg.asset
    def probe(compute: ComputeResource) -> int:
        ran.append(1)
        return 1

    result = dg.materialize([probe], raise_on_error=False, resources={"compute": ComputeResource.configure_at_launch()},
                            run_config={"resources": {"compute": {"config": {
                                "profile": "smoke", "params_overrides": {"oscs": {"stream_lenght": 5}}}}}})
    assert not result.success and ran == []
