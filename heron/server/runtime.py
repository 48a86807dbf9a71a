"""``Runtime``: what a server opens once and shares between requests.

The store (and with it the embedding model) opens at startup; the skill index, the
toolbox and the agent open on first use, because a server that only searches should not
pay for them. The runtime holds exactly one store, and with it one embedder (and on
PostgreSQL one connection pool, migrated once): the skill index, the toolbox and the
agent are handed that store, and leave it open when they close (the ownership rule,
``heron.store.base``). Likewise one job store (``jobs``): the job workers, the ``jobs.*``
methods and the agent's ``delegate_job`` share it. One store serves every threadpool
worker: ``SQLiteStore`` serialises its connection with a lock, the embedding cache its
own. ``close()`` closes what the runtime opened, the store last.

**Contexts** (``heron.core.contexts``): ``within(name)`` is the runtime of one context,
made on first use and kept (until heron.toml redefines or removes the context:
``retire``, ``heron.server.features.reload``): its settings are
``settings.in_context(name)``, and it opens
its own skill index (when the context has skill directories of its own), toolbox (its
workspace), tool routers and agent (its libraries, its sessions), and its views of the
jobs and the interventions (``Jobs.within``, ``Interventions.within``: the server's
stores, that context's rows and rooms) with the agent's observers that raise there;
everything else (the store, the reranker, the metrics, what a feature keeps with
``shared``) is the server's, one for all. The server's runtime is the default
context's.

It imports no endpoint module: the feature modules (``heron.server.hooks``) are handed
the runtime, and keep what they need for the server's life with ``shared``; the agent's
observers come from the wiring (``heron.wiring.Observers``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Container
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from heron.libraries import Reranker, load_reranker, search_many
from heron.resource import Resource
from heron.server.features.metrics import Metrics
from heron.settings import Settings
from heron.store import Store, open_store

if TYPE_CHECKING:
    from heron.agent import Agent
    from heron.interventions import Interventions
    from heron.jobs import Jobs
    from heron.llm import Broker, RoutingTable
    from heron.skills import SkillIndex
    from heron.tools import ServerConfig, Toolbox, ToolRouter
    from heron.wiring.interventions import Observers

T = TypeVar("T")

#: What a context's runtime opens for itself; ``router:`` names too. "skills" and
#: "mcp.json" only when the context has skill directories or an mcp.json of its own
#: (``_own``); "jobs" and "interventions"
#: are views of the server's stores.
PER_CONTEXT = frozenset(
    {"skills", "toolbox", "agent", "jobs", "interventions", "observers", "speech"}
)


def mcp_path(settings: Settings) -> Path:
    """The ``mcp.json`` the settings name (``HERON_MCP_CONFIG``, else ``HOME/mcp.json``)."""
    from heron.tools.toolbox import MCP_CONFIG

    return settings.tools.mcp_config or settings.home / MCP_CONFIG


def read_servers(settings: Settings) -> list[ServerConfig]:
    """The MCP servers of ``mcp.json``: none when the default file does not exist; a
    ``ConfigError`` naming the fix for a bad one (or a named file that is missing)."""
    from heron.tools import load_config

    path = mcp_path(settings)
    if settings.tools.mcp_config is None and not path.exists():
        return []
    return load_config(path, timeout=settings.tools.mcp_timeout)


class Runtime(Resource):
    """Shared resources of one server, or of one of its contexts (``within``)."""

    def __init__(self, settings: Settings, *, server: Runtime | None = None) -> None:
        self.settings = settings
        self._server = server
        # Metric labels only from what is registered: a tool a model invented is "unknown".
        self.metrics = (
            server.metrics
            if server is not None
            else Metrics(tools=self._tool_names, models=self._model_aliases)
        )
        self._lock = threading.Lock()
        self._opening: dict[str, threading.Lock] = {}
        self._opened: dict[str, Any] = {}
        self._contexts: dict[str, Runtime] = {}
        self._retired: list[Runtime] = []  # contexts redefined while they served

    @property
    def context(self) -> str:
        return self.settings.context

    def within(self, context: str) -> Runtime:
        """The runtime of ``context``: this one for its own context, else the server's
        runtime of that context, made on first use. ``NotFound`` naming the defined
        contexts for one heron.toml does not define; ``InputError`` for a bad name."""
        if context == self.context:
            return self
        server = self._server or self
        if context == server.context:
            return server
        with server._lock:
            if context not in server._contexts:
                scoped = server.settings.in_context(context)
                server._contexts[context] = Runtime(scoped, server=server)
            return server._contexts[context]

    def retire(self, names: Container[str]) -> None:
        """Make the runtimes of contexts ``names`` (redefined or removed in heron.toml)
        again on their next request, from the settings then in force. Requests already in
        them finish there; they close with the server (a context's agent may be
        answering)."""
        server = self._server or self
        with server._lock:
            for name in [n for n in server._contexts if n in names]:
                server._retired.append(server._contexts.pop(name))

    def contexts(self) -> list[Runtime]:
        """This runtime and the contexts' runtimes made so far (what a reload updates)."""
        server = self._server or self
        with server._lock:
            return [server, *server._contexts.values()]

    def _own(self, name: str) -> bool:
        """Whether this runtime opens ``name`` itself rather than use the server's."""
        if self._server is None:
            return True
        if name in ("skills", "mcp.json"):  # its own only where its table names them
            spec = self.settings.context_spec
            field = "skills_dirs" if name == "skills" else "mcp_config"
            return spec is not None and getattr(spec, field) is not None
        return name in PER_CONTEXT or name.startswith("router:")

    def shared(self, name: str, open_: Callable[[], T]) -> T:
        """The resource ``name``, ``open_()`` on first use and kept: each is opened once
        however many threads ask at the same time. A feature keeps its own here (the SSE
        hub, the MCP server, the auth guard); ``close()`` closes the runtime's own
        (``store``, ``agent``, ...) in order, then every other one that is a ``Resource``
        (one its ``lifespan`` closed already is closed again, harmlessly). In a
        context's runtime, only its own resources (``PER_CONTEXT``) are its; every other
        name is the server's."""
        if self._server is not None and not self._own(name):
            return self._server.shared(name, open_)
        if name in self._opened:
            return self._opened[name]
        # One lock per resource: opening the agent (seconds) must not hold up searches.
        with self._lock:
            lock = self._opening.setdefault(name, threading.Lock())
        with lock:
            if name not in self._opened:
                self._opened[name] = open_()
            return self._opened[name]

    def opened(self, name: str) -> bool:
        if self._server is not None and not self._own(name):
            return self._server.opened(name)
        return name in self._opened

    def _tool_names(self) -> Container[str]:
        return self.toolbox.registry if self.opened("toolbox") else frozenset()

    def _model_aliases(self) -> Container[str]:
        return self.models.models if self.opened("models.yml") else frozenset()

    @property
    def store(self) -> Store:
        return self.shared("store", lambda: open_store(self.settings))

    @property
    def reranker(self) -> Reranker | None:
        return self.shared("reranker", lambda: load_reranker(self.settings.library))

    @property
    def models(self) -> RoutingTable:
        """The models table in force: read on first use, then replaced only by a valid
        one (``heron.server.features.reload``), so every request reads the last good table."""
        from heron.llm import load_table

        return self.shared("models.yml", lambda: load_table(self.settings))

    def replace(self, name: str, value: Any) -> None:
        """Put ``value`` in place of the resource ``name`` (nothing is closed)."""
        with self._lock:
            self._opened = {**self._opened, name: value}

    @property
    def skills(self) -> SkillIndex:
        from heron.skills import open_skills

        return self.shared("skills", lambda: open_skills(self.settings, store=self.store))

    @property
    def toolbox(self) -> Toolbox:
        from heron.tools import MCPClient
        from heron.wiring.tools import open_tools

        def open_() -> Toolbox:
            box = open_tools(
                self.settings, store=self.store, skills=lambda: self.skills, connect=False
            )
            servers = self.mcp_servers  # the last good mcp.json, not the file as it is now
            if servers:
                # Sessions kept for the toolbox's life: a call is a round trip, not a
                # server start; closing the toolbox ends them.
                box.client = MCPClient(servers, keep=True)
                box.resources.callback(box.client.close)
                box.statuses = box.client.discover(box.registry)
                if box.usage is not None:  # the servers' tools learn their examples too
                    box.registry.teach(box.usage.examples())
            return box

        return self.shared("toolbox", open_)

    @property
    def mcp_servers(self) -> list[ServerConfig]:
        """The MCP servers in force: read on first use, then replaced only by a valid
        ``mcp.json`` (``heron.server.features.reload``), as ``models`` is."""
        return self.shared("mcp.json", lambda: read_servers(self.settings))

    @property
    def agent(self) -> Agent:
        from heron.wiring.agent import open_agent

        def open_() -> Agent:
            # Only an agent with a workspace delegates jobs (they run in its context's
            # workspace); without one, no job store is opened.
            delegates = self.settings.tools.root is not None
            agent = open_agent(
                self.settings,
                store=self.store,
                skills=self.skills,
                toolbox=self.toolbox,
                jobs=self.jobs if delegates else None,
                # Who writes and searches what: collisions and research overlaps.
                on_tool_use=lambda actor, use, room: self.observers.tool_use(actor, use, room),
                on_search=lambda actor, query, room: self.observers.search(actor, query, room),
                table=self.models,  # the last good one: a bad edit must not stop chat
            )
            agent.broker.observer = self.metrics.observe_broker  # retries and fallbacks
            agent.broker.on_spend = self.metrics.observe_spend  # what calls cost
            agent.broker.on_saved = self.metrics.observe_saved  # what the cache saved
            return agent

        return self.shared("agent", open_)

    @property
    def speech(self) -> Broker:
        """A broker of this context for speech (``/v1/audio/*``, the cards' voice): the
        models table in force, without the agent the chat broker comes with."""
        from heron.llm import Broker

        def open_() -> Broker:
            broker = Broker(self.models, self.settings)
            broker.observer = self.metrics.observe_broker
            return broker

        return self.shared("speech", open_)

    @property
    def observers(self) -> Observers:
        """The agent's observers, for the room's interventions (opened on first card)."""
        from heron.wiring.interventions import Observers

        return self.shared(
            "observers",
            lambda: Observers(self.settings, self.store.embedder, lambda: self.interventions),
        )

    @property
    def jobs(self) -> Jobs:
        """The jobs of this context: the one job store (a second PostgreSQL pool, not one
        per user of it), seen from here (``Jobs.within``)."""
        from heron.jobs import open_jobs

        server = self._server
        if server is not None:
            return self.shared("jobs", lambda: server.jobs.within(self.settings))
        return self.shared("jobs", lambda: open_jobs(self.settings))

    @property
    def interventions(self) -> Interventions:
        """The interventions and rooms of this context, on the one store."""
        server = self._server
        if server is not None:
            return self.shared("interventions", lambda: server.interventions.within(self.settings))
        return self.shared("interventions", self._open_interventions)

    def _open_interventions(self) -> Interventions:
        """The interventions, their critical cards spoken by the broker's speech model
        (``/v1/audio/speech``'s) unless HERON_INTERVENTIONS_TTS_URL names a server."""
        from heron.interventions import open_interventions
        from heron.interventions.service import audio_folder
        from heron.interventions.voice import SpeakingVoice

        if self.settings.interventions.tts_url:
            return open_interventions(self.settings)
        voice = SpeakingVoice(
            audio_folder(self.settings),
            lambda text: self.speech.speak(text, response_format="wav"),
            "the speech model",
        )
        return open_interventions(self.settings, voice=voice)

    def router(self, **options: Any) -> ToolRouter:
        """``toolbox.router(**options)``, built once per distinct options: building one
        checks every tool's vector against the store. At most 32 are kept."""
        key = "router:" + repr(sorted(options.items()))
        kept = sum(k.startswith("router:") for k in list(self._opened))
        if key not in self._opened and kept >= 32:
            return self.toolbox.router(**options)  # callers may vary options without end
        return self.shared(key, lambda: self.toolbox.router(**options))

    def forget(self, prefix: str) -> None:
        """Drop the cached resources whose name starts with ``prefix`` (``router:`` once
        the tools changed), in every context; they hold nothing to close."""
        with self._lock:
            self._opened = {k: v for k, v in self._opened.items() if not k.startswith(prefix)}
            contexts = list(self._contexts.values())
        for context in contexts:
            context.forget(prefix)

    def search(self, query: str, **options: Any) -> list[Any]:
        """``heron.libraries.search`` on the shared store, settings and reranker."""
        mode = options.get("mode", "full")
        reranker = self.reranker if mode == "full" else None
        started = time.perf_counter()
        found = search_many(
            [query],
            self.store,
            reranker=reranker,
            settings=self.settings,
            **options,
        )[0]
        self.metrics.observe_search(mode, time.perf_counter() - started)
        return found

    def start(self) -> None:
        """Open what every request needs: the store and the embedding model."""
        self.store  # noqa: B018 -- opening is the point

    def close(self) -> None:
        with self._lock:
            opened, self._opened = self._opened, {}
            contexts, self._contexts = [*self._contexts.values(), *self._retired], {}
            self._retired = []
        for context in contexts:  # they use the store: closed before it
            context.close()
        for name in ("interventions", "agent", "toolbox", "skills", "jobs", "store"):
            resource = opened.pop(name, None)
            if resource is not None:
                resource.close()
        # Then what the features kept (the auth guard's pools, the keyring ...): their
        # lifespans may have closed some already, and a second close does nothing.
        for resource in opened.values():
            if isinstance(resource, Resource):
                resource.close()
