"""A key's rate windows on each backend (``heron.server.http.windows``): this process's memory,
and PostgreSQL, where replicas count one key together (issue 47)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest

from heron.server.http.windows import (
    HOLD_TTL,
    DatabaseWindows,
    MemoryWindows,
    Windows,
    open_windows,
)
from heron.settings import Settings
from tests.postgres import pg_server, pg_url  # noqa: F401 (fixtures of the PostgreSQL side)

#: ``replica(name)``: the windows a replica of that name opens on the test's backend (on
#: memory, one process's: every name gets the same).
Replicas = Callable[[str], Windows]


@pytest.fixture(params=["memory", "postgres"])
def replicas(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Replicas]:
    """Every windows it opens is closed when the test ends, so a PostgreSQL pool is never
    left to the garbage collector."""
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    opened = [MemoryWindows(60)]

    def replica(name: str) -> Windows:
        if url is None:
            return opened[0]
        opened.append(open_windows(Settings(home=tmp_path / name, database_url=url, replica=name)))
        return opened[-1]

    yield replica
    for windows in opened:
        windows.close()


def test_a_limit_holds_across_replicas(replicas: Replicas) -> None:
    """Ten requests of one key at once, through two replicas, under rpm 5: five pass, and
    the refused learn when the oldest leaves the window."""
    sides = [replicas("a"), replicas("b")]
    now = time.time()
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda n: sides[n % 2].hit("ci", 5, now + n / 1000), range(10)))
    assert answers.count(None) == 5, answers
    assert all(now + 59 < reset <= now + 61 for reset in answers if reset is not None)
    assert sides[0].hit("other-key", 5, now) is None  # each key its own window
    # peek answers as hit would, counting nothing (the credential throttle's question).
    assert sides[1].peek("ci", 5, now + 1) is not None
    assert [sides[0].peek("fresh", 1, now) for _ in range(3)] == [None] * 3
    assert sides[1].hit("fresh", 1, now) is None and sides[0].peek("fresh", 1, now) is not None


def test_tokens_held_and_spent_are_every_replicas(replicas: Replicas) -> None:
    a, b = replicas("a"), replicas("b")
    now = time.time()
    with a.tokens("ci", now) as tokens:
        tokens.held += 300
    with b.tokens("ci", now) as tokens:
        assert tokens.held == 300
        tokens.held += 200
        tokens.spent += 50
    with a.tokens("ci", now) as tokens:
        assert (tokens.held, tokens.spent) == (500, 50)
        tokens.held -= 300  # a's request ends: it gives back its hold, spends 120
        tokens.spent += 120
    with b.tokens("ci", now) as tokens:
        assert (tokens.held, tokens.spent) == (200, 170)
    with b.tokens("ci", now + 61) as tokens:  # the next window: nothing spent, holds kept
        assert (tokens.held, tokens.spent) == (200, 0)


def test_a_dead_replicas_holds_lapse(pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    a, b = (open_windows(Settings(home=tmp_path / n, database_url=pg_url, replica=n)) for n in "ab")
    try:
        _holds_lapse(a, b, url=pg_url)
    finally:
        a.close()
        b.close()


def _holds_lapse(a: Windows, b: Windows, url: str) -> None:
    assert isinstance(a, DatabaseWindows)
    now = time.time()
    with a.tokens("ci", now) as tokens:
        tokens.held += 400
    with b.tokens("ci", now + HOLD_TTL - 1) as tokens:
        assert tokens.held == 400
    with b.tokens("ci", now + HOLD_TTL + 1) as tokens:
        assert tokens.held == 0  # a has not touched the key since: it died holding them
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT replica FROM heron_key_tokens ORDER BY replica").fetchall()
    assert rows == [("a",), ("b",)]
