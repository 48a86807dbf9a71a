"""The detectors wired into a server: the agent's tool calls and grounding searches as
who-works-on-what activity (collisions, research overlaps), through a real ``heron
serve`` whose model is the loopback replay server (tests/llm_servers.py: a forced tool
choice gets a call with arguments filled from the tool's schema), and the slower scan of
library health and skill searches that find nothing."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from heron.agent import ToolUse, Turn
from heron.interventions import Intervention
from heron.libraries import add_library, index_library
from heron.server.runtime import Runtime
from heron.settings import Settings
from heron.skills import UsageLog
from heron.wiring import Scan
from tests.agent.conftest import chat  # noqa: F401 (the loopback replay model)
from tests.jobs.conftest import Server
from tests.llm_servers import ONE_MODEL, ChatServer

#: A request triage sends to ``write_file``, forced: the replay model then writes the file
#: ``text`` with the content ``text``, whoever asks.
WRITE = "Write a new file in my workspace"


def kinds(items: list[Intervention], kind: str) -> list[Intervention]:
    return [i for i in items if i.kind == kind]


@pytest.fixture
def replayed(
    chat: ChatServer,  # noqa: F811
    configured: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """Settings in the environment (a server started now sees them): the replay model, the
    agent allowed to write in the workspace unasked (over /v1 too: the operator's opt-in),
    no cooldown, no Heron docs."""
    models = tmp_path / "models.yml"
    models.write_text(ONE_MODEL.format(url=chat.url))
    for name, value in {
        "HERON_MODELS_FILE": str(models),
        "HERON_AGENT_TOOL_SAFETY": "write",
        "HERON_OPENAI_TOOL_SAFETY": "write",
        "HERON_INTERVENTIONS_COOLDOWN": "0",
        "HERON_LIBRARY_DEFAULT_DOCS": "false",
        "HERON_LLM_RETRIES": "0",
    }.items():
        monkeypatch.setenv(name, value)
    return configured


@pytest.fixture
def runtime(home: Path) -> Iterator[Runtime]:
    rt = Runtime(Settings(interventions={"cooldown": 0}))
    yield rt
    rt.close()


def test_two_users_whose_agents_write_one_file_get_a_collision_card(
    replayed: Path, serve: Callable[[], Server]
) -> None:
    server = serve()
    body = {"model": "gpt", "messages": [{"role": "user", "content": WRITE}], "user": "alice"}
    done = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=60)
    assert done.status_code == 200, done.text
    assert (replayed / "text").read_text() == "text"  # the agent's write_file ran
    assert server.result("interventions.list", room="default") == []  # alice alone
    answer = server.result("agent.chat", message=WRITE, user="bob")
    (use,) = answer["tools"]  # type: ignore[index]
    assert (use["name"], use["ok"], use["forced"]) == ("write_file", True, True)
    (card,) = server.result("interventions.list", room="default")  # type: ignore[misc]
    assert (card["kind"], card["key"], card["status"]) == (
        "collision",
        "collision:text",
        "delivered",
    )
    assert card["text"] == "Conflict: alice + bob both on text (uncommitted)."
    # A third writer, over the SSE stream: still one card (the key is active).
    streamed = httpx.post(
        f"{server.url}/chat/stream", json={"message": WRITE, "user": "carol"}, timeout=60
    )
    assert streamed.status_code == 200 and "event: final" in streamed.text, streamed.text
    found = server.result("interventions.list", room="default")
    assert [(i["status"], i["facts"]["actors"]) for i in found] == [  # type: ignore[index,union-attr]
        ("delivered", ["alice", "bob"]),
    ]
    collisions = {s["kind"]: s for s in server.result("interventions.stats")["kinds"]}  # type: ignore[index]
    assert collisions["collision"]["suppressed_guard"] == 1  # counted, not stored
    # Without a user nobody is anybody: no activity.
    server.result("agent.chat", message=WRITE)
    assert len(server.result("interventions.list", room="default")) == 1  # type: ignore[arg-type]


def test_the_agents_grounding_search_overlaps_a_file_another_edits(
    chat: ChatServer,  # noqa: F811
    tmp_path: Path,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    pages = tmp_path / "garden-docs"
    pages.mkdir()
    (pages / "watering.md").write_text("# Watering tomatoes\n\nWater them twice a week.\n")
    add_library("garden", str(pages), Settings())
    models = tmp_path / "models.yml"
    models.write_text(ONE_MODEL.format(url=chat.url))
    rt = Runtime(Settings(llm={"models_file": models, "retries": 0}, interventions={"cooldown": 0}))
    try:
        index_library("garden", rt.store, settings=rt.settings)
        edit = {"path": "garden/tomato-watering.md", "content": "# Watering tomatoes\n"}
        assert rt.observers.tool_use("alice", ToolUse("1", "write_file", edit, ok=True)) == []
        rt.agent.ask(Turn("How often should I water my tomato plants?", user="bob"))
        (card,) = rt.interventions.list("default")
        assert (card.kind, card.facts["researcher"], card.facts["editor"]) == (
            "research_overlap",
            "bob",
            "alice",
        )
        assert card.facts["topic"] == "How often should I water my tomato plants?"
    finally:
        rt.close()


def test_a_library_whose_sync_fails_gets_one_card_until_a_sync_succeeds(
    runtime: Runtime, tmp_path: Path
) -> None:
    pages = tmp_path / "runbooks"
    pages.mkdir()
    (pages / "deploy.md").write_text("# Deploy\n\nRun the deploy script.\n")
    add_library("runbooks", str(pages), runtime.settings)
    index_library("runbooks", runtime.store, settings=runtime.settings)
    scan = Scan(runtime.settings, runtime.store, lambda: runtime.interventions)
    assert scan() == []  # healthy
    moved = tmp_path / "moved"
    shutil.move(pages, moved)
    assert index_library("runbooks", runtime.store, settings=runtime.settings).error
    (card,) = scan()
    assert (card.kind, card.key, card.status) == (
        "library_sync_failed",
        "library_sync_failed:runbooks",
        "delivered",
    )
    assert "does not exist" in card.facts["error"]
    assert scan() == []  # still failing: no second card, no row stored per pass
    assert len(runtime.interventions.list("default")) == 1
    shutil.move(moved, pages)
    index_library("runbooks", runtime.store, settings=runtime.settings)
    (resolved,) = scan()
    assert resolved.id == card.id and resolved.resolved_at is not None


def test_a_skill_request_that_keeps_finding_nothing_gets_a_card(
    runtime: Runtime, home: Path
) -> None:
    log = UsageLog(home / "skills.db")
    try:
        log.record_query("publish the quarterly report", ["report-writer"])
        for _ in range(3):
            log.record_query("Deploy  the flux capacitor", [])
        scan = Scan(runtime.settings, runtime.store, lambda: runtime.interventions)
        (card,) = scan()
        assert (card.kind, card.facts["request"], card.facts["misses"]) == (
            "search_misses",
            "Deploy  the flux capacitor",
            3,
        )
        log.record_query("deploy the flux capacitor", ["flux-deploy"])  # a skill now fits
        (resolved,) = scan()
        assert resolved.id == card.id and resolved.resolved_at is not None
    finally:
        log.close()
