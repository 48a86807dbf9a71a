"""``/health`` (the process answers), ``/ready`` (it can serve), ``/metrics``
(Prometheus), ``/doctor``, ``POST /watchdog/heartbeat/{name}`` (a watchdog push check),
and the JSON-RPC methods ``ops.doctor``, ``ops.watchdog`` and ``ops.board`` (the
watchdog's checks as a status board); ``ops.reload`` is ``heron.server.features.reload``'s."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

from pydantic import Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from heron.db.replicas import BEAT, NOT_SHARED, Me, open_registry
from heron.errors import ConfigError, HeronError
from heron.libraries.library import statuses
from heron.ops.doctor import CHECKS, doctor
from heron.ops.watchdog import history_path, latest_path, load_config, read_latest
from heron.ops.watchdog.heartbeats import record_beat
from heron.ops.watchdog.state import iso
from heron.server.doors.rpc import Methods, Params
from heron.server.features.keys import key_of
from heron.server.features.metrics import CONTENT_TYPE, Gauges, Keep, view, watchdog_gauges
from heron.server.features.reload import reloader
from heron.server.hooks import endpoint
from heron.server.http.contexts import runtime_of
from heron.server.http.replies import heron_error, invalid, not_found
from heron.server.http.strictjson import StrictJSONResponse
from heron.server.runtime import Runtime
from heron.tenancy import namespaces_seen, sees_everything

log = logging.getLogger("heron.server")


def readiness(
    rt: Runtime, scoped: Runtime | None = None, *, everything: bool = True
) -> dict[str, Any]:
    """Each check ``{"ok": bool, ...}``: the store and embedding model open, every
    library of the caller's context (``scoped``, else the server's) indexed,
    ``mcp.json`` and ``models.yml`` valid as last read; the chat model is reported,
    opened on first chat. Unless ``everything`` (``heron.tenancy.sees_everything``), the
    contexts heron.toml defines are cut to the caller's."""
    scoped = scoped or rt
    checks: dict[str, Any] = {}
    try:
        store = rt.store
        checks["store"] = {"ok": True, "backend": type(store).__name__}
        checks["model"] = {"ok": True, "id": store.embedder.model_id, "dim": store.embedder.dim}
        libraries = statuses(store, scoped.settings)
        missing = [s.name for s in libraries if not s.indexed or s.chunks == 0]
        checks["libraries"] = {
            "ok": not missing,
            "indexed": [s.name for s in libraries if s.name not in missing],
            "not_indexed": missing,
        } | ({"fix": f"run: heron index {missing[0]}"} if missing else {})
    except HeronError as exc:
        checks.setdefault("store", {"ok": False, "error": str(exc)})
        checks.setdefault("libraries", {"ok": False, "error": str(exc)})
    checks["config"] = reloader(rt).ready()
    if not everything and "settings" in checks["config"]:
        own = scoped.context  # the others' names are theirs
        settings = checks["config"]["settings"]
        checks["config"]["settings"] = settings | {
            key: [name for name in settings[key] if name == own]
            for key in ("contexts", "changed")
            if key in settings
        }
    checks["agent"] = {"ok": True, "opened": scoped.opened("agent")}
    checks["models"] = model_health(rt)
    if everything:  # the deployment's hosts are the administrator's to see
        checks["replicas"] = replicas_seen(rt)
    return checks


def replicas_seen(rt: Runtime) -> dict[str, Any]:
    """The database and the live replicas on it (this one among them), and what each
    keeps to itself (``heron.db.replicas``). On SQLite: one machine, nothing shared."""
    settings = rt.settings
    if not settings.postgres_url:
        return {"ok": True, "database": f"sqlite {settings.db_path}", "replicas": []}
    registry = rt.shared("replicas", lambda: open_registry(settings))
    assert registry is not None
    try:
        live = registry.live()
    except HeronError as exc:
        return {"ok": False, "database": registry.database.what, "error": str(exc)}
    return {
        "ok": True,
        "database": registry.database.what,
        "this": settings.replica,
        "replicas": live,
        "versions": sorted({r["version"] for r in live}),
        "not_shared": NOT_SHARED,
    }


def model_health(rt: Runtime) -> dict[str, Any]:
    """The models cooling down (``heron.llm.cooldowns``) and whether the default alias's
    chain has one that is not. Always ``ok``: a server whose models are all cooling still
    searches, and its chat answers say when to ask again (429/503 with Retry-After)."""
    from heron.llm.cooldowns import COOLDOWNS

    cooling = [row for row in COOLDOWNS.snapshot() if row["cooling"]]
    names = {row["alias"] for row in cooling}
    available = True
    if rt.opened("agent"):
        available = any(s.alias not in names for s in rt.agent.broker.table.chain())
    return {"ok": True, "cooling": cooling, "default_available": available}


async def health(request: Request) -> Response:
    return StrictJSONResponse({"status": "ok"})


