"""Heron over HTTP: JSON-RPC, OpenAI-compatible chat, MCP, SSE and operations endpoints.

>>> from heron.server import serve
>>> serve(host="127.0.0.1", port=8765)   # doctest: +SKIP
"""

from __future__ import annotations

from heron.server.app import check_bind, create_app, serve
from heron.server.doors.rpc import Registry, RpcError
from heron.server.runtime import Runtime

__all__ = ["Registry", "RpcError", "Runtime", "check_bind", "create_app", "serve"]
