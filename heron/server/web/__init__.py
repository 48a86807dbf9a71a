"""The web page ``heron serve`` answers at ``/``: chat, libraries, skills, tools, jobs,
interventions and operations, each pane a server-rendered Jinja2 shell whose small plain
JavaScript calls the same JSON-RPC and SSE APIs any client uses.

``heron.server.web.pages`` is a server feature (``heron.server.hooks``): its ``routes`` are
what ``heron.server.app`` mounts; the sign-in and its cookie rule are
``heron.server.http.auth``, beside the middleware that applies them. See docs/web.md.
"""

from __future__ import annotations

from heron.server.web.pages import lifespan, routes, rpc

__all__ = ["lifespan", "routes", "rpc"]