async def ready(rt: Runtime, request: Request) -> Response:
    everything = sees_everything(key_of(request))

    def check() -> dict[str, Any]:
        return readiness(rt, runtime_of(rt, request), everything=everything)

    checks = await run_in_threadpool(check)
    ok = all(check["ok"] for check in checks.values())
    return StrictJSONResponse({"ready": ok, "checks": checks}, status_code=200 if ok else 503)


def metrics_view(rt: Runtime, request: Request) -> Keep | None:
    """What ``/metrics`` shows the request's caller (``heron.server.features.metrics.view``);
    ``None``: everything, to the server's administrator."""
    key = key_of(request)
    if sees_everything(key):
        return None
    scoped = runtime_of(rt, request)
    return view(
        namespaces_seen(scoped.settings),
        key.name if key is not None else None,
        jobs=scoped.context == rt.context,  # the gauge reads the server's own jobs
    )


async def metrics(rt: Runtime, request: Request) -> Response:
    def render() -> bytes:
        return rt.metrics.render(metrics_view(rt, request))

    body = await run_in_threadpool(render)
    return Response(body, media_type=CONTENT_TYPE)


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
    from heron.llm.cooldowns import COOLDOWNS

    found["heron_model_cooling"] = [
        ({"model": row["alias"]}, 1.0 if row["cooling"] else 0.0) for row in COOLDOWNS.snapshot()
    ]
    return found | watchdog_gauges(latest_path(rt.settings.home))


def run_doctor(
    rt: Runtime, checks: list[str], offline: bool, *, writes: bool = True
) -> dict[str, Any]:
    """``heron doctor`` on the server's own store (no second embedding model loaded);
    ``writes=False``: the store's write check is left out (a ``GET`` changes nothing)."""
    report = doctor(rt.settings, checks=checks, offline=offline, store=rt.store, writes=writes)
    return report.to_dict()


async def doctor_route(rt: Runtime, request: Request) -> Response:
    """``GET /doctor?check=store&check=libraries``: 200 when every check passes, else 503,
    with the report either way. A ``GET`` is the offline checks, writing nothing: a link,
    an image tag or a page that polls it must cost nothing. ``POST /doctor?offline=0``
    (which a cross-site page cannot send: ``heron.server.http.origins``) also calls each model
    and reaches each MCP server, as ``ops.doctor`` does."""
    params = request.query_params
    given = params.get("offline", "1")
    if given.lower() not in OFFLINE_VALUES:
        return invalid(
            f"offline must be one of {', '.join(sorted(OFFLINE_VALUES))}, not {given[:32]!r}.",
            "offline",
        )
    online = given.lower() in ONLINE
    if online and request.method == "GET":
        return invalid(
            "GET /doctor runs the offline checks only (a GET never calls a model or starts a "
            "server). Run the online ones with POST /doctor?offline=0 or the JSON-RPC method "
            "ops.doctor.",
            "offline",
        )
    try:
        report = await run_in_threadpool(
            run_doctor, rt, params.getlist("check"), not online, writes=request.method == "POST"
        )
    except HeronError as exc:  # an unknown check name
        return invalid(str(exc), "check")
    return StrictJSONResponse(report, status_code=200 if report["ok"] else 503)


#: ``?offline=`` values: these run the online checks (``POST`` only), the others not.
ONLINE = frozenset({"0", "false", "no"})
OFFLINE_VALUES = ONLINE | {"1", "true", "yes"}


def beat(rt: Runtime, name: str) -> Response:
    """Record a beat of the watchdog's heartbeat check ``name``; only names the watchdog
    config declares as heartbeats are taken, so nothing else can fill the disk."""
    try:
        config = load_config(None, rt.settings)
    except ConfigError as exc:
        return heron_error(exc)
    beats = [c.name for c in config.checks if c.kind == "heartbeat"]
    if name not in beats:
        return not_found(
            f"No heartbeat check named {name[:64]!r} in {config.source}; heartbeat checks: "
            f"{', '.join(beats) or 'none'}."
        )
    now = time.time()
    record_beat(rt.settings.home, name, now)
    return StrictJSONResponse({"ok": True, "check": name, "at": iso(now)})


async def heartbeat(rt: Runtime, request: Request) -> Response:
    """``POST /watchdog/heartbeat/{name}``: a job reporting in (the body is not read)."""
    return await run_in_threadpool(beat, rt, request.path_params["name"])


#: Watchdog runs a board shows per check, and the tail of the history read for them.
BOARD_RUNS = 20
_HISTORY_TAIL = 512 * 1024
#: A watchdog status as the board's colour: red for an incident, amber for a failure
#: below the threshold or a recovery not yet confirmed, green when it passes.
COLOURS = {"escalated": "red", "firing": "red", "failing": "amber", "recovering": "amber",
           "ok": "green"}  # fmt: skip


