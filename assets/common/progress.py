"""Progress lines for long loops — no Dagster import (pass context.log.info)."""
from __future__ import annotations

import time
from collections.abc import Callable


class Progress:
    """`[i/n] label: message (12 s, ~30 s left)` after each step of a loop of known length.

        progress = Progress(context.log.info, len(cells), "evaluation")
        for cell in cells:
            ...
            progress.step(f"{cell.task}/seed {cell.seed}")
    """

    def __init__(self, log: Callable[[str], None], total: int, label: str):
        self.log, self.total, self.label = log, int(total), label
        self.done = 0
        self.start = time.monotonic()

    def step(self, message: str = "") -> None:
        self.done += 1
        elapsed = time.monotonic() - self.start
        left = elapsed / self.done * max(0, self.total - self.done)
        self.log(f"[{self.done}/{self.total}] {self.label}{': ' + message if message else ''} "
                 f"({elapsed:.0f} s, ~{left:.0f} s left)")

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.start
