"""A running server reloads ``models.yml``, ``mcp.json`` and heron.toml's contexts: on
change (watchfiles), on ``ops.reload`` and on ``SIGHUP``; an invalid file keeps the old
one and ``/ready`` says why."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

import httpx

from heron.server import create_app
from heron.settings import Settings
from tests.jobs.conftest import wait_for
from tests.llm_servers import ChatServer
from tests.server.conftest import free_socket, heron_env, running, start_heron, wait_healthy

MCP_SCRIPT = Path(__file__).parents[1] / "tools" / "test_mcp_client.py"
MODEL = """  {alias}:
    provider: openai
    model: {alias}-test
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
"""


def models_yml(url: str, *aliases: str) -> str:
    return "models:\n" + "".join(MODEL.format(alias=a, url=url) for a in aliases)


def chat(client: httpx.Client, model: str) -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    return client.post("/v1/chat/completions", json=body)


def rpc(client: httpx.Client, method: str) -> Any:
    answer = client.post("/rpc", json={"jsonrpc": "2.0", "id": 1, "method": method}).json()
    return answer["result"]


def test_models_yml_edits_reach_the_running_agent_and_a_bad_one_is_kept_out(
    heron_home: Path, replay: ChatServer, tmp_path: Path
) -> None:
    models = tmp_path / "models.yml"
    models.write_text(models_yml(replay.url, "gpt"))
    settings = Settings(llm={"models_file": models, "retries": 0})
    with running(create_app(settings)) as (url, _), httpx.Client(base_url=url, timeout=60) as c:
        assert chat(c, "gpt").status_code == 200  # the agent is open, on the first table
        assert chat(c, "gpt3").status_code != 200

        models.write_text(models_yml(replay.url, "gpt", "gpt3"))
        ready = wait_for(
            lambda: "gpt3" in c.get("/ready").json()["checks"]["config"]["models"]["aliases"]
        )
        assert ready
        assert chat(c, "gpt3").status_code == 200, "the running agent took the new table"

        models.write_text("models:\n  gpt: [not, a, mapping\n")
        broken = wait_for(lambda: c.get("/ready").json()["checks"]["config"]["models"]["error"])
        assert "not valid YAML" in broken
        page = c.get("/ready")
        assert page.status_code == 503
        config = page.json()["checks"]["config"]
        assert config["ok"] is False and "gpt3" in config["models"]["aliases"]  # the old one
        assert chat(c, "gpt3").status_code == 200  # and it still serves

        models.write_text(models_yml(replay.url, "gpt"))
        assert rpc(c, "ops.reload")["models"]["ok"] is True  # the method, at once
        assert c.get("/ready").json()["checks"]["config"]["ok"] is True


def test_mcp_json_edits_add_and_remove_a_servers_tools(heron_home: Path, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}}))
    settings = Settings(tools={"mcp_config": config})
    with running(create_app(settings)) as (url, _), httpx.Client(base_url=url, timeout=60) as c:

        def names() -> set[str]:
            return {tool["name"] for tool in rpc(c, "tools.list")["tools"]}

        assert not any(n.startswith("osis.") for n in names())  # the toolbox is open now
        server = {"command": sys.executable, "args": [str(MCP_SCRIPT), "serve"]}
        config.write_text(json.dumps({"mcpServers": {"osis": server}}))
        wait_for(lambda: "osis.contact.create" in names())
        status = c.get("/ready").json()["checks"]["config"]["mcp"]
        assert status["servers"] == ["osis"] and status["tools"] == {"osis": 150}

        config.write_text('{"mcpServers": {"osis": {"command": 7}}}')  # invalid: kept out
        wait_for(lambda: c.get("/ready").json()["checks"]["config"]["mcp"]["error"])
        assert "osis.contact.create" in names()

        config.write_text(json.dumps({"mcpServers": {}}))
        wait_for(lambda: not any(n.startswith("osis.") for n in names()))


def test_a_context_with_its_own_mcp_json_sees_its_servers_alone_and_reloads_them(
    heron_home: Path, tmp_path: Path
) -> None:
    """Issue 50: every context was given the server's MCP servers."""
    server = {"command": sys.executable, "args": [str(MCP_SCRIPT), "serve"]}
    shared, own = tmp_path / "mcp.json", tmp_path / "ops-mcp.json"
    shared.write_text(json.dumps({"mcpServers": {"osis": server}}))
    own.write_text(json.dumps({"mcpServers": {"crm": server, "off": {**server, "disabled": True}}}))
    settings = Settings(tools={"mcp_config": shared}, contexts={"ops": {"mcp_config": str(own)}})
    with running(create_app(settings)) as (url, _), httpx.Client(base_url=url, timeout=60) as c:

        def servers(context: str) -> set[str]:
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools.list", "params": {}}
            answer = c.post("/rpc", json=body, headers={"X-Heron-Context": context}).json()
            return {t["name"].split(".")[0] for t in answer["result"]["tools"] if "." in t["name"]}

        assert {"osis"} <= servers("default") and "crm" not in servers("default")
        assert "crm" in servers("ops") and not {"osis", "off"} & servers("ops")

        own.write_text(json.dumps({"mcpServers": {}}))  # its file, watched: its tools go
        assert wait_for(lambda: "crm" not in servers("ops"))
        assert "osis" in servers("default")  # the server's are untouched
        status = rpc(c, "ops.reload")["mcp"]
        assert status["ok"] is True and status["contexts"] == {"ops": []}


