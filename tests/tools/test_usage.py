"""``heron.tools.usage``: requests a tool served, kept as its examples."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from heron.errors import StoreError
from heron.tools import Tool, ToolRegistry
from heron.tools.usage import ToolUsage


def test_keeps_the_most_recent_distinct_requests_per_tool(tmp_path) -> None:
    usage = ToolUsage(tmp_path / "tools.db", per_tool=2)
    for request in ("rain in Oslo?", "sun in  Rome?", "rain in Oslo?", "snow in Bergen?"):
        usage.record("weather", request)
    usage.record("mail", "   ")  # nothing to learn
    assert usage.examples() == {"weather": ("snow in Bergen?", "rain in Oslo?")}
    usage.close()
    assert ToolUsage(tmp_path / "tools.db").examples()["weather"][2] == "sun in Rome?"


def test_is_shared_safely_between_threads(tmp_path) -> None:
    usage = ToolUsage(tmp_path / "tools.db", per_tool=100)
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


def test_a_damaged_log_is_a_clear_error(tmp_path) -> None:
    (tmp_path / "tools.db").write_bytes(b"not a database" * 100)
    with pytest.raises(StoreError, match=r"tool usage log .* move it aside"):
        ToolUsage(tmp_path / "tools.db")
