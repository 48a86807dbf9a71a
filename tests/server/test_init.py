"""``heron.server`` exports what its ``__all__`` says, and the app has every route."""

from __future__ import annotations

import heron.server
from heron.server import create_app
from heron.settings import Settings


def test_all_names_exist() -> None:
    for name in heron.server.__all__:
        assert hasattr(heron.server, name), name


def test_app_routes(tmp_path) -> None:
    app = create_app(Settings(home=tmp_path))
    paths = {route.path for route in app.routes}
    assert {"/rpc", "/v1/chat/completions", "/v1/models", "/chat/stream", "/mcp"} <= paths
    assert {"/health", "/ready", "/metrics"} <= paths
