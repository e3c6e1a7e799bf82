"""Asset-side helpers shared by papers: check builders, report writing, claims, tags."""
