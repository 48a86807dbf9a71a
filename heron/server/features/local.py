"""The server's side of ``heron search`` and ``heron ask`` run in a shell of its home.

A command started in a shell loads the settings, the store and the models before it can
answer (seconds); a running server has them open. So ``heron serve`` announces itself in
its home (``announce``: ``$HERON_HOME/server.json``, 0600, see ``heron.discovery``), and
the two commands send their work here (``heron.cli.remote``):

- ``GET /local/hello?nonce=N``: ``{"heron": true, "proof": ...}``, the HMAC that shows a
  command this is its home's server (``heron.discovery.proof``). Open to anyone like
  ``/health``: it tells nothing of the home, and a command asks it before it sends a
  token or a question.
- ``search.batch``: what ``heron search`` prints (``heron.libraries.batch``).
- ``agent.ask``: what ``heron ask`` prints: the answer and how it was made
  (``heron.agent.how``), its turn as the CLI's (hints name its flags).

Both are ordinary JSON-RPC methods, with the scopes and limits of ``search.query`` and
``agent.chat``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from heron import __version__, discovery
from heron.agent.how import how
from heron.agent.turn import Turn
from heron.core.files import create_file, folder, remove_regular
from heron.errors import HeronError
from heron.libraries.batch import search_report
from heron.server.doors.rpc import Methods, Params
from heron.server.features.keys import current_key, spend_answer
from heron.server.hooks import endpoint
from heron.server.http.middleware import HELLO
from heron.server.http.replies import invalid
from heron.server.http.strictjson import StrictJSONResponse
from heron.server.runtime import Runtime
from heron.tools.ceiling import ceiling, entered_through

log = logging.getLogger("heron.server")

#: A nonce is 8 to 64 hex digits: anything else is no command's.
_NONCE = re.compile(r"[0-9a-f]{8,64}")


def secret(rt: Runtime) -> str:
    """This run's secret (64 hex digits): made at the first use, gone with the process."""
    return rt.shared("local.secret", lambda: secrets.token_hex(32))


@contextlib.contextmanager
def announce(rt: Runtime, *, host: str, port: int, uds: Path | None) -> Iterator[None]:
    """``server.json`` in the home while the block runs: where this server listens
    (``host`` is asked through loopback when it is every address), then removed, unless
    another server of the home has announced itself since. A server on port 0 (the
    system's choice) is not announced: its port is not known here."""
    home = Path(rt.settings.home)
    if uds is None and port == 0:
        yield
        return
    reach = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    url = "http://localhost" if uds else f"http://{_bracketed(reach)}:{port}"
    announced = discovery.Announcement(
        url=url,
        uds=str(Path(uds).resolve()) if uds else None,
        pid=os.getpid(),
        secret=secret(rt),
        fingerprint=discovery.fingerprint(),
        version=__version__,
    )
    written = _write(home, announced)
    try:
        yield
    finally:
        if written:
            _remove(home, announced.secret)


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _write(home: Path, announced: discovery.Announcement) -> bool:
    """Write the announcement 0600 in place of any older one; ``False`` (logged) when
    the home refuses it: the commands then run in-process, the server serves on."""
    try:
        with folder(home, []) as fd:  # the store made the home when the server started
            with contextlib.suppress(FileNotFoundError):
                remove_regular(fd, discovery.FILE, discovery.FILE)
            # Created 0600 under a fresh name, then linked in: never readable by others,
            # never written through a name planted there (heron.core.files).
            create_file(fd, discovery.FILE, announced.to_json(), discovery.FILE, mode=0o600)
    except (OSError, HeronError) as exc:  # PathRefused: a symlink or folder in its place
        log.warning("not announced in %s (heron search and ask run alone): %s", home, exc)
        return False
    return True


def _remove(home: Path, own: str) -> None:
    """Remove the announcement if it is still this server's (its secret is ``own``)."""
    try:
        current = discovery.read(home)
    except discovery.Unusable:
        current = None
    if current is None or current.secret != own:
        return
    with contextlib.suppress(OSError, HeronError), folder(home, []) as fd:
        remove_regular(fd, discovery.FILE, discovery.FILE)


async def hello(rt: Runtime, request: Request) -> Response:
    nonce = request.query_params.get("nonce", "")
    if not _NONCE.fullmatch(nonce):
        return invalid("nonce must be 8 to 64 lowercase hex digits.")
    return StrictJSONResponse(
        {"heron": True, "proof": discovery.proof(secret(rt), nonce, Path(rt.settings.home))}
    )


class SearchBatch(Params):
    queries: list[str] = Field(min_length=1, max_length=10_000, description="The questions.")
    library: list[str] | None = Field(default=None, description="Only these libraries.")
    collection: str | None = Field(default=None, description="Only this collection.")
    top_k: int = Field(default=10, description="Pages per query.")
    mode: str = Field(default="full", description="full, hybrid, dense or lexical.")


class AskParams(Params):
    message: str = Field(description="The question.")
    session_id: str | None = Field(default=None, description="Continue this conversation.")
    library: str | None = Field(default=None, description="Only search this library.")
    model: str | None = Field(default=None, description="A model alias from models.yml.")
    answer: Literal["extractive", "generative"] | None = Field(
        default=None, description="extractive or generative; default: the model's."
    )
    room: str | None = Field(default=None, description="Who shares the conversation.")


#: ``search.batch`` and ``agent.ask``: ``heron search`` and ``heron ask``.
rpc = Methods()


@rpc.method(
    "search.batch",
    SearchBatch,
    summary="What heron search prints: results per query, libraries searched, notes.",
    reach="context",
    scope="read",
)
def search_batch(p: SearchBatch, rt: Runtime) -> dict[str, Any]:
    reranker = rt.reranker if p.mode == "full" else None
    options = p.model_dump(exclude={"queries"})
    return search_report(p.queries, rt.store, settings=rt.settings, reranker=reranker, **options)


@rpc.method(
    "agent.ask",
    AskParams,
    summary="What heron ask prints: the answer (as agent.chat) and how it was made.",
    reach="context",
    scope="chat",
)
def agent_ask(p: AskParams, rt: Runtime) -> dict[str, Any]:
    safety = ceiling(rt.settings, entered_through("agent"), current_key())
    answer = rt.agent.ask(Turn(**p.model_dump(), tool_safety=safety))  # surface: cli
    spend_answer(rt, answer, [p.message])
    return {"answer": answer.to_dict(), "how": how(answer, rt.agent)}


def routes(rt: Runtime) -> list[BaseRoute]:
    return [Route(HELLO, endpoint(hello, rt), methods=["GET"])]


@contextlib.asynccontextmanager
async def lifespan(rt: Runtime) -> AsyncIterator[None]:
    """Removes the announcement at shutdown: uvicorn ends a server stopped by SIGTERM by
    raising that signal again, so ``announce``'s own ending never runs then."""
    try:
        yield
    finally:
        _remove(Path(rt.settings.home), secret(rt))
