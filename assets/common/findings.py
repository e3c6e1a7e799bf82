"""What a data-quality predicate returns — no Dagster import.

A paper's `checks.py` holds pure predicates `f(value, **inputs) -> list[str] | Finding`: the
list of problems (empty = pass). `gate()` (assets/common/checks.py) turns that into a Dagster
asset check. Keeping predicates pure lets tests call them in milliseconds on corrupted
inputs, with no run.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# a failing check's description lists this many problems, then "(+N more)"
SHOWN_PROBLEMS = 10


@dataclass(frozen=True)
class Finding:
    """Problems found (empty = pass), the message when it passes, and metadata for the UI."""

    problems: tuple[str, ...] = ()
    ok: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.problems

    def message(self, default_ok: str = "passed") -> str:
        if self.passed:
            return self.ok or default_ok
        shown = "; ".join(self.problems[:SHOWN_PROBLEMS])
        more = len(self.problems) - SHOWN_PROBLEMS
        return shown + (f" (+{more} more)" if more > 0 else "")


def finding(problems: Iterable[str] = (), ok: str = "", **metadata: Any) -> Finding:
    """Finding from any iterable of problem strings (falsy entries are dropped)."""
    return Finding(tuple(p for p in problems if p), ok, metadata)


def as_finding(result: Any) -> Finding:
    """Normalise a predicate's return value: a Finding, or a list/tuple of problems."""
    if isinstance(result, Finding):
        return result
    if isinstance(result, (list, tuple)):
        return finding(result)
    raise TypeError(f"a check predicate returns a list of problems or a Finding, not {type(result).__name__}")


def expectations(frame: Any, expectations: list, name: str, problems: Iterable[str] = ()) -> Finding:
    """Validate a DataFrame with Great Expectations (resources.quality) and add any further
    problems; the failed expectations travel in the metadata."""
    from resources.quality import validate_frame

    result = validate_frame(frame, list(expectations), name)
    extra = [p for p in problems if p]
    listed = ([result.summary()] if not result.success else []) + extra
    return Finding(tuple(listed), result.summary(),
                   {"evaluated": result.evaluated, "failed_expectations": result.failed})
