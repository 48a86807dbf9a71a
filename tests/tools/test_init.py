from __future__ import annotations

from pathlib import Path

import pytest

import heron.tools
from heron.errors import StoreError
from heron.settings import Settings
from heron.store import SQLiteStore
from heron.tools import Toolbox, ToolRegistry, open_toolbox, open_tools


def test_all_names_exist() -> None:
    for name in heron.tools.__all__:
        assert hasattr(heron.tools, name), name


def test_open_tools_here_is_the_old_name_of_heron_agent_open_tools(
    home: Path, store: SQLiteStore
) -> None:
    with pytest.warns(DeprecationWarning, match="use heron.agent.open_tools"):
        box = open_tools(Settings(), store=store, connect=False, learn=False)
    assert "search_docs" in box.registry and "read_file" not in box.registry
    box.close()
    assert "open_tools" not in heron.tools.__all__


def test_open_toolbox_holds_the_tools_it_is_handed(home: Path, store: SQLiteStore) -> None:
    from heron.core.tools import Tool

    echo = Tool("echo", "Say it back.")
    box = open_toolbox(
        Settings(), store, tools=[(echo, lambda a: a)], root=home.parent, connect=False
    )
    assert box.registry.call("echo", {"x": 1}) == {"x": 1}
    assert "read_file" in box.registry  # the workspace tools, as root is given
    box.close()
    assert store.namespaces() == []  # handed over open, left open: it still answers


def test_owns_store_still_works_with_a_warning(home: Path, store: SQLiteStore) -> None:
    with pytest.warns(DeprecationWarning, match="owns_store"):
        box = Toolbox(ToolRegistry(), store, owns_store=True)
    box.close()
    with pytest.raises(StoreError, match="closed"):
        store.count("notes")
