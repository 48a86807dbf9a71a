"""``heron doctor``: on a real home (a tiny indexed library and a skill), with real MCP
servers, a loopback model server, a damaged store; from Python, the CLI and the server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from heron.errors import InputError
from heron.ops.doctor import CHECKS, doctor
from heron.settings import Settings
from tests.llm_servers import KEY, ONE_MODEL, serve
from tests.run_heron import run_heron
from tests.server import conftest as served
from tests.server.conftest import running

MCP_SCRIPT = Path(__file__).parents[1] / "tools" / "test_mcp_client.py"
CHECK_KEYS = {"name", "ok", "status", "detail", "fix", "seconds", "data"}

#: The served tests' home fixture (a tiny indexed library ``tiny``, one skill), here too.
heron_home = served.heron_home


def by_name(report: dict) -> dict[str, dict]:
    return {check["name"]: check for check in report["checks"]}


def test_a_healthy_home_passes_every_check_in_the_watchdogs_shape(heron_home: Path) -> None:
    report = doctor(Settings(), offline=True).to_dict()
    assert set(report) == {"ok", "seconds", "checks"}
    assert [c["name"] for c in report["checks"]] == list(CHECKS)
    for check in report["checks"]:
        assert set(check) == CHECK_KEYS
        assert check["status"] in ("ok", "warn", "skip"), check
        assert check["ok"] is True and isinstance(check["seconds"], float)
    assert report["ok"] is True
    checks = by_name(report)
    assert checks["libraries"]["data"]["libraries"]["tiny"]["canary"]["citation"].startswith(
        "(tiny, "
    )
    assert checks["models"]["status"] == "skip"  # --offline
    assert checks["store"]["data"]["namespaces"]["tiny"] > 0
    settings = checks["settings"]["data"]["settings"]
    assert settings["home"]["source"] == "env"
    assert settings["server_port"] == {"value": 8765, "source": "default"}
    assert checks["skills"]["data"]["skills"] == 1
    # Fast enough to run every minute: the tiny home is checked well within a second or two.
    assert report["seconds"] < 5


def test_settings_name_their_source(heron_home: Path, default_profile: None) -> None:
    (heron_home / "home" / "heron.toml").write_text("server_port = 9000\n")
    try:
        report = doctor(Settings(agent={"max_steps": 2}), checks=["settings"]).to_dict()
    finally:
        (heron_home / "home" / "heron.toml").unlink()
    settings = by_name(report)["settings"]["data"]["settings"]
    assert settings["server_port"] == {"value": 9000, "source": "heron.toml"}
    assert settings["agent_max_steps"] == {"value": 2, "source": "argument"}
    assert settings["embedder"] == {"value": "auto", "source": "default"}


def test_an_unindexed_library_fails_with_the_command_to_run(
    heron_home: Path, tmp_path: Path
) -> None:
    from heron.libraries import add_library, remove_library

    add_library("later", str(tmp_path), Settings())
    try:
        report = doctor(Settings(), checks=["libraries"], offline=True)
    finally:
        remove_library("later", Settings())
    (check,) = report.checks
    assert not report.ok and check.status == "fail"
    assert "later is not indexed" in check.detail
    assert check.fix == "run: heron index later"


def test_scanned_pages_are_named_by_the_libraries_check(heron_home: Path, tmp_path: Path) -> None:
    from heron.libraries import add_library, index_library
    from heron.libraries.library import forget_library
    from heron.store import open_store
    from tests.libraries import documents

    # A cover page with text, then two pages that are images only: a scan.
    (tmp_path / "audit.pdf").write_bytes(documents.pdf([["The 2019 audit"], None, None]))
    add_library("scans", str(tmp_path), Settings())
    store = open_store(Settings())
    try:
        assert index_library("scans", store, settings=Settings()).error is None
        report = doctor(Settings(), checks=["libraries"], offline=True)
    finally:
        forget_library("scans", store, Settings())
        store.close()
    (check,) = report.checks
    assert report.ok and check.status == "warn"
    assert "scans/audit.pdf pages 2, 3" in check.detail and "HERON_LIBRARY_OCR=true" in check.fix


def test_mcp_servers_are_reached_with_tool_counts_and_a_dead_one_fails(
    heron_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "mcp.json"
    servers = {"osis": {"command": sys.executable, "args": [str(MCP_SCRIPT), "serve"]}}
    config.write_text(json.dumps({"mcpServers": servers}))
    monkeypatch.setenv("HERON_MCP_CONFIG", str(config))
    report = doctor(Settings(), checks=["tools"]).to_dict()  # tools needs mcp: both run
    checks = by_name(report)
    assert list(checks) == ["mcp", "tools"]
    osis = checks["mcp"]["data"]["servers"]["osis"]
    assert checks["mcp"]["status"] == "ok" and osis["tools"] == 150 and osis["seconds"] > 0
    assert checks["tools"]["data"]["tools"] >= 150  # the servers' tools and the built-ins
    assert checks["tools"]["data"]["mode"] == "hybrid"

    offline = by_name(doctor(Settings(), checks=["tools"], offline=True).to_dict())
    assert offline["mcp"]["status"] == "skip" and offline["mcp"]["data"]["servers"] == ["osis"]
    assert offline["tools"]["status"] == "ok" and offline["tools"]["data"]["current"] is None

    servers["dead"] = {"command": sys.executable, "args": [str(MCP_SCRIPT), "exit"]}
    config.write_text(json.dumps({"mcpServers": servers}))
    (mcp,) = doctor(Settings(), checks=["mcp"]).checks
    assert mcp.status == "fail" and mcp.detail.startswith("dead: ")
    assert str(config) in (mcp.fix or "")

    config.write_text("{not json")
    (mcp,) = doctor(Settings(), checks=["mcp"]).checks
    assert mcp.status == "fail" and "not valid JSON" in mcp.detail


def test_the_tool_index_is_current_once_built(heron_home: Path) -> None:
    from heron.wiring import open_tools

    box = open_tools(Settings(), connect=False)
    try:
        box.router()  # builds the index, as the first routed request does
    finally:
        box.close()
    (tools,) = [c for c in doctor(Settings(), checks=["tools"]).checks if c.name == "tools"]
    assert tools.status == "ok" and tools.data["current"] is True, tools
    assert "routing hybrid, top 10, threshold 0.25" in tools.detail  # the agent's settings
    pinned = Settings(agent={"routing_always_include": ["read_skill", "no_such_tool"]})
    (tools,) = [c for c in doctor(pinned, checks=["tools"]).checks if c.name == "tools"]
    assert tools.status == "warn" and "unknown tools: no_such_tool" in tools.detail


def test_models_answer_a_one_token_call_or_fail_with_the_fix(
    heron_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = tmp_path / "models.yml"
    monkeypatch.setenv("HERON_MODELS_FILE", str(models))
    monkeypatch.setenv("TEST_OPENAI_KEY", KEY)
    with serve() as server:
        models.write_text(ONE_MODEL.format(url=server.url))
        (check,) = doctor(Settings(), checks=["models"]).checks
        assert check.status == "ok" and check.data["models"]["gpt"]["ok"] is True
        assert server.requests  # the model was really called
    # The server is gone now: the same model fails, and says what to fix.
    (check,) = doctor(Settings(llm={"retries": 0}), checks=["models"]).checks
    assert check.status == "fail" and check.detail.startswith("gpt: ")
    assert str(models) in (check.fix or "")
    (check,) = doctor(Settings(), checks=["models"], offline=True).checks
    assert check.status == "skip" and check.data["models"] == ["gpt", "local"]


def test_a_damaged_store_fails_and_what_needs_it_is_skipped(
    heron_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"SQLite format 3\x00" + b"\x13" * 8192)
    monkeypatch.setenv("HERON_DATABASE_URL", f"sqlite:///{bad}")
    report = doctor(Settings(), offline=True)
    checks = {c.name: c for c in report.checks}
    assert not report.ok and checks["store"].status == "fail"
    assert "corrupt" in checks["store"].detail and "heron index" in checks["store"].detail
    assert (
        checks["libraries"].status == "skip" and "store did not open" in checks["libraries"].detail
    )
    assert checks["settings"].ok and checks["disk"].ok


def test_unknown_check_names_the_known_ones(heron_home: Path) -> None:
    with pytest.raises(InputError, match="Choose from: settings, extras, translation, disk, store"):
        doctor(Settings(), checks=["stor"])


def test_cli_json_and_exit_status(
    heron_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = run_heron("doctor", "--json", "--offline", "--check", "store", "--check", "disk")
    report = json.loads(done.stdout)
    assert [c["name"] for c in report["checks"]] == ["disk", "store"] and report["ok"]
    text = run_heron("doctor", "--offline", "--check", "libraries").stdout
    assert "ok" in text and "tiny" in text and "all checks pass" in text
    unknown = run_heron("doctor", "--check", "nope", ok=False)
    assert unknown.returncode == 1 and "Choose from:" in unknown.stderr
    monkeypatch.setenv("HERON_DATABASE_URL", f"sqlite:///{tmp_path / 'nowhere.db'}")
    failing = run_heron("doctor", "--check", "store", ok=False)
    assert failing.returncode == 1 and "next:" in failing.stdout and "heron index" in failing.stdout


def test_settings_that_do_not_load_are_the_failed_settings_check(
    heron_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 44: ``HERON_CONFIG`` naming a missing file passed as "ok settings"."""
    missing = tmp_path / "nope.toml"
    monkeypatch.setenv("HERON_CONFIG", str(missing))
    done = run_heron("doctor", "--json", "--offline", ok=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    checks = by_name(report)
    assert list(checks) == list(CHECKS) and report["ok"] is False
    settings = checks["settings"]
    assert settings["status"] == "fail" and f"HERON_CONFIG names {missing}" in settings["detail"]
    assert "heron doctor --check settings" in settings["fix"]
    assert {c["status"] for name, c in checks.items() if name != "settings"} == {"skip"}
    text = run_heron("doctor", "--check", "store", ok=False).stdout
    assert text.startswith("fail settings") and "skip store" in text
    assert "does not exist" in run_heron("info", ok=False).stderr  # every command says it


def test_the_server_answers_get_doctor_and_ops_doctor(heron_home: Path) -> None:
    import httpx

    from heron.server import create_app

    with (
        running(create_app(Settings())) as (url, _),
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        page = client.get("/doctor", params={"check": ["store", "libraries", "models"]})
        params = {"checks": ["disk"], "offline": True}
        call = {"jsonrpc": "2.0", "id": 1, "method": "ops.doctor", "params": params}
        rpc = client.post("/rpc", json=call)
        bad = client.get("/doctor", params={"check": "nope"})
    assert page.status_code == 200, page.text
    checks = by_name(page.json())
    assert list(checks) == ["store", "libraries", "models"] and checks["libraries"]["ok"]
    assert checks["models"]["status"] == "skip"  # GET is offline unless offline=0
    result = rpc.json()["result"]
    assert result["ok"] is True and [c["name"] for c in result["checks"]] == ["disk"]
    assert bad.status_code == 400 and "Choose from" in bad.json()["error"]["message"]
