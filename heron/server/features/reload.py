"""``Reloader``: a running server picks up edits to ``mcp.json``, ``models.yml`` and the
contexts of ``heron.toml``.

A feature module (``heron.server.hooks``): its ``lifespan`` watches the files, and a reload
happens when one changes (``watchfiles`` watches their folders, so a file created,
replaced by an editor's rename, or removed is seen), on ``SIGHUP``, and on the JSON-RPC
method ``ops.reload`` (its ``rpc``). ``reloader(runtime)`` is the server's one. Each
file is read and checked whole first; only a valid one replaces what the server runs:

- ``models.yml``: the runtime's table (``Runtime.models``: what ``/v1/models``,
  ``models.list`` and the agent, opened on first chat, read) is replaced, and the agent
  gets a new ``Broker`` over it; answers already running finish on the old one (closed at
  shutdown). The check at start keeps the file's table too, so a bad edit saved before the
  first chat leaves every request on the last good table.
- ``mcp.json``: the runtime's server list (``Runtime.mcp_servers``: what the toolbox,
  opened on first use, connects to) is replaced, the servers are listed again into the
  toolbox's registry (tools of servers no longer configured are removed), and cached
  routers are dropped. A context with its own ``mcp_config`` gets the same from its
  file (watched too), and only its toolbox sees those servers.
- ``heron.toml`` (``settings``; ``HERON_CONFIG`` names another file): the file is read as
  at start (``Settings()``, checked whole), and its ``[contexts.NAME]`` tables added,
  changed or removed since the last reading are applied to the running server
  (``Settings.use_contexts``): a request may name a new context at once, a changed one's
  runtime is made again from its new table on its next request (``Runtime.retire``), a
  removed one is a 404. Any other setting changed in the file, and the context the server
  itself was started in, are read at start only: the status lists them under
  ``restart`` and the log says to restart ``heron serve``.

An invalid file changes nothing: the old configuration stays, the error is logged and
``/ready`` shows it under ``checks.config`` (not ready until the file is fixed, so an
operator's probe sees it)::

    "config": {"ok": false, "models": {"ok": false, "path": ".../models.yml",
               "error": "...models.yml, line 3: not valid YAML (...). Fix the file.",
               "aliases": ["gpt", "local"], "loaded_at": 1764590000.0}, "mcp": {...}}
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from heron.errors import ConfigError, HeronError
from heron.resource import Resource
from heron.server.doors.rpc import Methods, Params
from heron.server.hooks import no_routes
from heron.server.runtime import Runtime, mcp_path, read_servers
from heron.settings import Settings, _config_file, locate, setting_names

if TYPE_CHECKING:
    from heron.llm import Broker
    from heron.tools import ServerConfig

log = logging.getLogger("heron.server.features.reload")

FILES = ("models", "mcp", "settings")


class Reloader(Resource):
    """Reloads the runtime's ``models.yml``, ``mcp.json`` and heron.toml's contexts;
    ``status`` says how the last reload of each went."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.status: dict[str, dict[str, Any]] = {}
        self._retired: list[Broker] = []
        self._read: Settings | None = None  # heron.toml as last read, and as first read
        self._first: Settings | None = None
        self._lock = threading.Lock()  # the watcher, SIGHUP and ops.reload may race

    def paths(self) -> dict[str, Path]:
        from heron.llm.config import models_file

        return {
            "models": models_file(self.rt.settings),
            "mcp": mcp_path(self.rt.settings),
            "settings": _config_file(),
        }

    def check(self) -> None:
        """Read the files as they are at start, so ``/ready`` reports a bad one."""
        self.reload(apply=False)

    def reload(self, names: Iterable[str] = FILES, *, apply: bool = True) -> dict[str, Any]:
        """Reload ``names`` (``models``, ``mcp``, ``settings``); returns ``status``.
        ``apply=False`` only checks the files."""
        with self._lock:
            for name in names:
                path = self.paths()[name]
                try:
                    loaded = getattr(self, f"_{name}")(path, apply)
                except HeronError as exc:
                    log.error("kept the old %s: %s", path.name, exc)
                    old = self.status.get(name, {})
                    self.status[name] = {**old, "ok": False, "path": str(path), "error": str(exc)}
                    continue
                if apply:
                    log.info("reloaded %s", path)
                self.status[name] = {
                    "ok": True,
                    "path": str(path),
                    "error": None,
                    "loaded_at": time.time(),
                    **loaded,
                }
            return self.status

    def _models(self, path: Path, apply: bool) -> dict[str, Any]:
        from heron.llm import Broker, load_table

        table = load_table(self.rt.settings)
        for rt in self.rt.contexts():  # what /v1/models, models.list and a new agent read
            rt.replace("models.yml", table)
        for rt in self.rt.contexts() if apply else []:  # each context's speech broker
            if rt.opened("speech"):
                speaking = Broker(table, rt.settings)
                speaking.observer = rt.metrics.observe_broker
                self._retired.append(rt.speech)
                rt.replace("speech", speaking)
        for rt in self.rt.contexts() if apply else []:  # each context's agent, if open
            if rt.opened("agent"):
                agent = rt.agent
                broker = Broker(table, rt.settings)
                broker.observer = rt.metrics.observe_broker
                broker.on_spend = rt.metrics.observe_spend
                broker.on_saved = rt.metrics.observe_saved
                self._retired.append(agent.broker)
                agent.broker = broker
        return {"aliases": list(table.models), "default": table.default}

    def _mcp(self, path: Path, apply: bool) -> dict[str, Any]:
        """The server's mcp.json and each context's own (``mcp_config`` of its table):
        each valid file replaces its servers and relists them into the toolboxes that use
        it; a bad one keeps its old servers and is the error raised after the rest."""
        from heron.tools import MCPClient

        runtimes = self.rt.contexts()
        read: dict[Path, list[ServerConfig]] = {}
        problems: list[str] = []
        for rt in runtimes:
            where = mcp_path(rt.settings)
            if where in read or (rt is not self.rt and where == path):
                continue  # a context without its own file uses the server's
            try:
                read[where] = read_servers(rt.settings)
            except HeronError as exc:
                problems.append(str(exc))
        for rt in runtimes:
            where = mcp_path(rt.settings)
            servers = read.get(where)
            if servers is None or (rt is not self.rt and where == path):
                continue
            rt.replace("mcp.json", servers)  # what its toolbox, opened on first use, connects
        boxes = [rt for rt in runtimes if rt.opened("toolbox")]
        for rt in boxes if apply else []:  # each toolbox: its own workspace, its servers
            servers = read.get(mcp_path(rt.settings))
            if servers is None:
                continue
            box = rt.toolbox
            client = MCPClient(servers, keep=True)
            box.resources.callback(client.close)
            names = {s.name for s in servers}
            for name in set(box.client.servers if box.client else ()) - names:
                box.registry.remove_source(f"mcp:{name}")
            box.statuses = client.discover(box.registry)
            old, box.client = box.client, client
            if old is not None:
                old.close()  # its sessions: the registry's handlers now call the new client
        if apply and boxes:
            self.rt.forget("router:")
        if problems:
            raise ConfigError("; ".join(problems))
        served = read.get(path, [])
        out: dict[str, Any] = {"servers": [s.name for s in served]}
        own = {
            rt.context: [s.name for s in read[mcp_path(rt.settings)]]
            for rt in runtimes
            if rt is not self.rt and mcp_path(rt.settings) != path
        }
        if own:
            out["contexts"] = own
        if apply and self.rt.opened("toolbox"):
            out["tools"] = {s.name: s.tools for s in self.rt.toolbox.statuses}
        return out

    def _settings(self, path: Path, apply: bool) -> dict[str, Any]:
        fresh = Settings()  # the file checked whole, as at start: a bad one raises here
        # Contexts change against the last reading (what was applied since); settings
        # read only at start against the first reading (what the server runs with).
        last = self._read or self.rt.settings
        first = self._first = self._first or fresh
        self._read = fresh
        running = self.rt.settings
        own = running.context  # its workspace and skills were set at start: not redone
        before, after = last.contexts, fresh.contexts
        changed = sorted(
            name
            for name in set(before) | set(after)
            if before.get(name) != after.get(name) and name != own
        )
        restart = [
            name
            for name in setting_names()
            if name != "contexts" and getattr(*locate(first, name)) != getattr(*locate(fresh, name))
        ]
        if first.contexts.get(own) != after.get(own):
            restart.append(f"contexts.{own}")
        if apply and changed:
            contexts = dict(running.contexts)
            for name in changed:
                if name in after:
                    contexts[name] = after[name]
                else:
                    contexts.pop(name, None)
            running.use_contexts(contexts)
            self.rt.retire(changed)
            log.info("contexts reloaded from %s: %s", path, ", ".join(changed))
        if apply and restart:
            log.warning(
                "%s sets %s otherwise than when heron serve started, which reads it only "
                "then: restart heron serve to apply it",
                path,
                ", ".join(restart),
            )
        return {
            "contexts": sorted(running.contexts),
            "changed": changed if apply else [],
            "restart": restart,
        }

    def ready(self) -> dict[str, Any]:
        """The ``config`` check of ``/ready``."""
        # No lock: a reload holds it while it lists MCP servers (seconds), and /ready must
        # not wait for that; each file's status is replaced whole, never edited in place.
        files = {name: dict(state) for name, state in list(self.status.items())}
        return {"ok": all(state["ok"] for state in files.values()), **files}

    async def watch(self, stop: asyncio.Event) -> None:
        """Reload on every change to one of the files until ``stop`` is set."""
        from watchfiles import awatch

        paths = self.paths()
        by_path = {str(path.resolve()): name for name, path in paths.items()}
        # Each context's own mcp.json (as heron.toml defines them at start) reloads "mcp".
        for spec in self.rt.settings.contexts.values():
            if spec.mcp_config is not None:
                by_path[str(spec.mcp_config.resolve())] = "mcp"
        watched = [Path(p) for p in by_path]
        # A folder that does not exist holds no file to reload (SIGHUP still works).
        folders = sorted({str(p.parent) for p in watched if p.parent.is_dir()})
        if not folders:
            return

        def wanted(_change: object, changed: str) -> bool:
            return changed in by_path

        # Not recursive: the home also holds library checkouts, which change often.
        changes_of = awatch(
            *folders, watch_filter=wanted, stop_event=stop, recursive=False, debounce=300
        )
        try:
            async for changes in changes_of:
                names = sorted({by_path[changed] for _, changed in changes})
                await run_in_threadpool(self.reload, names)
        except Exception:  # the server runs on without reloads; SIGHUP and ops.reload work
            log.exception("stopped watching %s", ", ".join(folders))

    @asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        """While the server runs: check the files, reload on change and on ``SIGHUP``
        (where signals can be handled: the main thread of ``heron serve``)."""
        await run_in_threadpool(self.check)
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        task = asyncio.create_task(self.watch(stop))
        try:
            loop.add_signal_handler(signal.SIGHUP, lambda: loop.run_in_executor(None, self.reload))
            hup = True
        except (RuntimeError, ValueError, NotImplementedError):
            hup = False
        try:
            yield
        finally:
            if hup:
                loop.remove_signal_handler(signal.SIGHUP)
            stop.set()
            await task
            await run_in_threadpool(self.close)

    def close(self) -> None:
        for broker in self._retired:
            broker.close()
        self._retired.clear()


def reloader(runtime: Runtime) -> Reloader:
    """The server's ``Reloader``, made on first use."""
    return runtime.shared("reloader", lambda: Reloader(runtime))


#: ``ops.reload``.
rpc = Methods()


@rpc.method(
    "ops.reload",
    summary="Re-read models.yml, mcp.json and heron.toml's contexts; an invalid file is "
    "kept out, and said why; a setting read only at start is listed under restart.",
)
def reload(_: Params, rt: Runtime) -> dict[str, Any]:
    return reloader(rt).reload()


routes = no_routes


def lifespan(runtime: Runtime) -> AbstractAsyncContextManager[None]:
    """``Reloader.watching`` while the server runs."""
    return reloader(runtime).watching()