def recent_runs(path: Path, limit: int = BOARD_RUNS) -> list[dict[str, Any]]:
    """The last ``limit`` lines of the watchdog history, oldest first (none: ``[]``)."""
    try:
        with open(path, "rb") as handle:
            start = max(0, os.fstat(handle.fileno()).st_size - _HISTORY_TAIL)
            handle.seek(start)
            tail = handle.read().decode("utf-8", "replace").splitlines()[1 if start else 0 :]
    except FileNotFoundError:
        return []
    runs = []
    for line in tail[-limit:]:
        try:
            runs.append(json.loads(line))
        except ValueError:  # a damaged line: not a run
            continue
    return runs


def board(home: Path) -> dict[str, Any]:
    """The latest watchdog report as a status board: each check's ``colour``, status and
    detail, when its status last changed (``changed``: the first run of the current
    streak in the history read), and its last runs (``runs``: ``{"at", "ok", "status"}``,
    oldest first); failing checks first. ``report`` is ``None`` before the first run."""
    try:
        latest = read_latest(latest_path(home))
    except ConfigError:
        return {"report": None, "checks": []}
    history = recent_runs(history_path(home))
    checks = []
    for check in latest.get("checks", []):
        runs = [
            {"at": run.get("started"), **run["checks"][check["name"]]}
            for run in history
            if check["name"] in run.get("checks", {})
        ]
        changed = runs[-1]["at"] if runs else latest.get("started")
        for run in reversed(runs):
            if run.get("status") != check.get("status"):
                break
            changed = run["at"]
        status = check.get("status") or ("ok" if check.get("ok") else "failing")
        checks.append(
            {
                "name": check["name"],
                "kind": check.get("kind", ""),
                "status": status,
                "colour": COLOURS.get(status, "red"),
                "ok": bool(check.get("ok")),
                "detail": check.get("detail", ""),
                "since": check.get("since"),
                "changed": changed,
                "runs": [
                    {"at": r["at"], "ok": bool(r.get("ok")), "status": r.get("status")}
                    for r in runs
                ],
            }
        )
    order = {"red": 0, "amber": 1, "green": 2}
    checks.sort(key=lambda c: (order[c["colour"]], c["name"]))
    report = {k: latest.get(k) for k in ("started", "seconds", "ok")}
    return {"report": report, "checks": checks}


class DoctorParams(Params):
    checks: list[str] = Field(
        default_factory=list, description=f"Checks to run; default all: {', '.join(CHECKS)}."
    )
    offline: bool = Field(
        default=False, description="Call no model and reach no MCP server (files checked)."
    )


#: ``ops.doctor``, ``ops.watchdog`` and ``ops.board``.
rpc = Methods()


@rpc.method(
    "ops.doctor",
    DoctorParams,
    summary="Run heron doctor's checks; the report as heron doctor --json prints it.",
)
def ops_doctor(p: DoctorParams, rt: Runtime) -> dict[str, Any]:
    return run_doctor(rt, p.checks, p.offline)


@rpc.method(
    "ops.watchdog",
    summary="The watchdog's latest report (heron watchdog report --json).",
    scope="read",
)
def watchdog(_: Params, rt: Runtime) -> dict[str, Any]:
    return read_latest(latest_path(rt.settings.home))


@rpc.method(
    "ops.board",
    summary="The watchdog's checks as a status board: colour, last change, last runs.",
    scope="read",
)
def ops_board(_: Params, rt: Runtime) -> dict[str, Any]:
    return board(rt.settings.home)


def routes(rt: Runtime) -> list[BaseRoute]:
    """``/health``, ``/ready``, ``/metrics``, ``/doctor`` and the watchdog's heartbeats;
    the gauges ``/metrics`` shows, read at each scrape, join the runtime's metrics."""
    rt.metrics.watch(lambda: gauges(rt))
    return [
        Route("/health", health, methods=["GET"]),
        Route("/ready", endpoint(ready, rt), methods=["GET"]),
        Route("/metrics", endpoint(metrics, rt), methods=["GET"]),
        Route("/doctor", endpoint(doctor_route, rt), methods=["GET", "POST"]),
        Route("/watchdog/heartbeat/{name}", endpoint(heartbeat, rt), methods=["POST"]),
    ]


@asynccontextmanager
async def lifespan(rt: Runtime) -> AsyncIterator[None]:
    """On PostgreSQL, this replica's row in the registry, written every ``BEAT`` seconds
    while the server runs and deleted when it stops (``heron.db.replicas``)."""
    settings = rt.settings
    if not settings.postgres_url:
        yield
        return
    registry = rt.shared("replicas", lambda: open_registry(settings))
    assert registry is not None
    me = Me(f"{settings.replica}:{os.getpid()}:{secrets.token_hex(3)}", settings.replica)
    started = time.time()

    async def beat() -> None:
        while True:
            try:
                await run_in_threadpool(registry.beat, me, started)
            except HeronError as exc:  # the database away a moment: the next beat
                log.warning("replica row not written: %s", exc)
            await asyncio.sleep(BEAT)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
        with suppress(HeronError):
            await run_in_threadpool(registry.leave, me)
        registry.close()
