"""One MCP door: a client connected only to Heron reaches the tools of three MCP servers
of 50 tools each, holding a few schemas instead of 150 (``tests/server/mcp_fleet.py``;
the figures: ``python -m bench mcp-door``)."""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.server.conftest import heron_env
from tests.server.mcp_fleet import PER_SERVER, REQUESTS, SERVERS, door, mcp_config

ROOT = Path(__file__).parents[2]


def test_a_client_of_heron_alone_finds_and_runs_the_fleets_tools(tmp_path: Path) -> None:
    env = heron_env(tmp_path) | {"HERON_MCP_CONFIG": str(mcp_config(tmp_path / "mcp.json"))}
    seen = anyio.run(door, env, ROOT)
    assert seen.direct_tools == SERVERS * PER_SERVER
    assert seen.called == REQUESTS  # every call_tool reached the tool it named
    assert seen.found_first_call >= 0.8, seen.ranks
    assert seen.held_tokens * 3 < seen.direct_tokens, (seen.held_tokens, seen.direct_tokens)
