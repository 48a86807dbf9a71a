"""``heron.core.optional``: one row per optional built-in, and every reader agrees with it."""

from __future__ import annotations

import pytest

from heron.about import routing
from heron.core.optional import OPTIONAL_TOOLS
from heron.extras import EXTRAS
from heron.settings import Settings, ToolsSettings
from heron.tools.builtin import BUILDERS, optional_tools


def test_every_row_has_its_builder_and_its_off_by_default_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert sorted(BUILDERS) == sorted(tool.name for tool in OPTIONAL_TOOLS)
    for tool in OPTIONAL_TOOLS:
        assert ToolsSettings.model_fields[tool.setting].default is False, tool.name
        assert tool.extra is None or tool.extra in EXTRAS
        assert (tool.program is None) == (tool.package is None)
        monkeypatch.setenv(tool.env, "true")  # the variable the row names is the setting's
        assert tool.on(Settings())
        built, _ = BUILDERS[tool.name](Settings())
        assert built.name == tool.name


def test_the_readers_list_the_rows_turned_on() -> None:
    assert optional_tools(Settings()) == []
    assert {name: routing(Settings())[name] for name in BUILDERS} == dict.fromkeys(BUILDERS, False)
    on = Settings(tools={"fetch_url": True, "python_exec": True})
    assert [tool.name for tool, _ in optional_tools(on)] == ["fetch_url", "python_exec"]
    assert routing(on)["fetch_url"] and routing(on)["python_exec"]
    assert EXTRAS["web"].feature == "fetch_url (HERON_TOOLS_FETCH_URL)"