def test_sighup_reloads_heron_serve(heron_home: Path, replay: ChatServer, tmp_path: Path) -> None:
    models = tmp_path / "models.yml"
    models.write_text(models_yml(replay.url, "gpt"))
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    env = {**heron_env(heron_home), "HERON_MODELS_FILE": str(models)}
    proc = start_heron(["serve", "--port", str(port)], env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)

        def loaded() -> float:
            return httpx.get(f"{url}/ready").json()["checks"]["config"]["models"]["loaded_at"]

        before = loaded()
        proc.send_signal(signal.SIGHUP)  # nothing changed on disk: only the signal reloads
        assert wait_for(lambda: loaded() > before)
        assert proc.poll() is None
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert "reloaded" in err


def test_a_bad_models_yml_saved_before_the_first_chat_leaves_the_last_good_table(
    heron_home: Path, replay: ChatServer, tmp_path: Path
) -> None:
    # Issue 33: the agent opens on the first chat; it read the file as it was then, so a
    # bad edit saved before it made chat and /v1/models fail. They read the last good one.
    models = tmp_path / "models.yml"
    models.write_text(models_yml(replay.url, "gpt"))
    settings = Settings(llm={"models_file": models, "retries": 0})
    with running(create_app(settings)) as (url, _), httpx.Client(base_url=url, timeout=60) as c:
        models.write_text("models:\n  gpt: [not, a, mapping\n")
        assert wait_for(lambda: c.get("/ready").json()["checks"]["config"]["models"]["error"])
        listed = c.get("/v1/models")
        assert listed.status_code == 200, listed.text
        assert "gpt" in [m["id"] for m in listed.json()["data"]]
        assert "gpt" in [m["alias"] for m in rpc(c, "models.list")]
        answered = chat(c, "gpt")  # the agent's first open, after the bad edit
        assert answered.status_code == 200, answered.text


def test_a_bad_mcp_json_saved_before_the_toolbox_opens_leaves_the_last_good_servers(
    heron_home: Path, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    server = {"command": sys.executable, "args": [str(MCP_SCRIPT), "serve"]}
    config.write_text(json.dumps({"mcpServers": {"osis": server}}))
    settings = Settings(tools={"mcp_config": config})
    with running(create_app(settings)) as (url, _), httpx.Client(base_url=url, timeout=60) as c:
        config.write_text('{"mcpServers": {"osis": {"command": 7}}}')  # before any tool use
        assert wait_for(lambda: c.get("/ready").json()["checks"]["config"]["mcp"]["error"])
        names = {tool["name"] for tool in rpc(c, "tools.list")["tools"]}  # the toolbox opens
        assert "osis.contact.create" in names


def test_heron_toml_contexts_added_changed_and_removed_are_served_without_a_restart(
    heron_home: Path, tmp_path: Path
) -> None:
    """Issue 44: a context added to heron.toml while the server ran was refused ("Define
    it as [contexts.hr] in heron.toml") though it was defined there."""
    config = heron_home / "home" / "heron.toml"  # the home's own: its folder is watched
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{name}.txt").write_text(name)
    hr = '[contexts.hr]\nlibraries = ["tiny"]\nworkspace = "{}"\n'
    listed = {"name": "list_files", "arguments": {"path": "."}}

    def call(c: httpx.Client, method: str, params: Any = None) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        return c.post("/rpc", json=body, headers={"X-Heron-Context": "hr"})

    def files(c: httpx.Client) -> str:
        answer = call(c, "tools.call", listed)
        return json.dumps(answer.json().get("result")) if answer.status_code == 200 else ""

    try:
        with (
            running(create_app(Settings())) as (url, _),
            httpx.Client(base_url=url, timeout=60) as c,
        ):
            refused = call(c, "library.list")
            assert refused.status_code == 404 and "No context 'hr'" in refused.text
            assert "reads heron.toml's contexts again" in refused.text

            config.write_text(hr.format(tmp_path / "a"))  # seen by the watcher
            assert wait_for(lambda: call(c, "library.list").status_code == 200)
            assert [lib["name"] for lib in call(c, "library.list").json()["result"]] == ["tiny"]
            assert "a.txt" in files(c)  # its runtime is open now, rooted at a
            status = c.get("/ready").json()["checks"]["config"]["settings"]
            assert status["ok"] is True and status["contexts"] == ["hr"]

            config.write_text("server_port = 9999\n" + hr.format(tmp_path / "b"))
            reloaded = rpc(c, "ops.reload")["settings"]  # in force once it answers
            assert reloaded["ok"] is True and reloaded["contexts"] == ["hr"]
            seen = files(c)
            assert "b.txt" in seen and "a.txt" not in seen  # made again from its new table
            assert reloaded["restart"] == ["server_port"]  # read at start only: said so
            ready = c.get("/ready").json()["checks"]["config"]
            assert ready["ok"] is True and ready["settings"]["restart"] == ["server_port"]

            config.write_text("[contexts.hr]\nlibrary = []\n")  # invalid: kept out
            broken = rpc(c, "ops.reload")["settings"]
            assert broken["ok"] is False and "hr.library: Extra inputs" in broken["error"]
            assert c.get("/ready").status_code == 503
            assert "b.txt" in files(c)  # the last good contexts serve on

            config.write_text("")  # removed, and the port as it was
            emptied = rpc(c, "ops.reload")["settings"]
            assert (emptied["contexts"], emptied["restart"]) == ([], [])
            assert call(c, "library.list").status_code == 404
            assert c.get("/ready").json()["checks"]["config"]["ok"] is True
    finally:
        config.unlink(missing_ok=True)
