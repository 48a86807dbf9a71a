"""Templates and policy: loaded and checked once, so a typo is an error at load time."""

from __future__ import annotations

from pathlib import Path

import pytest

from heron.errors import ConfigError, InputError
from heron.interventions import Policy, Templates, load_policy, load_templates
from heron.interventions.templates import placeholders
from tests.interventions.conftest import COLLISION


def one_kind(**spec: object) -> dict:
    return {"kinds": {"collision": {"facts": ["file"], "text": "On {file}.", "spoken": "x"} | spec}}


def test_the_packaged_templates_render_every_kind_deterministically(tmp_path: Path) -> None:
    templates = load_templates(tmp_path)
    assert {"collision", "research_overlap", "job_waiting", "watchdog_incident"} <= set(
        templates.kinds
    )
    words = templates.render("collision", COLLISION, seen_before=1)
    assert words.text == "Conflict: alice + bob both on README.md (unpushed). Seen before."
    assert words == templates.render("collision", COLLISION, seen_before=3)
    overlap = templates.render(
        "research_overlap",
        {
            "researcher": "bob",
            "topic": "LiveKit agents",
            "source": "docs.livekit.io",
            "editor": "alice",
            "file": "livekit.py",
        },
        seen_before=0,
    )
    assert overlap.text == (
        "bob is researching LiveKit agents (docs.livekit.io) while alice edits livekit.py: "
        "sync up before duplicating effort."
    )
    job = templates.render("job_waiting", {"job_id": "9f3c", "prompt": "deploy"}, seen_before=0)
    assert [(a.label, a.method, a.params) for a in job.actions] == [
        ("Confirm", "jobs.confirm", {"id": "9f3c"}),
        ("Deny", "jobs.deny", {"id": "9f3c"}),
    ]


def test_a_placeholder_that_is_no_declared_fact_fails_at_load() -> None:
    with pytest.raises(ConfigError, match=r"\{who\} is not among its facts \(file\)"):
        Templates.parse(one_kind(text="{who} on {file}."), "t.yml")
    with pytest.raises(ConfigError, match="action 1 id"):
        Templates.parse(
            one_kind(actions=[{"label": "Go", "method": "jobs.confirm", "params": {"id": "{x}"}}]),
            "t.yml",
        )
    with pytest.raises(ConfigError, match="not a bare fact name"):
        Templates.parse(one_kind(text="{file:>999999999}"), "t.yml")
    with pytest.raises(ConfigError, match="not a bare fact name"):
        placeholders("{file.__class__}", "t")
    with pytest.raises(ConfigError, match="spoken is missing"):
        Templates.parse({"kinds": {"k": {"facts": [], "text": "x"}}}, "t.yml")


def test_unknown_kind_and_missing_fact_are_input_errors(tmp_path: Path) -> None:
    templates = load_templates(tmp_path)
    with pytest.raises(InputError, match=r"Unknown intervention kind 'colision'\. Choose from: "):
        templates.render("colision", COLLISION, seen_before=0)
    with pytest.raises(InputError, match="missing: state"):
        templates.render("collision", {"actors": "a", "file": "b"}, seen_before=0)


def test_the_users_file_replaces_and_adds_kinds(tmp_path: Path) -> None:
    folder = tmp_path / "interventions"
    folder.mkdir()
    (folder / "templates.yml").write_text(
        "kinds:\n  collision:\n    facts: [file]\n    text: 'Two people on {file}.'\n"
        "    spoken: 'Two people on {file}.'\n  deploy:\n    facts: []\n"
        "    text: Deploying.\n    spoken: Deploying now.\n"
    )
    templates = load_templates(tmp_path)
    assert (
        templates.render("collision", COLLISION, seen_before=0).text == "Two people on README.md."
    )
    assert templates.render("deploy", {}, seen_before=0).spoken == "Deploying now."
    (folder / "templates.yml").write_text("kinds:\n  bad:\n    facts: [a]\n    text: '{b}'\n")
    with pytest.raises(ConfigError, match=r"templates\.yml, kind 'bad'"):
        load_templates(tmp_path)
    (folder / "templates.yml").write_text("a: &a [x]\nb: *a\n")
    with pytest.raises(ConfigError, match="aliases"):
        load_templates(tmp_path)


def test_policy_least_intrusive_channel_and_voice_only_for_critical(tmp_path: Path) -> None:
    policy = load_policy(tmp_path)
    assert policy.channels("collision", "info") == ("card",)
    assert policy.channels("collision", "warning") == ("card", "message")
    assert policy.channels("watchdog_incident", "critical") == ("card", "message", "voice")
    assert policy.channels("research_overlap", "critical") == ("card",)
    assert policy.rule("job_waiting").cooldown is False and policy.rule("collision").cooldown
    with pytest.raises(ConfigError, match="voice is for critical only"):
        Policy.parse({"default": {"voice": "warning"}}, "p.yml")
    with pytest.raises(ConfigError, match="message 'loud'"):
        Policy.parse({"kinds": {"x": {"message": "loud"}}}, "p.yml")
    folder = tmp_path / "interventions"
    folder.mkdir()
    (folder / "policy.yml").write_text("kinds:\n  collision: {message: critical}\n")
    assert load_policy(tmp_path).channels("collision", "warning") == ("card",)
