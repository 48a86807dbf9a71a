"""JSON-RPC 2.0 methods: one registry that the dispatcher runs and ``rpc.discover`` describes.

A method is a function taking one pydantic model (its params) and returning something
JSON-able (a pydantic model is dumped). Sync functions run in the threadpool, async ones
are awaited. The same ``Method`` gives the dispatcher its validation and the OpenRPC
document its schemas, so the two cannot drift.

Declaring: a feature module (``heron.server.hooks``) lists its methods in ``rpc``, a
``Methods``, each declared with the decorator beside its function; ``tool`` offers it
over MCP too (``heron.server.doors.mcp``)::

    rpc = Methods(reach="context", scope="jobs")

    class GetParams(Params):
        id: str

    @rpc.method("jobs.get", GetParams, summary="One job.", tool=McpTool("jobs_get", ...))
    def get(params: GetParams, rt: Runtime) -> dict[str, Any]:
        return rt.jobs.get(params.id).to_dict()

``heron.server.app.rpc_registry`` gathers every feature's ``rpc`` into the server's one
``Registry``, which also answers ``rpc.discover`` itself.

Every params model derives from ``Params``, which refuses fields it does not declare.
Params arrive by name (``{"id": ...}``) or by position (``["9f3c..."]``, mapped onto
the model's fields in order). Errors:

- a ``HeronError`` raised by a method becomes an application error: its class's
  ``rpc_code`` (the error table, ``heron.errors``: -32001 bad input, -32004 not found,
  -32007 a model rate limited upstream or cooling down, ...) and its message, which says
  what to do; ``data.retry_after`` in seconds where the error says when to ask again;
- ``RpcError(code, message, data)`` lets a method choose the code itself;
- a pydantic ``ValidationError`` of the params is -32602 with the problems in ``data``;
- anything else is -32603 with the exception type in ``data``, never an HTTP 500.

**Contexts** (``heron.core.contexts``): ``dispatch`` is handed the runtime of the
request's context. Every method takes its params and a runtime (``def search(p, rt)``),
and declares its ``reach``: ``"context"`` ones act inside the caller's context and are
handed that runtime; the others are handed the server's (``Registry.runtime``):
``"server"`` ones read nothing a context owns (``rpc.discover``) and answer in any
context; ``"default"`` ones (the default reach: ``ops.*``, not scoped yet) answer only
in the default context, and elsewhere are -32601 saying so, so a method
nobody scoped cannot show one context what is another's.

Bodies are read with ``heron.server.http.strictjson``: a body that is not JSON (bad syntax,
empty, invalid UTF-8) is -32700; one nested past ``MAX_DEPTH`` or holding ``NaN``,
``Infinity`` or an overflowing number such as ``1e400`` is -32600 with ``id: null`` (the
id is never echoed as a bare ``Infinity``); a batch of more than ``max_batch`` calls is
one -32600 naming the limit. Answers are strict JSON (``strictjson.dumps``).

>>> await dispatch(registry, b'{"jsonrpc": "2.0", "id": 1, "method": "rpc.discover"}')
... # doctest: +SKIP
{'jsonrpc': '2.0', 'id': 1, 'result': {'openrpc': '1.3.2', ...}}
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.concurrency import run_in_threadpool

from heron.core.contexts import DEFAULT
from heron.core.tools import Safety
from heron.errors import HeronError
from heron.keys import Forbidden, OverLimit
from heron.server.http.strictjson import JsonRefused, aloads, dumps

if TYPE_CHECKING:
    from heron.server.runtime import Runtime

log = logging.getLogger("heron.server")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: The caller's key lacks the method's scope (``heron.server.features.keys``); ``data.scope``.
FORBIDDEN = Forbidden.rpc_code
#: The caller's key is over a limit; ``data.retry_after`` is in seconds.
RATE_LIMITED = OverLimit.rpc_code
#: A method's scope unless it names one (``heron.keys.SCOPES``): admin, so a method
#: nobody thought about is not open to every key.
DEFAULT_SCOPE = "admin"

OPENRPC_VERSION = "1.3.2"
#: Calls one batch may hold unless the server says otherwise (``HERON_SERVER_MAX_BATCH``).
MAX_BATCH = 100

Func = Callable[..., Any] | Callable[..., Awaitable[Any]]
#: Where a method answers: inside the caller's context, in any, or in the default only.
Reach = Literal["context", "server", "default"]


class RpcError(Exception):
    """An error answered as ``{"code", "message", "data"}``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def answer(self, id_: Any) -> dict[str, Any]:
        """The response object carrying this error for request ``id_``."""
        return {"jsonrpc": "2.0", "id": id_, "error": self.to_dict()}


