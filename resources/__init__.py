"""paperlab resources: compute, artifacts, warehouse, quality, versioning.

Everything a paper's Dagster wiring needs besides its own method code. The pure helpers
(profiles, versioning) import no Dagster so scripts and DVC stages can use them too.
"""
