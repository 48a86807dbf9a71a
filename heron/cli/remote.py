"""A command through the running ``heron serve`` of its home, when there is one.

``call(command, method, params)`` sends one JSON-RPC call to the server announced in the
home (``heron.discovery``: its file, checked, and its proof of the home's secret) and
returns the result, or ``None``: the command then runs in-process, as it would with no
server. Nothing is said on the way (a command answers the same either way); what was
done, and why, is kept in ``$HERON_HOME/paths.json`` for ``heron info`` (``last_paths``).

Any failure is ``None``: no announcement, a stale or foreign one, a server that does not
answer or cannot prove the home's secret, a refusal (a token it wants and this command
does not send, a context it does not know) or the method's error. The in-process run
then does the work again and, for an error, says it in the command's own words.

``require(command, method, params)`` is for a command only the server can run (what it
holds in memory: a room's activity, ``heron people activity``): the result, or
``InputError`` saying what the server answered (its refusal, in its own words) or why no
server took it and how to start one.

Standard library and ``httpx`` only, imported when a server is announced: looking costs
a command without a server a file lookup.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

from heron import discovery
from heron.cli.settings import chosen_context
from heron.errors import InputError

#: Where the last path of each command is kept, in the home.
PATHS = "paths.json"
#: Seconds to connect and to be proven the server; a server that is slower than this to
#: say hello is treated as absent. Its answers themselves have no deadline (``ask`` may
#: take minutes with a generative model).
HELLO_TIMEOUT = 2.0
#: The header a request names its context with (``heron.core.contexts.HEADER``; that
#: package is not imported for one name).
CONTEXT_HEADER = "X-Heron-Context"
#: What ``heron info`` calls the two paths.
SERVER, IN_PROCESS = "server", "in-process"


class Refused(discovery.Unusable):
    """The server took the call and answered with an error, ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"the server answered {status}: {message}")
        self.message = message


def call(command: str, method: str, params: dict[str, Any]) -> Any | None:
    """``method``'s result from the home's server, or ``None`` to run ``command`` here."""
    try:
        return _through(command, method, params)
    except discovery.Unusable:
        return None


def require(command: str, method: str, params: dict[str, Any]) -> Any:
    """``method``'s result from the home's server; ``InputError`` with the server's own
    message when it refused, or why none took it and how to start one."""
    try:
        return _through(command, method, params)
    except Refused as said:
        raise InputError(said.message) from None
    except discovery.Unusable as why:
        raise InputError(
            f"heron {command} goes to this home's running server, and none took it ({why}). "
            "Start one in another terminal (heron serve), with the same HERON_* settings, "
            "then run this again."
        ) from None


def _through(command: str, method: str, params: dict[str, Any]) -> Any:
    """``method``'s result from the home's server, the path it took kept for ``heron
    info``; ``Unusable`` (``Refused`` for the method's error) when it did not answer."""
    home = discovery.home()
    try:
        announced = discovery.read(home)
        if announced.fingerprint != discovery.fingerprint():
            raise discovery.Unusable("the server was started with other HERON_* settings")
        result = _call(announced, home, method, params)
    except discovery.Unusable as why:
        _record(home, command, IN_PROCESS, str(why))
        raise
    _record(home, command, SERVER, announced.uds or announced.url)
    return result


def _call(
    announced: discovery.Announcement, home: Path, method: str, params: dict[str, Any]
) -> Any:
    """Prove the server, then call; ``Unusable`` for any failure."""
    import httpx  # here: a command without a server does not load it

    transport = httpx.HTTPTransport(uds=announced.uds) if announced.uds else None
    headers = {}
    token = os.environ.get("HERON_API_TOKEN")
    context = chosen_context()
    try:
        with httpx.Client(
            base_url=announced.url, transport=transport, timeout=HELLO_TIMEOUT, trust_env=False
        ) as client:
            nonce = secrets.token_hex(16)
            hello = client.get("/local/hello", params={"nonce": nonce})
            said = hello.json() if hello.status_code == 200 else None
            answer = said.get("proof") if isinstance(said, dict) else None
            if not isinstance(answer, str) or not discovery.proven(
                announced.secret, nonce, home, answer
            ):
                raise discovery.Unusable(f"the server at {announced.url} is not this home's")
            # Proven: only now may it see a credential and the question.
            if token:
                headers["Authorization"] = f"Bearer {token}"
            if context:
                headers[CONTEXT_HEADER] = context
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            reply = client.post(
                "/rpc", json=body, headers=headers, timeout=httpx.Timeout(HELLO_TIMEOUT, read=None)
            )
    except (httpx.HTTPError, ValueError) as exc:
        raise discovery.Unusable(f"the server at {announced.url} failed: {exc}") from None
    try:
        data = reply.json()
    except ValueError:
        data = None
    if reply.status_code != 200 or not isinstance(data, dict) or "result" not in data:
        error = data.get("error") if isinstance(data, dict) else None
        said = error.get("message") if isinstance(error, dict) else reply.reason_phrase
        raise Refused(reply.status_code, str(said))
    return data["result"]


def _record(home: Path, command: str, path: str, why: str) -> None:
    """Keep ``command``'s path for ``heron info``; a home not made yet keeps nothing
    (the in-process run makes it)."""
    if not home.is_dir():
        return
    paths = last_paths(home)
    paths[command] = {"path": path, "why": why, "at": time.time()}
    data = json.dumps(paths, indent=1).encode()
    tmp = home / f".{PATHS}.{secrets.token_hex(4)}.heron-tmp"
    # Created afresh (a name planted there is refused, never written through), then
    # renamed over the file: a concurrent command reads the old file or the new one.
    with contextlib.suppress(OSError):
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, home / PATHS)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def last_paths(home: Path) -> dict[str, Any]:
    """``{command: {"path": "server" or "in-process", "why": ..., "at": epoch}}`` of the
    last ``heron search`` and ``heron ask`` run in ``home``; ``{}`` before any."""
    try:
        fd = os.open(home / PATHS, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            data = json.loads(handle.read(discovery.MAX_BYTES))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def paths_seen() -> dict[str, Any]:
    """What ``heron info`` says of the two paths: ``server``, whether a server of this
    home would take ``heron search`` and ``heron ask`` now (from its announcement alone,
    nothing is sent), and ``last``, the way each went last time (``last_paths``)."""
    home = discovery.home()
    try:
        announced = discovery.read(home)
        if announced.fingerprint != discovery.fingerprint():
            raise discovery.Unusable("the server was started with other HERON_* settings")
        where = f"unix socket {announced.uds}" if announced.uds else announced.url
        server = f"{where} (pid {announced.pid}) takes heron search and heron ask"
    except discovery.Unusable as why:
        server = f"none usable ({why}): heron search and heron ask run in-process"
    return {"server": server, "last": last_paths(home)}
