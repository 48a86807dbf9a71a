"""The conversations of ``heron/agent/sessions.py`` as JSON-RPC methods, for any client
(the chat page's sidebar is one): ``sessions.list``, ``sessions.rename``,
``sessions.delete``, and a conversation's turns, ``agent.history``."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from heron.agent.sessions import check_session_id
from heron.errors import NotFound
from heron.server.hooks import no_lifespan, no_routes
from heron.server.rpc import Params, Registry
from heron.server.runtime import Runtime
from heron.web.markdown import with_html


class ListParams(Params):
    limit: int = Field(default=200, ge=1, le=10_000, description="Sessions to list at most.")


class SessionParams(Params):
    session_id: str = Field(min_length=1)


class RenameParams(SessionParams):
    title: str = Field(max_length=200, description="The new title; empty: the first question.")


def register(registry: Registry, rt: Runtime) -> None:
    """Add the ``sessions.*`` methods, each on the agent of the caller's context: a
    context lists, reads, renames and deletes its own sessions only."""

    @registry.method(
        "sessions.list",
        ListParams,
        summary="Conversations, the latest first, each with its title.",
        reach="context",
        scope="chat",
    )
    def list_(p: ListParams, rt: Runtime) -> list[dict[str, Any]]:
        return rt.agent.sessions.recent(p.limit)

    @registry.method(
        "sessions.rename",
        RenameParams,
        summary="Give a conversation a title.",
        reach="context",
        scope="chat",
    )
    def rename(p: RenameParams, rt: Runtime) -> dict[str, Any]:
        rt.agent.sessions.rename(check_session_id(p.session_id), p.title)
        return {"session_id": p.session_id, "title": p.title.strip()}

    @registry.method(
        "agent.history",
        SessionParams,
        summary="A conversation's turns, oldest first (each answer with its html).",
        reach="context",
        scope="chat",
    )
    def history(p: SessionParams, rt: Runtime) -> list[dict[str, Any]]:
        return [t | {"answer": with_html(t["answer"])} for t in rt.agent.history(p.session_id)]

    @registry.method(
        "sessions.delete",
        SessionParams,
        summary="Forget a conversation.",
        reach="context",
        scope="chat",
    )
    def delete(p: SessionParams, rt: Runtime) -> dict[str, Any]:
        if not rt.agent.sessions.delete(check_session_id(p.session_id)):
            raise NotFound(f"No session {p.session_id!r}; sessions.list names them.")
        return {"session_id": p.session_id, "deleted": True}


routes = no_routes
lifespan = no_lifespan
