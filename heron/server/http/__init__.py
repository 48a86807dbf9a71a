"""The HTTP plumbing every route passes through or builds on, whichever door or feature
serves it; nothing here knows a JSON-RPC method or an MCP tool.

- the middleware stack (``heron.server.app.edge``): ``middleware`` (request ids, access
  log, the token), ``origins`` (Host and Origin), ``bodies`` (what a request may carry),
  ``contexts`` (which context a request is in, and its runtime: ``runtime_of``);
- who may come in: ``auth`` (the token, the page's sessions and the throttle on wrong
  credentials) with its stores ``signins`` and ``windows`` (in memory, or PostgreSQL for
  replicas);
- reading and answering: ``strictjson`` (bounded JSON in, strict JSON out), ``replies``
  (every error's shape, per door), ``numbers`` (every number a request carries);
- streams: ``events`` (Server-Sent Events framed one way), ``relay`` (a chat stream's
  events in PostgreSQL, for any replica to resume), ``gone`` (work stopped when its
  client leaves);
- ``logs``: one JSON object a line, with the request id.
"""
