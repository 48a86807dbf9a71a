"""The conversations of ``heron/agent/sessions.py`` as JSON-RPC methods, for any client
(the chat page's sidebar is one): ``sessions.create``, ``sessions.list``,
``sessions.rename``, ``sessions.delete``, and a conversation's turns, ``agent.history``.

**Whose.** A caller is the key it came with (``heron.server.features.keys``): a named key
by its name, the server's token and the page signed in with it as ``HERON_API_TOKEN``; with no
key (a loopback server without a token, where every caller may do everything) it is the
machine's own user, as at the CLI. Each session is its starter's: ``sessions.list``
lists the caller's own, ``door: "page"`` those made on the page (the sidebar), and a
key with the ``admin`` scope may ask for ``everyone``'s. Another's session is a -32004,
as one that does not exist, to all but an admin. The server (``rpc_registry``) tells the
agent's sessions how to learn who asks: ``asker`` (``use_asker``), so a turn saved
through any door (``/v1``, MCP, ``/chat/stream``, ``agent.chat``) is its key's."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from heron.agent.sessions import Asker, Door, check_session_id
from heron.errors import NotFound
from heron.keys import ADMIN, Forbidden
from heron.server.doors.rpc import Methods, Params
from heron.server.features.keys import current_key
from heron.server.hooks import no_lifespan, no_routes
from heron.server.runtime import Runtime
from heron.server.web.markdown import with_html


def asker(door: Door = "api") -> Asker:
    """The request's caller, as the sessions know it (the module docstring); ``door``:
    where a session it starts was started. Read from the request's key (``CALLER``),
    which the key check sets for every request and MCP for each of its tool calls."""
    key = current_key()
    if key is None:
        return Asker("", door, admin=True)
    return Asker(key.name, door, admin=key.allows(ADMIN))


class CreateParams(Params):
    # A client names the page or the API; only the CLI starts a cli session.
    door: Literal["page", "api"] = Field(
        default="api",
        description="Where the conversation is held: page (the web page's chat, listed "
        "in its sidebar) or api.",
    )


class ListParams(Params):
    limit: int = Field(default=200, ge=1, le=10_000, description="Sessions to list at most.")
    door: Door | None = Field(
        default=None, description="Only those started there: page, cli or api. Default: all."
    )
    everyone: bool = Field(
        default=False,
        description="Every owner's sessions, those of unknown owner too (admin only). "
        "Default: the caller's own.",
    )


class SessionParams(Params):
    session_id: str = Field(min_length=1)


class RenameParams(SessionParams):
    title: str = Field(max_length=200, description="The new title; empty: the first question.")


#: The ``sessions.*`` methods, each on the agent of the caller's context, acting as the
#: caller: a context lists, reads, renames and deletes its own sessions only, and a caller
#: its own (an admin every one of the context).
rpc = Methods(reach="context", scope="chat")


@rpc.method(
    "sessions.create",
    CreateParams,
    summary="Start an empty conversation of the caller's, to ask in by its id.",
)
def create(p: CreateParams, rt: Runtime) -> dict[str, Any]:
    return {"session_id": rt.agent.sessions.create(asker(p.door)), "door": p.door}


@rpc.method(
    "sessions.list",
    ListParams,
    summary="The caller's conversations, the latest first, each with its title.",
)
def list_(p: ListParams, rt: Runtime) -> list[dict[str, Any]]:
    who = asker()
    if p.everyone and not who.admin:
        raise Forbidden(who.owner, ADMIN)  # -32010, as a method that needs admin
    return rt.agent.sessions.recent(p.limit, asker=who, door=p.door, everyone=p.everyone)


@rpc.method(
    "sessions.rename",
    RenameParams,
    summary="Give a conversation a title.",
)
def rename(p: RenameParams, rt: Runtime) -> dict[str, Any]:
    rt.agent.sessions.rename(check_session_id(p.session_id), p.title, asker=asker())
    return {"session_id": p.session_id, "title": p.title.strip()}


@rpc.method(
    "agent.history",
    SessionParams,
    summary="A conversation's turns, oldest first (each answer with its html).",
)
def history(p: SessionParams, rt: Runtime) -> list[dict[str, Any]]:
    turns = rt.agent.sessions.turns(check_session_id(p.session_id), asker=asker())
    return [t | {"answer": with_html(t["answer"])} for t in turns]


@rpc.method(
    "sessions.delete",
    SessionParams,
    summary="Forget a conversation.",
)
def delete(p: SessionParams, rt: Runtime) -> dict[str, Any]:
    if not rt.agent.sessions.delete(check_session_id(p.session_id), asker=asker()):
        raise NotFound(f"No session {p.session_id!r}; sessions.list names them.")
    return {"session_id": p.session_id, "deleted": True}


routes = no_routes
lifespan = no_lifespan
