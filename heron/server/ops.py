"""``/health`` (the process answers), ``/ready`` (it can serve) and ``/metrics``."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from heron.errors import HeronError
from heron.libraries.library import statuses
from heron.server.runtime import Runtime
from heron.server.strictjson import StrictJSONResponse


def readiness(rt: Runtime) -> dict[str, Any]:
    """Each check ``{"ok": bool, ...}``: the store and embedding model open, every
    configured library indexed; the chat model is reported, opened on first chat."""
    checks: dict[str, Any] = {}
    try:
        store = rt.store
        checks["store"] = {"ok": True, "backend": type(store).__name__}
        checks["model"] = {"ok": True, "id": store.embedder.model_id, "dim": store.embedder.dim}
        libraries = statuses(store, rt.settings)
        missing = [s.name for s in libraries if not s.indexed or s.chunks == 0]
        checks["libraries"] = {
            "ok": not missing,
            "indexed": [s.name for s in libraries if s.name not in missing],
            "not_indexed": missing,
        } | ({"fix": f"run: heron index {missing[0]}"} if missing else {})
    except HeronError as exc:
        checks.setdefault("store", {"ok": False, "error": str(exc)})
        checks.setdefault("libraries", {"ok": False, "error": str(exc)})
    checks["agent"] = {"ok": True, "opened": rt.opened("agent")}
    return checks


async def health(request: Request) -> Response:
    return StrictJSONResponse({"status": "ok"})


async def ready(request: Request) -> Response:
    checks = await run_in_threadpool(readiness, request.app.state.runtime)
    ok = all(check["ok"] for check in checks.values())
    return StrictJSONResponse({"ready": ok, "checks": checks}, status_code=200 if ok else 503)


def gauges(rt: Runtime) -> dict[str, list[tuple[dict[str, str], float]]]:
    if not rt.opened("store"):
        return {}
    return {
        "heron_index_records": [({"namespace": ns.name}, ns.count) for ns in rt.store.namespaces()]
    }


async def metrics(request: Request) -> Response:
    rt: Runtime = request.app.state.runtime
    text = rt.metrics.render(await run_in_threadpool(gauges, rt))
    return PlainTextResponse(text, media_type="text/plain; version=0.0.4")


routes = [
    Route("/health", health, methods=["GET"]),
    Route("/ready", ready, methods=["GET"]),
    Route("/metrics", metrics, methods=["GET"]),
]
