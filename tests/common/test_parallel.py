"""assets.common.parallel: results in job order, longest-first starts, indices kept across processes."""
from __future__ import annotations

import os

import pytest

from assets.common.parallel import longest_first, spawn_imap


def _pid_and_square(job: dict) -> tuple[int, int]:
    return os.getpid(), job["x"] ** 2


def test_longest_first_starts_costly_jobs_first_ties_in_job_order_and_keeps_indices():
    started = []

    def run(job):
        started.append(job["name"])
        return job["name"].upper()

    jobs = [{"name": n} for n in "abcd"]
    out = list(longest_first(run, jobs, 1, [1, 3, 2, 3]))
    assert started == ["b", "d", "c", "a"]                      # decreasing cost, ties in job order
    assert [i for i, _ in out] == [1, 3, 2, 0]                  # results in start order, with their index
    assert dict(out) == {0: "A", 1: "B", 2: "C", 3: "D"}
    with pytest.raises(ValueError, match="3 costs for 4 jobs"):
        list(longest_first(run, jobs, 1, [1, 2, 3]))


def test_spawned_workers_return_each_result_with_its_own_index():
    jobs = [{"x": x} for x in range(6)]
    out = dict(longest_first(_pid_and_square, jobs, 2, [x % 3 for x in range(6)]))
    assert {i: sq for i, (_, sq) in out.items()} == {x: x * x for x in range(6)}
    assert os.getpid() not in {pid for pid, _ in out.values()}  # ran in the spawned processes
    assert [sq for _, sq in spawn_imap(_pid_and_square, jobs, 2)] == [x * x for x in range(6)]


def _sigterm_disposition(_: int) -> int:
    import signal

    return int(signal.getsignal(signal.SIGTERM))


def _fail_on_two(x: int) -> int:
    if x == 2:
        raise RuntimeError("job 2 failed")
    return x


def test_workers_die_on_sigterm_even_when_the_parent_ignores_it_and_errors_stop_the_pool():
    import signal

    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)    # as under a launcher that ignores SIGTERM
    try:
        assert set(spawn_imap(_sigterm_disposition, [0, 1, 2], 2)) == {int(signal.SIG_DFL)}
        with pytest.raises(RuntimeError, match="job 2 failed"):
            list(spawn_imap(_fail_on_two, [0, 1, 2, 3], 2))
        first = spawn_imap(_fail_on_two, [0, 1, 3, 4], 2)
        assert next(first) == 0
        first.close()                                            # the caller stops early: terminated, joined
    finally:
        signal.signal(signal.SIGTERM, previous)


def _wait_for_flag_or_ignore_sigterm(job: dict) -> str:
    """'ignore': ignore SIGTERM, raise the flag, sleep for good; 'wait': return once the flag is up."""
    import signal
    import time
    from pathlib import Path

    flag = Path(job["flag"])
    if job["kind"] == "ignore":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        flag.touch()
        time.sleep(3600)
    while not flag.exists():
        time.sleep(0.01)
    return job["kind"]


def test_stopping_early_kills_a_worker_that_ignores_sigterm_instead_of_waiting_for_it(tmp_path):
    import multiprocessing
    import threading
    import time

    flag = str(tmp_path / "ignoring")
    jobs = [{"kind": "wait", "flag": flag}, {"kind": "ignore", "flag": flag}]
    outcome: dict = {}

    def consume_one_then_stop():
        results = spawn_imap(_wait_for_flag_or_ignore_sigterm, jobs, 2)
        outcome["first"] = next(results)                       # job 1's worker now ignores SIGTERM
        start = time.monotonic()
        results.close()                                          # terminate: SIGTERM, then SIGKILL
        outcome["stop_s"] = time.monotonic() - start

    consumer = threading.Thread(target=consume_one_then_stop, daemon=True)
    consumer.start()
    consumer.join(60)
    hung = consumer.is_alive()
    if hung:                                                     # leave no sleeper behind the failure
        for child in multiprocessing.active_children():
            child.kill()
    assert not hung, "stopping the pool waited on a worker that ignores SIGTERM"
    assert outcome["first"] == "wait"
    assert 4.0 <= outcome["stop_s"] < 30.0                      # the 5 s grace, then the kill
