"""Tools for agents: a registry, MCP servers, provider-safe names and routing.

See docs/tools.md. ``heron.wiring.open_tools()`` gives every tool the settings describe
(this package's and the capabilities'); ``Toolbox.router()`` picks the ones to offer per
request. ``Tool``, ``NameCodec`` and the tool errors live in ``heron.core``, below every
capability, and are re-exported here.
"""

from __future__ import annotations

from heron.core.errors import ServerError, ToolCallError, ToolError, ToolInputError, UnknownTool
from heron.core.names import (
    ANTHROPIC,
    GEMINI,
    OPENAI,
    PROFILES,
    STRICT,
    NameCodec,
    NameProfile,
    get_profile,
)
from heron.core.tools import SAFETY_LEVELS, Safety, Tool, parse_tools
from heron.core.workspace import Workspace
from heron.tools.builtin import register_builtins
from heron.tools.mcp_client import MCPClient, ServerConfig, ServerStatus, load_config
from heron.tools.pyexec import LOCAL_ONLY
from heron.tools.registry import ToolRegistry, load_imported, read_tool_file, save_imported
from heron.tools.router import ROUTE_MODES, Route, RoutedTool, RouteMode, SyncReport, ToolRouter
from heron.tools.toolbox import Toolbox, open_toolbox

__all__ = [
    "ANTHROPIC",
    "GEMINI",
    "LOCAL_ONLY",
    "OPENAI",
    "PROFILES",
    "ROUTE_MODES",
    "SAFETY_LEVELS",
    "STRICT",
    "MCPClient",
    "NameCodec",
    "NameProfile",
    "Route",
    "RouteMode",
    "RoutedTool",
    "Safety",
    "ServerConfig",
    "ServerError",
    "ServerStatus",
    "SyncReport",
    "Tool",
    "ToolCallError",
    "ToolError",
    "ToolInputError",
    "ToolRegistry",
    "ToolRouter",
    "Toolbox",
    "UnknownTool",
    "Workspace",
    "get_profile",
    "load_config",
    "load_imported",
    "open_toolbox",
    "parse_tools",
    "read_tool_file",
    "register_builtins",
    "save_imported",
]
