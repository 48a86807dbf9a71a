"""The features: what the server does beside speaking its protocols. Each module exports
the hooks of ``heron.server.hooks``: its JSON-RPC methods (``rpc``, declared beside their
functions, each offered as an MCP tool where it says so), its routes and its lifespan;
``heron.server.app.FEATURES`` lists them.

- ``methods``: the library's methods, one per CLI command (``search.query``,
  ``library.*``, ``skills.*``, ``tools.*``, ``agent.chat``, ``models.list``); ``local``:
  ``heron search`` and ``heron ask`` sent to the running server; ``explain``: what Heron
  holds and how it decides (``library.pages``, ``library.reindex`` ...);
- ``conversations`` (``sessions.*``), ``uploads`` (``/upload/{library}``,
  ``library.add_files``), ``jobs`` (``jobs.*``, their streams and workers),
  ``interventions`` (``interventions.*``, ``people.*``, their stream and watchers);
- ``keys``: named API keys, their scopes and limits on every request, ``keys.*``;
- ``ops``: ``/health``, ``/ready``, ``/metrics``, ``/doctor``, ``ops.*``; ``metrics``:
  the Prometheus families they show; ``reload``: ``mcp.json``, ``models.yml`` and the
  contexts re-read while the server runs (``ops.reload``).

A new feature is a module here with the three hooks, listed in ``FEATURES``.
"""
