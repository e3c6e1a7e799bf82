"""The weekly ticks: one automation sensor per paper (stopped), and a condition that requests only
stale assets: missing, code or params changed, or upstream updated since the last request."""
from __future__ import annotations

import datetime as dt

import dagster as dg

from jobs.definitions import SCHEDULE_CRON, defs, stale_on_cron, with_automation
from jobs.papers import PAPERS

SUNDAY = dt.datetime(2026, 12, 6, tzinfo=dt.timezone.utc)  # a Sunday; the tick is 03:00 UTC

def _toy(version: str) -> dg.Definitions:
    @dg.asset(code_version=version)
    def upstream() -> int:
        return 1

    @dg.asset(code_version="1")
    def downstream(upstream: int) -> int:
        return upstream + 1

    return dg.Definitions(assets=with_automation([upstream, downstream], stale_on_cron()))

def test_every_paper_has_a_stopped_weekly_automation_sensor_and_every_asset_a_condition():
    sensors = {s.name: s for s in defs.sensors}
    assert set(sensors) == {f"{slug}_weekly" for slug in PAPERS}
    assert all(s.default_status == dg.DefaultSensorStatus.STOPPED for s in sensors.values())
    assert not list(defs.schedules or []), "the weekly cron lives in the automation condition"
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        if key.path[0] in PAPERS:
            condition = graph.get(key).automation_condition
            assert condition is not None and condition.get_label() == f"stale at the tick of {SCHEDULE_CRON}", key

def test_a_tick_requests_only_what_is_stale():
    instance = dg.DagsterInstance.ephemeral()
    toy = _toy("1")

    def tick(definitions, when):
        nonlocal cursor
        result = dg.evaluate_automation_conditions(definitions, instance, cursor=cursor, evaluation_time=when)
        cursor = result.cursor
        return {r.key.to_user_string() for r in result.results if r.true_subset.size}

    cursor = None
    assert tick(toy, SUNDAY.replace(hour=2)) == set()                       # before the tick: nothing
    assert tick(toy, SUNDAY.replace(hour=3, minute=1)) == {"upstream", "downstream"}  # missing
    assert tick(toy, SUNDAY.replace(hour=3, minute=2)) == set()             # once per tick
    dg.materialize(toy.assets, instance=instance)
    week = dt.timedelta(days=7)
    assert tick(toy, SUNDAY.replace(hour=3, minute=1) + week - dt.timedelta(hours=2)) == set()
    assert tick(toy, SUNDAY.replace(hour=3, minute=1) + week) == set()      # fresh: a tick runs nothing
    changed = _toy("2")                                                       # upstream's code changed
    assert tick(changed, SUNDAY.replace(hour=3, minute=1) + 2 * week - dt.timedelta(hours=2)) == set()
    assert tick(changed, SUNDAY.replace(hour=3, minute=1) + 2 * week) == {"upstream", "downstream"}

    dg.materialize(changed.assets, instance=instance)                        # the run the tick launched
    assert tick(changed, SUNDAY.replace(hour=4) + 2 * week) == set()
    dg.materialize([a for a in changed.assets if a.key.to_user_string() == "upstream"], instance=instance)
    assert tick(changed, SUNDAY.replace(hour=3, minute=1) + 3 * week - dt.timedelta(hours=2)) == set()
    assert tick(changed, SUNDAY.replace(hour=3, minute=1) + 3 * week) == {"downstream"}   # upstream updated