#: The name the server's registry is kept by in its runtime (``Runtime.shared``), where
#: the MCP door and ``interventions.act`` find it (``registry_of``).
REGISTRY = "rpc:registry"


class Params(BaseModel):
    """The base of every method's params: a field the method does not declare is the
    caller's error (-32602), not silently dropped. As it is, the params of a method that
    takes none."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class McpTool:
    """A JSON-RPC method offered as an MCP tool (``heron.server.doors.mcp``): its name
    there, its title, how much harm it can do (``mcp_tool_safety`` must allow it), and
    whether calling it twice is as calling it once."""

    name: str
    title: str
    safety: Safety
    idempotent: bool


@dataclass(frozen=True)
class Method:
    """One method: ``func(params, runtime)``, its params' model and what OpenRPC says."""

    name: str
    func: Func
    params: type[BaseModel]
    summary: str
    result_schema: dict[str, Any] | None = None
    reach: Reach = "default"
    #: The key scope a caller needs (``heron.keys.SCOPES``).
    scope: str = DEFAULT_SCOPE
    #: How MCP offers it as a tool; ``None``: it does not.
    tool: McpTool | None = None

    def describe(self) -> dict[str, Any]:
        """This method as an OpenRPC Method Object, params from the pydantic model."""
        schema = self.params.model_json_schema(ref_template="#/components/schemas/{model}")
        defs = schema.pop("$defs", {})
        required = set(schema.get("required", []))
        params = [
            {"name": name, "required": name in required, "schema": prop}
            | ({"description": prop["description"]} if "description" in prop else {})
            for name, prop in schema.get("properties", {}).items()
        ]
        result = {"name": "result", "schema": self.result_schema or {}}
        return {
            "name": self.name,
            "summary": self.summary,
            "paramStructure": "either",
            "params": params,
            "result": result,
            "x-reach": self.reach,  # where it answers (contexts)
            "x-scope": self.scope,
            "x-defs": defs,
        }


class Methods(list[Method]):
    """A feature's methods, in the order declared: ``@rpc.method(...)`` beside each
    function adds it. ``reach`` and ``scope``: those of a method that names none."""

    def __init__(self, *, reach: Reach = "default", scope: str = DEFAULT_SCOPE) -> None:
        super().__init__()
        self.reach = reach
        self.scope = scope

    def method(
        self,
        name: str,
        params: type[BaseModel] = Params,
        *,
        summary: str,
        result_schema: dict[str, Any] | None = None,
        reach: Reach | None = None,
        scope: str | None = None,
        tool: McpTool | None = None,
    ) -> Callable[[Func], Func]:
        def declare(func: Func) -> Func:
            reached, scoped = reach or self.reach, scope or self.scope
            self.append(Method(name, func, params, summary, result_schema, reached, scoped, tool))
            return func

        return declare


