"""``/health`` (the process answers), ``/ready`` (it can serve), ``/metrics``
(Prometheus), ``/doctor``, and the JSON-RPC methods ``ops.doctor``, ``ops.reload`` and
``ops.watchdog``."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from heron.errors import HeronError
from heron.libraries.library import statuses
from heron.ops.doctor import CHECKS, doctor
from heron.ops.watchdog import latest_path, read_latest
from heron.server.metrics import CONTENT_TYPE, Gauges, watchdog_gauges
from heron.server.rpc import Registry
from heron.server.runtime import Runtime
from heron.server.strictjson import StrictJSONResponse


def readiness(rt: Runtime) -> dict[str, Any]:
    """Each check ``{"ok": bool, ...}``: the store and embedding model open, every
    configured library indexed, ``mcp.json`` and ``models.yml`` valid as last read;
    the chat model is reported, opened on first chat."""
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
    checks["config"] = rt.reloader.ready()
    checks["agent"] = {"ok": True, "opened": rt.opened("agent")}
    return checks


async def health(request: Request) -> Response:
    return StrictJSONResponse({"status": "ok"})


async def ready(request: Request) -> Response:
    checks = await run_in_threadpool(readiness, request.app.state.runtime)
    ok = all(check["ok"] for check in checks.values())
    return StrictJSONResponse({"ready": ok, "checks": checks}, status_code=200 if ok else 503)


def gauges(rt: Runtime) -> Gauges:
    """What ``/metrics`` reads at each scrape; nothing is opened for it."""
    found: Gauges = {}
    if rt.opened("store"):
        found["heron_index_records"] = [
            ({"namespace": ns.name}, ns.count) for ns in rt.store.namespaces()
        ]
    if rt.opened("jobs"):
        states = Counter(job.state for job in rt.jobs.list(limit=10_000))
        found["heron_jobs"] = [({"state": state}, n) for state, n in sorted(states.items())]
    return found | watchdog_gauges(latest_path(rt.settings.home))


async def metrics(request: Request) -> Response:
    rt: Runtime = request.app.state.runtime
    body = await run_in_threadpool(rt.metrics.render)
    return Response(body, media_type=CONTENT_TYPE)


def run_doctor(rt: Runtime, checks: list[str], offline: bool) -> dict[str, Any]:
    """``heron doctor`` on the server's own store (no second embedding model loaded)."""
    return doctor(rt.settings, checks=checks, offline=offline, store=rt.store).to_dict()


async def doctor_route(request: Request) -> Response:
    """``GET /doctor?check=store&check=libraries``: 200 when every check passes, else 503,
    with the report either way. Offline unless ``offline=0``: a page that polls it must
    not pay for a model call each time."""
    params = request.query_params
    offline = params.get("offline", "1").lower() not in ("0", "false", "no")
    try:
        report = await run_in_threadpool(
            run_doctor, request.app.state.runtime, params.getlist("check"), offline
        )
    except HeronError as exc:  # an unknown check name
        return StrictJSONResponse({"error": {"message": str(exc)}}, status_code=400)
    return StrictJSONResponse(report, status_code=200 if report["ok"] else 503)


class DoctorParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    checks: list[str] = Field(
        default_factory=list, description=f"Checks to run; default all: {', '.join(CHECKS)}."
    )
    offline: bool = Field(
        default=False, description="Call no model and reach no MCP server (files checked)."
    )


def register(registry: Registry, rt: Runtime) -> None:
    """Add ``ops.doctor``, ``ops.reload`` and ``ops.watchdog`` to ``registry``, and the
    scrape-time gauges to the runtime's metrics."""
    rt.metrics.watch(lambda: gauges(rt))
    registry.add(
        "ops.doctor",
        lambda p: run_doctor(rt, p.checks, p.offline),
        DoctorParams,
        summary="Run heron doctor's checks; the report as heron doctor --json prints it.",
    )
    registry.add(
        "ops.reload",
        lambda p: rt.reloader.reload(),
        summary="Re-read models.yml and mcp.json; an invalid file is kept out, and said why.",
    )
    registry.add(
        "ops.watchdog",
        lambda p: read_latest(latest_path(rt.settings.home)),
        summary="The watchdog's latest report (heron watchdog report --json).",
    )


routes = [
    Route("/health", health, methods=["GET"]),
    Route("/ready", ready, methods=["GET"]),
    Route("/metrics", metrics, methods=["GET"]),
    Route("/doctor", doctor_route, methods=["GET"]),
]
