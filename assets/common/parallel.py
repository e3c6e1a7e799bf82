"""Independent jobs (training runs, evaluation cells) over worker processes, results in job order."""
from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence


def spawn_imap(fn: Callable[[Any], Any], jobs: Sequence[Any], workers: int) -> Iterator[Any]:
    """Yield fn(job) for every job, in job order.

    workers ≤ 1 (or a single job) runs in this process; otherwise in that many spawned
    processes (spawn, not fork: torch and CUDA state must not be inherited). fn must be a
    module-level function and each job must seed its own generators, so results do not depend
    on the process that ran them or on `workers`.

    After the last result the pool is closed and joined (each worker takes its stop sentinel
    and exits); it is terminated only on an error or when the caller stops early. Workers reset
    SIGTERM to its default: a process started with SIGTERM ignored (nohup-style launchers,
    some CI runners) passes that on, and `Pool.terminate` could then never stop a worker
    blocked on the task queue — `with Pool(...)` (terminate on exit) hung that way in CI.
    That reset comes too late for a SIGTERM that arrives while a worker is still starting up
    (still ignoring it), and a job may ignore SIGTERM itself, so termination is bounded:
    workers still alive `grace_s` seconds after `Pool.terminate` began are killed (SIGKILL).
    """
    if workers <= 1 or len(jobs) <= 1:
        yield from map(fn, jobs)
        return
    import multiprocessing

    pool = multiprocessing.get_context("spawn").Pool(min(workers, len(jobs)), initializer=_default_sigterm)
    try:
        yield from pool.imap(fn, jobs)
        pool.close()
    except BaseException:
        _terminate(pool)
        raise
    finally:
        pool.join()


def _terminate(pool: Any, grace_s: float = 5.0) -> None:
    """Pool.terminate, but a worker that has not died of SIGTERM after grace_s seconds is
    killed, so that terminate's join of the workers cannot wait forever."""
    import threading

    stopper = threading.Thread(target=pool.terminate, name="spawn_imap-terminate", daemon=True)
    stopper.start()
    stopper.join(grace_s)
    while stopper.is_alive():
        for worker in list(pool._pool):
            if worker.exitcode is None:
                worker.kill()
        stopper.join(1.0)


def _default_sigterm() -> None:
    """Pool initializer: SIGTERM kills the worker again (see spawn_imap)."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def longest_first(fn: Callable[[Any], Any], jobs: Sequence[Any], workers: int,
                  costs: Sequence[float]) -> Iterator[tuple[int, Any]]:
    """Yield (index, fn(jobs[index])) for every job, the jobs started through spawn_imap in
    decreasing costs[index] (ties keep job order) so that no long job runs alone at the end.
    Results arrive in start order, each with its job's index. Each job seeds itself, so the
    order changes no number, only the idle tail."""
    if len(costs) != len(jobs):
        raise ValueError(f"{len(costs)} costs for {len(jobs)} jobs")
    order = sorted(range(len(jobs)), key=lambda i: -float(costs[i]))
    yield from zip(order, spawn_imap(fn, [jobs[i] for i in order], workers))
