"""Dagster wiring across papers: registry, jobs, schedules, warehouse and scorecard."""
