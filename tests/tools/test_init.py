from __future__ import annotations

from pathlib import Path

import heron.tools
from heron.settings import Settings
from heron.store import SQLiteStore
from heron.tools import open_toolbox


def test_all_names_exist() -> None:
    for name in heron.tools.__all__:
        assert hasattr(heron.tools, name), name


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
