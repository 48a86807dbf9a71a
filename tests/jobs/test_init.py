"""``heron.jobs`` exports what it lists, and every ``heron jobs`` command is documented."""

from __future__ import annotations

from pathlib import Path

import heron.jobs
from heron.cli.jobs import jobs_app

DOCS = Path(__file__).parents[2] / "docs" / "jobs.md"


def test_all_names_exist() -> None:
    for name in heron.jobs.__all__:
        assert hasattr(heron.jobs, name), name


def test_every_command_is_documented_with_an_example() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for command in jobs_app.registered_commands:
        assert command.name and f"heron jobs {command.name}" in text, command.name
        assert "Example: heron jobs" in (command.callback.__doc__ or ""), command.name
