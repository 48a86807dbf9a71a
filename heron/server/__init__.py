"""Heron over HTTP: JSON-RPC, OpenAI-compatible chat, MCP, SSE and operations endpoints.

The server is in three parts, each a package whose docstring says what goes in it:

- ``doors``: one module per protocol a client speaks (``rpc``, ``openai``,
  ``embeddings``, ``audio``, ``mcp``, ``sse``); a door calls the features and the
  library, and owns no state of its own beyond its protocol's;
- ``http``: the plumbing every route shares (middleware, the token and the page's
  sessions, strict JSON, error replies, Server-Sent Events framing, logs); it knows no
  JSON-RPC method and no MCP tool;
- ``features``: what the server does (the library's methods, conversations, uploads,
  jobs, interventions, keys, operations, metrics, reloads), each module declaring its
  JSON-RPC methods (and the MCP tools they are offered as) beside their functions.

Beside them: ``app`` (the app, built from ``FEATURES``; the one registry of every
feature's methods), ``hooks`` (what a feature or door module exports) and ``runtime``
(what requests share). A new protocol is a door, a new endpoint or method a feature.

>>> from heron.server import serve
>>> serve(host="127.0.0.1", port=8765)   # doctest: +SKIP
"""

from __future__ import annotations

from heron.server.app import check_bind, create_app, serve
from heron.server.doors.rpc import Registry, RpcError
from heron.server.runtime import Runtime

__all__ = ["Registry", "RpcError", "Runtime", "check_bind", "create_app", "serve"]
