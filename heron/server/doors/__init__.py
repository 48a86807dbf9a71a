"""The doors: each module speaks one protocol a client talks to Heron in, and calls the
features and the library for everything else.

- ``rpc``: JSON-RPC 2.0 (``POST /rpc``): the ``Registry`` of every feature's methods, the
  dispatcher and the OpenRPC document (``rpc.discover``); a feature declares its methods
  with ``Methods`` (``heron.server.hooks``);
- ``openai``: OpenAI's Chat Completions (``/v1/chat/completions``, ``/v1/models``);
  ``embeddings`` (``/v1/embeddings``) and ``audio`` (``/v1/audio/*``) beside it;
- ``mcp``: MCP at ``/mcp`` and ``/mcp/{server}`` (and over stdio, ``heron mcp``): Heron's
  own tools and the methods a feature offers as tools (``Method.tool``);
- ``sse``: ``POST /chat/stream``, a chat answer as resumable Server-Sent Events.

A new door is a module here with the feature hooks (its ``routes`` and ``lifespan``),
listed in ``heron.server.app.FEATURES``; what it refuses it answers through
``heron.server.http.replies``.
"""
