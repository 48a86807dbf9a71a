"""The conversations of ``heron/agent/sessions.py`` as JSON-RPC methods, for any client
(the chat page's sidebar is one): ``sessions.list``, ``sessions.rename`` and
``sessions.delete``. A conversation's turns are ``agent.history``."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from heron.agent.sessions import check_session_id
from heron.errors import NotFound
from heron.server.methods import Params
from heron.server.rpc import Registry
from heron.server.runtime import Runtime


class ListParams(Params):
    limit: int = Field(default=200, ge=1, le=10_000, description="Sessions to list at most.")


class SessionParams(Params):
    session_id: str = Field(min_length=1)


class RenameParams(SessionParams):
    title: str = Field(max_length=200, description="The new title; empty: the first question.")


def register(registry: Registry, rt: Runtime) -> None:
    """Add the ``sessions.*`` methods, bound to ``rt``'s agent."""

    def rename(p: RenameParams) -> dict[str, Any]:
        rt.agent.sessions.rename(check_session_id(p.session_id), p.title)
        return {"session_id": p.session_id, "title": p.title.strip()}

    def delete(p: SessionParams) -> dict[str, Any]:
        if not rt.agent.sessions.delete(check_session_id(p.session_id)):
            raise NotFound(f"No session {p.session_id!r}; sessions.list names them.")
        return {"session_id": p.session_id, "deleted": True}

    add = registry.add
    add(
        "sessions.list",
        lambda p: rt.agent.sessions.recent(p.limit),
        ListParams,
        summary="Conversations, the latest first, each with its title.",
    )
    add("sessions.rename", rename, RenameParams, summary="Give a conversation a title.")
    add("sessions.delete", delete, SessionParams, summary="Forget a conversation.")