@dataclass
class Registry:
    """The methods a server answers, ``rpc.discover`` among them: ``add`` to register,
    ``dispatch`` to run."""

    methods: dict[str, Method] = field(default_factory=dict)
    #: The server's runtime, handed to the methods that do not act in a context.
    runtime: Runtime | None = None
    #: Told ``(method, seconds, ok)`` after each call of a registered method (metrics).
    observer: Callable[[str, float, bool], None] | None = None
    #: Run before each call of a registered method; raises ``RpcError`` to refuse it
    #: (``heron.server.features.keys.rpc_gate``: the caller's scopes and limits).
    gate: Callable[[Method], None] | None = None

    def __post_init__(self) -> None:
        # The door describes itself: every registry answers rpc.discover.
        summary = "This API as an OpenRPC document."
        self.add(
            Method("rpc.discover", self._discover, Params, summary, reach="server", scope="read")
        )

    def add(self, *methods: Method) -> None:
        for method in methods:
            if method.name in self.methods:
                raise ValueError(f"JSON-RPC method {method.name!r} is registered twice.")
            self.methods[method.name] = method

    def _discover(self, _: Params, rt: Runtime | None) -> dict[str, Any]:
        from heron import __version__

        return self.openrpc("Heron", __version__)

    def openrpc(self, title: str = "Heron", version: str = "0") -> dict[str, Any]:
        """The OpenRPC document of every method, ``rpc.discover`` included."""
        methods, schemas = [], {}
        for method in sorted(self.methods.values(), key=lambda m: m.name):
            described = method.describe()
            schemas.update(described.pop("x-defs"))
            methods.append(described)
        errors = [{"code": cls.rpc_code, "message": cls.__name__} for cls in application_errors()]
        return {
            "openrpc": OPENRPC_VERSION,
            "info": {"title": title, "version": version},
            "methods": methods,
            "components": {"schemas": schemas, "errors": {str(e["code"]): e for e in errors}},
        }

    async def call(self, name: str, params: Any, runtime: Runtime | None = None) -> Any:
        """Validate ``params`` against the method's model and run it, in the context of
        ``runtime`` (none: the default one). Raises ``RpcError``."""
        method = self.methods.get(name)
        if method is None:
            raise RpcError(
                METHOD_NOT_FOUND,
                f"Method {name!r} not found. Call rpc.discover for the list.",
                {"methods": sorted(self.methods)},
            )
        if self.gate is not None:
            self.gate(method)
        context = DEFAULT if runtime is None else runtime.context
        if method.reach == "default" and context != DEFAULT:
            raise RpcError(
                METHOD_NOT_FOUND,
                f"Method {name!r} answers only in the default context, not in {context!r}: "
                "what it reads does not carry a context yet. Call it without "
                "X-Heron-Context, with a key of the default context.",
                {"context": context},
            )
        start, ok = time.perf_counter(), False
        try:
            result = await self._run(method, params, runtime)
            ok = True
        finally:
            if self.observer is not None:
                self.observer(name, time.perf_counter() - start, ok)
        return result.model_dump(mode="json") if isinstance(result, BaseModel) else result

    async def _run(self, method: Method, params: Any, runtime: Runtime | None) -> Any:
        args = _validate(method, params)
        name = method.name
        given = (args, runtime if method.reach == "context" else self.runtime)
        if method.reach == "context" and runtime is None:
            raise RpcError(INTERNAL_ERROR, f"{name} needs a runtime to run in.")
        try:
            if inspect.iscoroutinefunction(method.func):
                return await method.func(*given)
            return await run_in_threadpool(method.func, *given)
        except RpcError:
            raise
        except HeronError as exc:
            raise RpcError(exc.rpc_code, str(exc), rpc_error_data(exc)) from exc
        except Exception as exc:
            log.exception("method %s failed", name)
            raise RpcError(
                INTERNAL_ERROR, f"Internal error in {name}.", {"type": type(exc).__name__}
            ) from exc


def rpc_error_data(exc: HeronError) -> dict[str, Any]:
    """The ``data`` of an application error: its type, and ``retry_after`` (seconds)
    where it says when to ask again. (A stream's ``error`` event has its own shape:
    ``error_event_data``, the chat stream's.)"""
    data: dict[str, Any] = {"type": type(exc).__name__}
    if exc.retry_after is not None:
        data["retry_after"] = exc.retry_after
    return data


def _subclasses(cls: type[HeronError]) -> list[type[HeronError]]:
    return [c for sub in cls.__subclasses__() for c in (sub, *_subclasses(sub))]


def application_errors() -> list[type[HeronError]]:
    """The classes that set their own ``rpc_code`` (one per code, the first met), by
    code, the catch-all -32000 last: the OpenRPC document's error list. A code that
    depends on the instance (a property) is not listed."""
    found: dict[int, type[HeronError]] = {}
    for cls in [HeronError, *_subclasses(HeronError)]:
        code = vars(cls).get("rpc_code")
        if isinstance(code, int):
            found.setdefault(code, cls)
    return sorted(found.values(), key=lambda c: (c is HeronError, -c.rpc_code))


def registry_of(rt: Runtime) -> Registry:
    """The registry ``heron.server.app.rpc_registry`` keeps in ``rt``'s server; an empty
    one where none was made (an MCP server built alone)."""
    return rt.shared(REGISTRY, Registry) if rt.opened(REGISTRY) else Registry()


