"""Every ``heron interventions`` command and the card's fields are documented in
docs/interventions.md (its exports: tests/test_exports.py)."""

from __future__ import annotations

from pathlib import Path

from heron.cli.interventions import interventions_app

DOCS = Path(__file__).parents[2] / "docs" / "interventions.md"


def test_every_command_and_card_field_is_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for command in interventions_app.registered_commands:
        assert command.name and f"heron interventions {command.name}" in text, command.name
        assert "Example: heron interventions" in (command.callback.__doc__ or ""), command.name
    for field in ("audio_url", "seen_before", "actions", "spoken", "Last-Event-ID"):
        assert field in text, field
