"""Every reply the server builds besides a result, and the one way a JSON body is read.

Errors come in one shape per door: a JSON-RPC error object on ``/rpc`` (``rpc_error``),
OpenAI's ``{"error": {"message", "type", "param", "code"}}`` on every other route
(``openai_error``), never HTML, never a traceback. ``for_path`` picks the shape for a
path; ``heron_error`` turns a ``HeronError`` into its status and body, as its row of the
error table (``heron.errors``) says;
``read_body`` reads a request's JSON body into a pydantic model, or answers the 400.

>>> for_path("/v1/models", 421, "Unknown Host.", "host_not_allowed").body
b'{"error": {"message": "Unknown Host.", "type": "host_not_allowed", "param": null, "code": null}}'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from heron.errors import HeronError
from heron.server.doors.rpc import INTERNAL_ERROR, INVALID_REQUEST, RpcError
from heron.server.http.strictjson import StrictJSONResponse, read_json

M = TypeVar("M", bound=BaseModel)


def error_body(
    message: str, kind: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error object, also what a stream sends as its ``data:`` line mid-answer."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def openai_error(
    status: int,
    message: str,
    kind: str,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    param: str | None = None,
) -> Response:
    """OpenAI's error reply: ``error_body`` with ``status``."""
    body = error_body(message, kind, code, param)
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


def invalid(message: str, param: str | None = None) -> Response:
    """400 in OpenAI's shape; the message (and ``param``) name the field at fault."""
    return openai_error(400, message, "invalid_request_error", param=param)


def not_found(message: str) -> Response:
    """404 in OpenAI's shape; the message says where to find what is there."""
    return openai_error(404, message, "not_found")


def retry_after(exc: HeronError) -> dict[str, str]:
    """``Retry-After`` (whole seconds, rounded up, as HTTP has it) for an error that says
    when to ask again: a provider's 429, a cooldown, a key over a limit."""
    wait = exc.retry_after
    return {} if wait is None else {"Retry-After": str(max(1, math.ceil(wait)))}


#: OpenAI's error ``type`` for a status.
KINDS = {403: "permission_error", 429: "rate_limit_error", 503: "service_unavailable"}


def heron_error(exc: HeronError) -> Response:
    """``exc`` as OpenAI's error reply (its ``http_status``, its ``openai_type`` or the
    status's, its class as the ``code``), with ``Retry-After`` where the error says when
    to ask again."""
    status = exc.http_status
    kind = exc.openai_type or KINDS.get(status)
    kind = kind or ("invalid_request_error" if status < 500 else "server_error")
    return openai_error(status, str(exc), kind, type(exc).__name__, retry_after(exc))


async def read_body(request: Request, model: type[M]) -> M | Response:
    """The body validated as ``model``, or the 400 saying what is wrong with it (the
    first problem, its field as ``param``)."""
    try:
        return model.model_validate(await read_json(request))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        return invalid(f"Invalid request: {where or 'body'}: {first['msg']}.", where)
    except ValueError as exc:  # not JSON, or JSON Heron does not take (too deep, NaN)
        return invalid(f"Invalid request: {exc}")
