"""End-to-end: the real ``heron tools`` command on a fresh data directory, with the MCP
test server of ``test_mcp_client.py`` configured in ``$HERON_HOME/mcp.json``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.run_heron import run_heron

SERVER = Path(__file__).with_name("test_mcp_client.py")
DEFINITIONS = {
    "tools": [
        {"name": "crm.lead.score", "description": "Score a sales lead.", "inputSchema": {}},
        {"name": "weather", "description": "Weather forecast for a city.", "inputSchema": {}},
    ]
}


def heron(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    return run_heron("tools", *args, ok=ok)


@pytest.fixture
def configured(home: Path, tmp_path: Path) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    servers = {
        "osis": {"command": "${PYTHON}", "args": [str(SERVER), "serve"]},
        "gone": {"command": "${PYTHON}", "args": [str(SERVER), "exit"], "timeout": 10},
    }
    (home / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "defs.json").write_text(json.dumps(DEFINITIONS))
    return tmp_path


def test_import_list_route_and_call(configured: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHON", sys.executable)
    assert json.loads(heron("import", str(configured / "defs.json"), "--json").stdout) == {
        "imported": ["crm.lead.score", "weather"],
        "source": "import:defs.json",
    }
    listed = json.loads(heron("list", "--json").stdout)
    servers = {s["name"]: s for s in listed["servers"]}
    assert servers["osis"]["tools"] == 150 and servers["gone"]["error"]
    names = {t["name"] for t in listed["tools"]}
    assert {"osis.contact.list", "crm.lead.score", "search_docs", "read_skill"} <= names

    queries = configured / "q.jsonl"
    queries.write_text(
        json.dumps({"id": "q1", "text": "create a new invoice"})
        + "\n"
        + json.dumps({"id": "q2", "text": "will it rain in Porto?"})
        + "\n"
    )
    lines = heron("route", "--queries", str(queries), "--profile", "openai", "-k", "3").stdout
    out = [json.loads(line) for line in lines.splitlines()]
    assert [o["id"] for o in out] == ["q1", "q2"]
    assert out[0]["results"][0]["name"] == "osis.invoice.create"
    assert out[0]["results"][0]["encoded"] == "osis_invoice_create"
    assert out[1]["results"][0]["name"] == "weather"
    assert {"id", "score", "dense_score", "lexical_score", "reason"} <= set(out[0]["results"][0])

    single = json.loads(heron("route", "list my contacts", "--json").stdout)
    assert single["mode"] == "hybrid" and single["dropped"]

    called = heron("call", "osis.deal.get", "--args", '{"query": "acme"}', "--json")
    result = json.loads(called.stdout)["result"]
    assert json.loads(result["content"][0]["text"])["tool"] == "osis.deal.get"
    assert "skipped MCP server gone" in called.stderr


def test_errors_name_the_fix(home: Path, tmp_path: Path) -> None:
    done = heron("call", "nope", "--args", "{", ok=False)
    assert done.returncode == 1 and "--args is not valid JSON" in done.stderr
    done = heron("route", "x", "--mode", "fuzzy", ok=False)
    assert "Choose from: pattern, semantic, hybrid" in done.stderr
    done = heron("import", str(tmp_path / "none.json"), ok=False)
    assert "No tool file" in done.stderr
