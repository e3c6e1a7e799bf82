"""Token-gridworld layouts: parsing, validation and static observation tables — no Dagster import.

Text format: rows split by `|` (or newlines). Legend: `.` free, `#` wall, `0`–`9` a token,
a lower-case letter a button, the same upper-case letter its door, `@` an agent start (agents
are numbered in reading order). An optional line `agents: r,c r,c ...` overrides the `@`
starts (for layouts written without them).

The two layouts below are the 9×9 Buttons-2 and Rooms-2 configs of the MIT-licensed reference
(rad-dfa/acc-marl), re-entered as data.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

BUTTONS_2 = "0...#####|..a.A0.2#|@.a.A.8.#|..a.A6.4#|1..3#####|..b.B1.3#|@.b.B.9.#|..b.B7.5#|2...#####"
ROOMS_2 = "#########|#0.2#1.3#|#...#...#|#...#...#|#a8@A@9a#|#...#...#|#...#...#|#6.4#7.5#|#########"
LAYOUTS = {"buttons2": BUTTONS_2, "rooms2": ROOMS_2}
MOVES = np.array([[1, 0], [0, 1], [-1, 0], [0, -1], [0, 0]], dtype=np.int64)   # down, right, up, left, noop
ACTIONS = ("down", "right", "up", "left", "noop")


class LayoutError(ValueError):
    """A layout that cannot be played (the message says where)."""


@dataclass(frozen=True)
class Layout:
    """A parsed grid. Arrays are (H, W); tokens −1 where none; button/door hold the pair
    index (−1 none); starts (n, 2) row, col."""

    name: str
    wall: np.ndarray
    token: np.ndarray
    button: np.ndarray
    door: np.ndarray
    starts: np.ndarray
    pairs: tuple[str, ...]          # letters in index order

    @property
    def shape(self) -> tuple[int, int]:
        return self.wall.shape

    @property
    def n_agents(self) -> int:
        return len(self.starts)

    @property
    def n_channels(self) -> int:
        return 14 + 3 * len(self.pairs)

    def tokens_present(self) -> set[int]:
        return {int(t) for t in np.unique(self.token) if t >= 0}

    def text(self) -> str:
        rows = []
        for r in range(self.shape[0]):
            row = ""
            for c in range(self.shape[1]):
                if self.wall[r, c]:
                    row += "#"
                elif self.door[r, c] >= 0:
                    row += self.pairs[self.door[r, c]].upper()
                elif self.button[r, c] >= 0:
                    row += self.pairs[self.button[r, c]]
                elif self.token[r, c] >= 0:
                    row += str(self.token[r, c])
                elif any((s == (r, c)).all() for s in self.starts):
                    row += "@"
                else:
                    row += "."
            rows.append(row)
        return "|".join(rows)


def parse(text: str, name: str = "layout") -> Layout:
    """Parse and validate a layout; raises LayoutError naming the first problem: ragged rows,
    an unknown cell, a door without a button, an agent on a wall, no agents."""
    lines = [ln.strip() for ln in text.replace("\n", "|").split("|")]
    override = [ln for ln in lines if ln.startswith("agents:")]
    rows = [ln for ln in lines if ln and not ln.startswith("agents:")]
    if not rows:
        raise LayoutError(f"{name}: empty layout")
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise LayoutError(f"{name}: ragged rows (widths {sorted(widths)}); every row needs the same length")
    h, w = len(rows), widths.pop()
    wall = np.zeros((h, w), dtype=bool)
    token = np.full((h, w), -1, dtype=np.int64)
    button = np.full((h, w), -1, dtype=np.int64)
    door = np.full((h, w), -1, dtype=np.int64)
    letters = sorted({ch.lower() for r in rows for ch in r if ch.isalpha()})
    starts = []
    for r, row in enumerate(rows):
        for c, ch in enumerate(row):
            if ch == "#":
                wall[r, c] = True
            elif ch.isdigit():
                token[r, c] = int(ch)
            elif ch.isalpha() and ch.islower():
                button[r, c] = letters.index(ch)
            elif ch.isalpha() and ch.isupper():
                door[r, c] = letters.index(ch.lower())
            elif ch == "@":
                starts.append((r, c))
            elif ch != ".":
                raise LayoutError(f"{name}: unknown cell {ch!r} at row {r}, column {c}")
    for k, letter in enumerate(letters):
        if not (button == k).any():
            raise LayoutError(f"{name}: door {letter.upper()!r} has no button {letter!r}")
        if not (door == k).any():
            raise LayoutError(f"{name}: button {letter!r} opens no door {letter.upper()!r}")
    if override:
        starts = [tuple(int(v) for v in cell.split(",")) for cell in override[0].split(":", 1)[1].split()]
    if not starts:
        raise LayoutError(f"{name}: no agent start (@)")
    for i, (r, c) in enumerate(starts):
        if not (0 <= r < h and 0 <= c < w):
            raise LayoutError(f"{name}: agent {i} at ({r}, {c}) is outside the {h}×{w} grid")
        if wall[r, c] or door[r, c] >= 0:
            raise LayoutError(f"{name}: agent {i} starts on a {'wall' if wall[r, c] else 'door'} at ({r}, {c})")
    if len(set(starts)) != len(starts):
        raise LayoutError(f"{name}: two agents share a start cell")
    return Layout(name, wall, token, button, door, np.array(starts, dtype=np.int64), tuple(letters))


def reachable(layout: Layout, doors_open: bool = True) -> np.ndarray:
    """(H, W) bool: cells reachable on the torus from any agent start, walls blocking, doors
    open (or closed when doors_open=False)."""
    h, w = layout.shape
    blocked = layout.wall | ((layout.door >= 0) & (not doors_open))
    seen = np.zeros((h, w), dtype=bool)
    queue = deque()
    for r, c in layout.starts:
        seen[r, c] = True
        queue.append((int(r), int(c)))
    while queue:
        r, c = queue.popleft()
        for dr, dc in MOVES[:4]:
            nr, nc = (r + dr) % h, (c + dc) % w
            if not seen[nr, nc] and not blocked[nr, nc]:
                seen[nr, nc] = True
                queue.append((nr, nc))
    return seen


def static_channels(layout: Layout) -> np.ndarray:
    """(C_static, H, W) float32 unrolled channels: wall, 10 tokens, then per pair (pair cells,
    button cells, door cells). The observation builds from these (env.observe)."""
    h, w = layout.shape
    chans = [layout.wall.astype(np.float32)]
    chans += [(layout.token == t).astype(np.float32) for t in range(10)]
    for k in range(len(layout.pairs)):
        b, d = layout.button == k, layout.door == k
        chans += [(b | d).astype(np.float32), b.astype(np.float32), d.astype(np.float32)]
    return np.stack(chans).reshape(-1, h, w)
