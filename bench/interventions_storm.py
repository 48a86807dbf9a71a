"""Interventions under a storm: the disk that storm traffic leaves once retention has run.

Three storms, each raised through ``Interventions.raise_`` (the path of
``interventions.raise``) on a fresh SQLite store, every raise carrying the largest
facts a caller can send (each declared fact at its cap, plus 64 KB of undeclared ones):

1. **One key**: the same condition ``STORM`` times in one room (the guard holds it).
2. **New keys**: a new key each time in one room (the cooldown holds them).
3. **New rooms**: a new room each time, so every raise is delivered and stored.

After each, one retention pass (``prune``) with the shipped rules scaled down
(``KEEP_PER_ROOM`` and ``KEEP_TOTAL`` below, instead of 1,000 and 100,000) so that the
bound is reached in seconds; the table gives the file's size before and after and the
rows left. The last rows extrapolate to a day at the shipped defaults: what retention
leaves is bounded by the counts, whatever the rate, so a day's storm at any rate leaves
at most ``keep_total`` stored interventions and ``keep_total`` suppressed counts, at the
bytes per row measured here, plus the rows one minute between two passes adds at the
measured rate. Target: <= 1 GB after a day at the defaults.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from pathlib import Path

from bench.common import table
from heron.interventions import interventions_db_path, open_interventions
from heron.interventions.model import MAX_FACT
from heron.interventions.service import PRUNE_EVERY
from heron.settings import Settings

STORM = 6_000
KEEP_PER_ROOM = 1_000
KEEP_TOTAL = 2_000
DEFAULT_TOTAL = 100_000
PADDING = {"padding": "p" * 64_000}
BIG = {"actors": ["a" * 200] * 100, "file": "f" * 10_000, "state": "s" * 10_000}


def _size(path: Path) -> int:
    """The database's bytes, its write-ahead log folded in first (as a last close does)."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def _storm(name: str, home: Path) -> tuple[str, int, float, int, int, int, int]:
    settings = Settings(
        home=home,
        interventions={
            "keep_per_room": KEEP_PER_ROOM,
            "keep_total": KEEP_TOTAL,
            "tts_program": "/nonexistent",
        },
    )
    path = interventions_db_path(settings)
    service = open_interventions(settings)
    service._pruned_at = float("inf")  # one pass at the end, to see the storm's own size
    start = time.perf_counter()
    try:
        for n in range(STORM):
            key, room = {
                "one key": ("collision:app.py", "team"),
                "new keys": (f"collision:{n}.py", "team"),
                "new rooms": ("collision:app.py", f"room-{n}"),
            }[name]
            service.raise_("collision", key, room, facts=BIG | PADDING)
        elapsed = time.perf_counter() - start
    finally:
        service.close()
    before = _size(path)
    service = open_interventions(settings)
    try:
        service.prune()
    finally:
        service.close()
    after = _size(path)  # SQLite reuses the freed pages: the file keeps its high mark
    with sqlite3.connect(path) as db:
        kept = db.execute("SELECT COUNT(*) FROM interventions").fetchone()[0]
        counted = db.execute("SELECT COUNT(*) FROM intervention_suppressed").fetchone()[0]
    return name, STORM, STORM / elapsed, before, after, kept, counted


def run() -> str:
    rows = []
    per_row = per_count = top = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for n, name in enumerate(("one key", "new keys", "new rooms")):
            found = _storm(name, Path(tmp) / str(n))
            name, raised, rate, before, after, kept, counted = found
            if name == "new keys":
                per_count = before / raised
            if name == "new rooms":
                per_row, top = before / raised, rate
            rows.append(
                (name, f"{raised:,}", f"{rate:,.0f}/s", f"{before / 1e6:.1f} MB",
                 f"{after / 1e6:.1f} MB", f"{kept:,}", f"{counted:,}")
            )  # fmt: skip
    # Between two passes (PRUNE_EVERY) a storm at the measured rate adds a minute of rows
    # over the bound; the file keeps that high mark, reused afterwards.
    day = per_row * (DEFAULT_TOTAL + top * PRUNE_EVERY) + per_count * DEFAULT_TOTAL
    rows.append(
        ("a day, any rate, shipped defaults", "-", "-", "-", f"<= {day / 1e6:,.0f} MB",
         f"<= {DEFAULT_TOTAL:,}", f"<= {DEFAULT_TOTAL:,}")
    )  # fmt: skip
    return table(
        f"Interventions: disk after a storm and retention (facts at their cap of {MAX_FACT:,} "
        f"characters; keep {KEEP_PER_ROOM:,} per room, {KEEP_TOTAL:,} in all)",
        ("storm", "raised", "rate", "file before prune", "file after prune", "stored",
         "suppressed counts"),
        rows,
    )  # fmt: skip
