"""Matplotlib helpers (Agg backend, byte-stable PNGs) — no Dagster import."""
from __future__ import annotations

from pathlib import Path


def new_figure(width: float = 6.4, height: float = 4.0):
    """(fig, ax) on the non-interactive Agg backend."""
    fig, axes = new_grid(1, width, height)
    return fig, axes[0]


def new_grid(ncols: int, width: float, height: float, nrows: int = 1):
    """(fig, axes) with axes a flat array of nrows * ncols panels (Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), dpi=110, squeeze=False)
    return fig, axes.ravel()


def save_figure(fig, path: Path) -> Path:
    """PNG without a timestamp in its metadata (byte-stable for identical plots)."""
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, format="png", metadata={"Software": None})
    plt.close(fig)
    return path
