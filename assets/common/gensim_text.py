"""Offline text shipped inside the gensim wheel (gensim/test/test_data) — no Dagster import.

Shared by the text papers (OSCS, BREW): lee_background.cor, lee.cor, pang_lee_polarity.cor.
"""
from __future__ import annotations


def gensim_text_bytes(name: str) -> bytes:
    """Raw bytes of a gensim test-data file (hash them for a data version)."""
    from gensim.test.utils import datapath

    with open(datapath(name), "rb") as handle:
        return handle.read()


def read_gensim_lines(name: str) -> list[str]:
    """Non-empty, stripped lines of a gensim test-data file (UTF-8, falling back to cp1252:
    lee.cor and pang_lee_polarity.cor contain cp1252 bytes)."""
    raw = gensim_text_bytes(name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")
    return [line.strip() for line in text.splitlines() if line.strip()]
