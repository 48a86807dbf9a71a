"""The JSON-RPC methods the page needs, as any client calls them: listed by rpc.discover,
right answers, and clear errors for bad input."""

from __future__ import annotations

import time

import httpx

from tests.web.conftest import Heron

ADDED = {"library.pages", "library.passage", "library.reindex", "library.progress",
         "agent.history", "skills.usage", "tools.names", "sessions.create", "sessions.list",
         "sessions.rename", "sessions.delete", "models.list", "ops.board"}  # fmt: skip


def error(heron: Heron, method: str, **params: object) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer = httpx.post(f"{heron.url}/rpc", json=body, timeout=60).json()
    assert "error" in answer, answer
    return answer["error"]


def test_the_methods_are_public_and_described(heron: Heron) -> None:
    doc = heron.rpc("rpc.discover")
    described = {m["name"]: m for m in doc["methods"]}  # type: ignore[index]
    assert set(described) >= ADDED
    params = {p["name"] for p in described["library.passage"]["params"]}
    assert params == {"library", "page", "first", "last"}


def test_passage_pages_and_names(heron: Heron) -> None:
    passage = heron.rpc("library.passage", library="tiny", page="concepts/pods", first=1, last=1)
    assert passage["title"] == "Pods" and "Pod runs one or more containers" in passage["text"]  # type: ignore[index]
    assert passage["source"].endswith("concepts/pods.md:{}-{}".format(*passage["lines"]))  # type: ignore[index]
    pages = {p["page"]: p for p in heron.rpc("library.pages", name="evil")}  # type: ignore[union-attr]
    assert pages["evil"]["chunks"] == 1 and pages["evil"]["path"] == "evil.md"
    names = {n["name"]: n["encoded"] for n in heron.rpc("tools.names", profile="openai")}  # type: ignore[union-attr]
    assert names["search_docs"] == "search_docs"
    assert isinstance(heron.rpc("skills.usage"), list)
    assert heron.rpc("agent.history", session_id="never-used") == []


def test_bad_input_is_a_clear_error(heron: Heron) -> None:
    pods = {"library": "tiny", "page": "concepts/pods"}
    backwards = error(heron, "library.passage", **pods, first=9, last=2)
    assert backwards["code"] == -32001 and "first <= last" in backwards["message"]
    missing = error(heron, "library.passage", library="tiny", page="nope", first=1, last=2)
    assert missing["code"] == -32004
    assert error(heron, "library.pages", name="nope")["code"] == -32004
    assert error(heron, "library.reindex", name="nope")["code"] == -32004
    assert error(heron, "sessions.rename", session_id="never-used", title="x")["code"] == -32004
    assert error(heron, "sessions.delete", session_id="never-used")["code"] == -32004
    assert error(heron, "sessions.delete", session_id="../bad id")["code"] == -32001
    unknown = error(heron, "library.progress", task="0" * 16)
    assert unknown["code"] == -32004 and "library.reindex" in unknown["message"]


def test_a_reindex_task_reports_its_end(heron: Heron) -> None:
    task = heron.rpc("library.reindex", name="evil")
    assert task["state"] == "running"  # type: ignore[index]
    deadline = time.monotonic() + 60
    while (state := heron.rpc("library.progress", task=task["task"]))["state"] == "running":  # type: ignore[index]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert state["state"] == "done" and state["report"]["unchanged"] == 1  # type: ignore[index]
    stage = state["stage"]  # type: ignore[index]
    assert stage["name"] in ("sync", "pages", "chunks")  # the last stage begun
    assert stage["total"] is None or stage["done"] == stage["total"]  # ... and finished


def test_models_name_alias_and_provider(heron: Heron) -> None:
    models = heron.rpc("models.list")
    default = [m for m in models if m["default"]]  # type: ignore[union-attr, index]
    assert len(default) == 1 and default[0]["alias"] == "local" and default[0]["provider"]