def _validate(method: Method, params: Any) -> BaseModel:
    if params is None:
        params = {}
    elif isinstance(params, list):
        names = list(method.params.model_fields)
        if len(params) > len(names):
            raise RpcError(
                INVALID_PARAMS,
                f"{method.name} takes at most {len(names)} positional params, got {len(params)}.",
                {"params": names},
            )
        params = dict(zip(names, params, strict=False))
    elif not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "params must be an object or an array.")
    try:
        return method.params.model_validate(params)
    except ValidationError as exc:
        problems = [
            {"field": ".".join(str(p) for p in err["loc"]), "problem": err["msg"]}
            for err in exc.errors(include_url=False, include_input=False)
        ]
        listed = "; ".join(f"{p['field'] or 'params'}: {p['problem']}" for p in problems)
        raise RpcError(
            INVALID_PARAMS, f"Invalid params for {method.name}: {listed}", problems
        ) from exc


async def _one(registry: Registry, request: Any, runtime: Runtime | None) -> dict[str, Any] | None:
    """Answer one request object; ``None`` for a notification (no ``id``)."""
    if not isinstance(request, dict):
        return RpcError(INVALID_REQUEST, "A request must be a JSON object.").answer(None)
    id_ = request.get("id")
    if not isinstance(id_, str | int | float | type(None)) or isinstance(id_, bool):
        return RpcError(INVALID_REQUEST, "id must be a string, number or null.").answer(None)
    if request.get("jsonrpc") != "2.0" or not isinstance(request.get("method"), str):
        return RpcError(
            INVALID_REQUEST,
            'A request needs "jsonrpc": "2.0" and a string "method".',
            {"got": sorted(str(k) for k in request)},
        ).answer(id_)
    notification = "id" not in request
    try:
        result = await registry.call(request["method"], request.get("params"), runtime)
    except RpcError as exc:
        return None if notification else exc.answer(id_)
    return None if notification else {"jsonrpc": "2.0", "id": id_, "result": result}


async def dispatch(
    registry: Registry,
    body: bytes | str,
    *,
    max_batch: int = MAX_BATCH,
    runtime: Runtime | None = None,
) -> Any:
    """Answer a JSON-RPC body: a response, a list of them (a batch), or ``None`` (nothing
    to send: notifications only); ``runtime``: the one of the request's context."""
    try:
        request = await aloads(body)
    except JsonRefused as exc:
        return RpcError(INVALID_REQUEST, f"Invalid request: {exc}").answer(None)
    except ValueError as exc:  # UnicodeDecodeError included
        return RpcError(PARSE_ERROR, "Parse error: the body is not JSON.", str(exc)).answer(None)
    if isinstance(request, list):
        if not request:
            return RpcError(INVALID_REQUEST, "An empty batch is not a request.").answer(None)
        if len(request) > max_batch:
            return RpcError(
                INVALID_REQUEST,
                f"A batch may hold at most {max_batch} calls (HERON_SERVER_MAX_BATCH); this "
                f"one has {len(request)}. Split it into smaller batches.",
                {"limit": max_batch, "calls": len(request)},
            ).answer(None)
        answers = await asyncio.gather(*(_one(registry, item, runtime) for item in request))
        return [a for a in answers if a is not None] or None
    return await _one(registry, request, runtime)


def status_of(answer: Any) -> tuple[int, dict[str, str]]:
    """The HTTP status (and headers) of ``dispatch``'s answer: 403 or 429 (with
    ``Retry-After``) for one call its key may not make, so a plain HTTP client backs off
    too; 200 for everything else, batches included."""
    error = answer.get("error") if isinstance(answer, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    if code == FORBIDDEN:
        return Forbidden.http_status, {}
    if code == RATE_LIMITED:
        wait = (error.get("data") or {}).get("retry_after")
        return OverLimit.http_status, {"retry-after": str(wait)} if isinstance(wait, int) else {}
    return 200, {}


def encode(answer: Any) -> bytes:
    """``dispatch``'s answer as strict JSON bytes (a NaN in a result is sent as null); a
    result JSON cannot carry at all (an object) becomes that request's -32603 instead of
    failing the whole response."""
    try:
        return dumps(answer).encode()
    except (TypeError, ValueError, RecursionError):
        if isinstance(answer, list):
            return b"[" + b",".join(encode(a) for a in answer) + b"]"
        error = RpcError(INTERNAL_ERROR, "The method's result is not valid JSON.")
        return dumps(error.answer(answer.get("id"))).encode()
