"""Dagster wiring across papers: registry, jobs, weekly automation, warehouse and scorecard."""
