"""Paper claims as data — no Dagster import, so pure benchmark code can build them."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Claim:
    """One claim of the paper and what we measured.

    paper_value and measured_value are short human strings ("FAR ≤ α + 0.01",
    "worst mean FAR − α = +0.004"); `holds` is computed from measurements, never hand-set.
    """

    claim_id: str
    claim: str
    paper_value: str
    measured_value: str
    holds: bool
    detail: str = ""
