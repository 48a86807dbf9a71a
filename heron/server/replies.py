"""Error replies at the HTTP edge, in the shape each door's clients read: a JSON-RPC error
object on ``/rpc``, OpenAI's ``{"error": {...}}`` everywhere else. Never HTML, never a
traceback.

>>> for_path("/v1/models", 421, "Unknown Host.", "host_not_allowed").body
b'{"error": {"message": "Unknown Host.", "type": "host_not_allowed", "param": null, "code": null}}'
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import Response

from heron.server.rpc import INTERNAL_ERROR, INVALID_REQUEST, RpcError
from heron.server.strictjson import StrictJSONResponse


def openai_error(
    status: int,
    message: str,
    kind: str,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """OpenAI's error body: ``{"error": {"message", "type", "param", "code"}}``."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return StrictJSONResponse(body, status_code=status, headers=headers)


def rpc_error(
    status: int, message: str, kind: str, headers: Mapping[str, str] | None = None
) -> Response:
    """A JSON-RPC error answer with ``id: null`` (the request was never read as one):
    -32603 for a server failure, -32600 for a request refused at the door."""
    code = INTERNAL_ERROR if status >= 500 else INVALID_REQUEST
    answer = RpcError(code, message, {"type": kind, "status": status}).answer(None)
    return StrictJSONResponse(answer, status_code=status, headers=headers)


def for_path(
    path: str,
    status: int,
    message: str,
    kind: str,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The error reply for a request to ``path``, in that route's shape."""
    if path == "/rpc":
        return rpc_error(status, message, kind, headers)
    return openai_error(status, message, kind, headers=headers)
