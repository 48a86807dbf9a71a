"""One MCP door (issue 30): an MCP client connected only to ``heron mcp`` reaches the
tools of three MCP servers of 50 MetaTool tools each (``tests/server/mcp_fleet.py``),
against the same client connected to the three servers directly.

For each of 20 MetaTool requests (one per tool, evenly spread over the fleet) the client
calls ``find_tools`` once (top 5) and runs the gold tool with ``call_tool``. Figures: the
tools in the client's list, the tokens of tool schemas it holds (Heron's estimate, 4
characters a token: Heron's ``tools/list`` plus the largest ``find_tools`` answer,
against every server's ``tools/list``), where the gold tool was in the first answer, and
how many calls reached it.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import anyio

from bench.common import WORK, table
from tests.server.conftest import heron_env
from tests.server.mcp_fleet import PER_SERVER, REQUESTS, SERVERS, TOP_K, door, mcp_config

ROOT = Path(__file__).resolve().parents[1]


def run() -> str:
    home = WORK / "mcp_door"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    env = heron_env(home) | {"HERON_MCP_CONFIG": str(mcp_config(home / "mcp.json"))}
    started = time.perf_counter()
    seen = anyio.run(door, env, ROOT)
    seconds = time.perf_counter() - started
    found = sum(r is not None for r in seen.ranks)
    first = sum(r == 1 for r in seen.ranks)
    rows = [
        [
            "through Heron (find_tools + call_tool)",
            seen.heron_tools,
            f"{seen.held_tokens:,}",
            f"{found}/{REQUESTS} ({seen.found_first_call:.0%}); #1: {first}",
            f"{seen.called}/{REQUESTS}",
        ],
        [
            f"each of the {SERVERS} servers directly",
            seen.direct_tools,
            f"{seen.direct_tokens:,}",
            "(all listed)",
            "-",
        ],
    ]
    ratio = seen.direct_tokens / seen.held_tokens
    return table(
        f"MCP door: {SERVERS} servers x {PER_SERVER} tools, {REQUESTS} requests, top {TOP_K}; "
        f"schema tokens held {ratio:.1f}x fewer through Heron; whole run {seconds:.0f} s",
        ["client", "tools listed", "schema tokens held", "gold in first find_tools", "calls ok"],
        rows,
    )
