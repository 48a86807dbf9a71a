"""The web page ``heron serve`` answers at ``/``: chat, libraries, skills, tools, jobs,
interventions and operations, each pane a server-rendered Jinja2 shell whose small plain
JavaScript calls the same JSON-RPC and SSE APIs any client uses.

``routes(token)`` is what ``heron.server.app`` mounts; ``heron.web.auth`` is the sign-in
and the cookie rule ``heron.server.middleware.TokenMiddleware`` applies. See docs/web.md.
"""

from __future__ import annotations

from heron.web.pages import routes

__all__ = ["routes"]
