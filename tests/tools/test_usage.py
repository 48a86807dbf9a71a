"""``heron.tools.usage``: requests a tool served, kept as its examples, on SQLite and on
a real PostgreSQL (where every replica learns them)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from heron.errors import StoreError
from heron.settings import Settings
from heron.tools import Tool, ToolRegistry
from heron.tools.usage import ToolUsage, open_tool_usage, usage_file
from tests.postgres import pg_server, pg_url  # noqa: F401 (fixtures of the PostgreSQL side)

#: ``opened(per_tool, home=)``: a new log on the test's database (another replica's home
#: on PostgreSQL; the same file on SQLite).
Opener = Callable[..., ToolUsage]


@pytest.fixture(params=["sqlite", "postgres"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None

    def open_(per_tool: int = 5, *, home: str = "a") -> ToolUsage:
        if url is None:
            return ToolUsage(usage_file(tmp_path / "tools.db"), per_tool)
        return open_tool_usage(Settings(home=tmp_path / home, database_url=url), per_tool)

    return open_


def test_keeps_the_most_recent_distinct_requests_per_tool(opened: Opener) -> None:
    usage = opened(2)
    for request in ("rain in Oslo?", "sun in  Rome?", "rain in Oslo?", "snow in Bergen?"):
        usage.record("weather", request)
    usage.record("mail", "   ")  # nothing to learn
    assert usage.examples() == {"weather": ("snow in Bergen?", "rain in Oslo?")}
    usage.close()
    again = opened(home="b")  # another replica, on PostgreSQL
    assert again.examples()["weather"][2] == "sun in Rome?"
    again.close()


def test_is_shared_safely_between_threads(opened: Opener) -> None:
    usage = opened(100)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: usage.record("t", f"request {i}"), range(40)))
    assert len(usage.examples()["t"]) == 40
    usage.close()


def test_a_registry_learns_examples_for_the_tools_it_has() -> None:
    registry = ToolRegistry([Tool("weather", examples=("rain?",))])
    handled = []
    registry.add(registry.get("weather"), handled.append)
    assert registry.teach({"weather": ["rain?", "sun?"], "gone": ["x"]}) == 1
    assert registry.get("weather").examples == ("rain?", "sun?")
    registry.call("weather", {})
    assert handled == [{}]  # the handler survives the lesson
    assert registry.teach({"weather": ["sun?"]}) == 0


def test_a_damaged_log_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "tools.db").write_bytes(b"not a database" * 100)
    with pytest.raises(StoreError, match=r"tool usage log .* move it aside"):
        usage_file(tmp_path / "tools.db")
