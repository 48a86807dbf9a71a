"""``/rpc`` over real HTTP: every method, batches, notifications, each error code."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest

from heron.server.doors.rpc import Method, Params, Registry, dispatch, encode
from tests.server.conftest import Served


def test_search_query_finds_the_page_with_its_citation(served: Served) -> None:
    answer = served.rpc("search.query", {"query": "how do I undo a rollout", "library": "tiny"})
    top = answer["result"][0]
    assert answer["id"] == 1
    assert top["page"] == "tasks/rollback"
    assert top["citation"] == "(tiny, tasks/rollback)"


def test_positional_params_map_onto_the_fields_in_order(served: Served) -> None:
    answer = served.rpc("search.query", ["sensitive data such as a password", "tiny", None, 1])
    assert [r["page"] for r in answer["result"]] == ["concepts/secrets"]


def test_library_methods(served: Served) -> None:
    listed = served.rpc("library.list")["result"]
    assert [lib["name"] for lib in listed] == ["tiny"]
    status = served.rpc("library.status", {"name": "tiny"})["result"][0]
    assert status["indexed"] and status["pages"] == 3
    reports = served.rpc("library.index", {"name": "tiny"})["result"]
    assert reports[0]["unchanged"] == 3 and reports[0]["error"] is None


def test_library_add_then_remove(served: Served, tmp_path) -> None:
    (tmp_path / "a.md").write_text("# A\nSome page.\n")
    given = {"name": "extra", "source": str(tmp_path), "include": ["*.md"], "exclude": ["_*"]}
    added = served.rpc("library.add", given)["result"]
    assert added == {
        **given,
        "builtin": False,
        "branch": None,
        "enrich": False,
        "collections": "collections",
        "language": "auto",
    }
    listed = {lib["name"]: lib for lib in served.rpc("library.list")["result"]}
    assert listed["extra"]["include"] == ["*.md"] and listed["extra"]["exclude"] == ["_*"]
    unknown = served.rpc("library.add", {**given, "name": "other", "depth": 1})
    assert unknown["error"]["code"] == -32602 and "depth" in unknown["error"]["message"]
    removed = served.rpc("library.remove", {"name": "extra"})["result"]
    assert removed == {"name": "extra", "removed": True}
    assert [lib["name"] for lib in served.rpc("library.list")["result"]] == ["tiny"]


def test_skills_methods(served: Served) -> None:
    hits = served.rpc("skills.search", {"query": "undo a bad deploy"})["result"]
    assert hits[0]["name"] == "rollback-deployment"
    shown = served.rpc("skills.show", {"name": "Rollback-Deployment"})["result"]
    assert "kubectl rollout undo" in shown["body"]
    status = served.rpc("skills.status")["result"]
    assert status["index"]["records"] == 1


def test_tools_methods(served: Served) -> None:
    names = [t["name"] for t in served.rpc("tools.list")["result"]["tools"]]
    assert {"search_docs", "search_skills", "read_skill"} <= set(names)
    route = served.rpc("tools.route", {"query": "search the documentation", "top_k": 1})
    assert route["result"]["results"][0]["name"] == "search_docs"
    called = served.rpc(
        "tools.call", {"name": "search_docs", "arguments": {"query": "init containers"}}
    )["result"]
    assert called["result"][0]["page"] == "concepts/pods"


def test_discover_describes_every_method_with_its_params(served: Served) -> None:
    doc = served.rpc("rpc.discover")["result"]
    methods = {m["name"]: m for m in doc["methods"]}
    assert doc["openrpc"].startswith("1.")
    assert {
        "agent.chat",
        "search.query",
        "library.list",
        "library.add",
        "library.remove",
        "library.index",
        "library.status",
        "skills.search",
        "skills.status",
        "skills.show",
        "tools.list",
        "tools.route",
        "tools.call",
        "rpc.discover",
    } <= set(methods)
    params = {p["name"]: p for p in methods["search.query"]["params"]}
    assert params["query"]["required"] and params["query"]["schema"]["type"] == "string"
    assert params["mode"]["schema"]["enum"] == ["full", "hybrid", "dense", "lexical"]


def test_batch_answers_each_request_and_skips_notifications(served: Served) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": "a", "method": "library.list"},
        {"jsonrpc": "2.0", "method": "library.list"},  # a notification: no answer
        {"jsonrpc": "2.0", "id": "b", "method": "nope"},
    ]
    with served.client() as client:
        answers = client.post("/rpc", json=batch).json()
    assert [a["id"] for a in answers] == ["a", "b"]
    assert answers[1]["error"]["code"] == -32601


def test_notifications_alone_get_no_content(served: Served) -> None:
    with served.client() as client:
        response = client.post("/rpc", json={"jsonrpc": "2.0", "method": "library.list"})
    assert response.status_code == 204 and response.content == b""


def post(served: Served, body: bytes) -> dict:
    with served.client() as client:
        response = client.post("/rpc", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200
    return response.json()


def test_parse_error(served: Served) -> None:
    error = post(served, b'{"jsonrpc": "2.0", "method"')["error"]
    assert error["code"] == -32700 and error["data"]


def test_invalid_requests(served: Served) -> None:
    assert post(served, b"[]")["error"]["code"] == -32600
    assert post(served, b'{"jsonrpc": "1.0", "id": 1, "method": "x"}')["error"]["code"] == -32600
    assert post(served, b"[1, 2]")[1]["error"]["code"] == -32600
    assert post(served, b'{"jsonrpc": "2.0", "id": {}, "method": "x"}')["error"]["code"] == -32600


def test_method_not_found_lists_the_methods(served: Served) -> None:
    error = served.rpc("search.qeury", {"query": "x"})["error"]
    assert error["code"] == -32601 and "search.query" in error["data"]["methods"]


def test_invalid_params_say_which_field(served: Served) -> None:
    error = served.rpc("search.query", {"query": "pods", "top_k": 0})["error"]
    assert error["code"] == -32602
    assert error["data"][0]["field"] == "top_k"
    assert served.rpc("search.query", {"qeury": "pods"})["error"]["code"] == -32602
    assert served.rpc("search.query", "pods")["error"]["code"] == -32602


def test_heron_errors_become_application_errors(served: Served) -> None:
    error = served.rpc("search.query", {"query": "pods", "library": "nope"})["error"]
    assert error["code"] == -32004 and error["data"]["type"] == "NotFound"
    assert "nope" in error["message"]
    bad = served.rpc("library.add", {"name": "../x", "source": "/tmp"})["error"]
    assert bad["code"] == -32001 and "Invalid library name" in bad["message"]


def not_json(name: str) -> None:
    raise AssertionError(f"a bare {name} in a reply: not JSON")


def test_bugs_and_results_json_cannot_carry_are_internal_errors() -> None:
    registry = Registry()

    def broken(_: object, _rt: object) -> None:
        raise RuntimeError("bug")

    registry.add(
        Method("broken", broken, Params, "Always fails."),
        Method("object", lambda _, _rt: object(), Params, "A result JSON cannot carry."),
        Method("nan", lambda _, _rt: [1.0, float("nan")], Params, "A NaN: sent as null."),
    )
    answer = anyio.run(dispatch, registry, b'{"jsonrpc": "2.0", "id": 7, "method": "broken"}')
    assert answer["error"] == {
        "code": -32603,
        "message": "Internal error in broken.",
        "data": {"type": "RuntimeError"},
    }
    batch = (
        b'[{"jsonrpc": "2.0", "id": 1, "method": "object"}, {"jsonrpc": "2.0", "id": 2},'
        b' {"jsonrpc": "2.0", "id": 3, "method": "nan"}]'
    )
    encoded = encode(anyio.run(dispatch, registry, batch))
    answers = json.loads(encoded, parse_constant=not_json)
    assert [a.get("error", {}).get("code") for a in answers] == [-32603, -32600, None]
    assert answers[2]["result"] == [1.0, None]


def test_a_method_is_registered_once() -> None:
    registry = Registry()
    registry.add(Method("x", lambda _, _rt: 1, Params, "One."))
    with pytest.raises(ValueError, match="registered twice"):
        registry.add(Method("x", lambda _, _rt: 2, Params, "Two."))


def test_rpc_only_takes_post(served: Served) -> None:
    assert httpx.get(f"{served.url}/rpc").status_code == 405


def test_a_body_too_large_is_refused_unread(served: Served) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "library.list", "pad": "' + b"x" * 9_000_000
    with served.client() as client:
        response = client.post(
            "/rpc", content=body + b'"}', headers={"content-type": "application/json"}
        )
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == -32600 and "over 8388608 bytes" in error["message"]


def test_the_methods_mcp_offers_are_declared_beside_them_in_order() -> None:
    """Each feature's ``rpc`` names the tool a method is offered as; MCP lists them in
    ``FEATURES``' order, after Heron's own tools."""
    from heron.server.app import FEATURES

    rows = [method for feature in FEATURES for method in feature.rpc]
    assert len({m.name for m in rows}) == len(rows)  # each method declared once
    assert [(m.tool.name, m.name) for m in rows if m.tool is not None] == [
        ("ask", "agent.chat"),
        ("jobs_list", "jobs.list"),
        ("jobs_get", "jobs.get"),
        ("jobs_events", "jobs.events"),
        ("jobs_create", "jobs.create"),
        ("jobs_confirm", "jobs.confirm"),
        ("jobs_deny", "jobs.deny"),
        ("jobs_abort", "jobs.abort"),
        ("interventions_list", "interventions.list"),
        ("interventions_outcome", "interventions.outcome"),
    ]
