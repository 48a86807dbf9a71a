"""How a command finds the running ``heron serve`` of its home, and knows it is that one.

``heron serve`` writes ``$HERON_HOME/server.json`` (``FILE``) once it listens and removes
it when it stops: where it listens, its process id, the fingerprint of the environment it
was started in (``fingerprint``) and a secret of 32 random bytes made for this run. The
file is created 0600: only the home's owner can read it (``heron.server.features.local`` writes it).

A command (``heron search``, ``heron ask``: ``heron.cli.remote``) takes the file only
when it is a regular file (no symlink is followed), owned by this user, readable by
nobody else, its process alive and its fingerprint this command's (``read`` raises
``Unusable`` naming why not). Before it sends anything the command asks the server to
prove it knows the secret for this home: ``proof(secret, nonce, home)``, an HMAC of a
fresh nonce and the home's path. A server of another home, an old file left by a server
that crashed, or a stranger who took the port since, cannot answer it: the command then
runs in-process, as it does with no server at all.

Standard library alone: a command that finds no server pays nothing for looking.

>>> proof("00" * 32, "n0nce", Path("/srv/heron"))[:16]
'aa89f78ff7d29f56'
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

#: The file in ``$HERON_HOME`` a running server announces itself in.
FILE = "server.json"
#: Bytes of the file read at most; an announcement is a few hundred.
MAX_BYTES = 16_384
#: A variable that changes what a command answers, beside the ``HERON_*`` ones: the
#: models' folder (``heron.settings``).
ALSO_SEEN = ("XDG_CACHE_HOME",)
#: ``HERON_*`` variables left out: the home is the proof's to check (``proof``), the
#: command's context is sent with each request, the token is a credential, the debug
#: switch is the command's own, and ``HERON_SERVER_*`` the server's (where it listens).
NOT_SEEN = frozenset({"HERON_HOME", "HERON_CONTEXT", "HERON_DEBUG", "HERON_API_TOKEN"})


class Unusable(Exception):
    """Why the announcement cannot be used; the command runs in-process instead."""


@dataclass(frozen=True)
class Announcement:
    """A running server, as its ``server.json`` says: ``url`` to send requests to
    (``http://127.0.0.1:8765``; ``http://localhost`` through ``uds``, a Unix socket)."""

    url: str
    uds: str | None
    pid: int
    secret: str
    fingerprint: str
    version: str

    def to_json(self) -> bytes:
        return json.dumps(asdict(self)).encode()


def home(environ: Mapping[str, str] = os.environ) -> Path:
    """The home the settings would pick from the environment alone: ``HERON_HOME``, else
    ``$XDG_DATA_HOME/heron`` (``~/.local/share/heron``). A ``home`` set in heron.toml
    is not seen here: a command of such a home finds no announcement and runs
    in-process."""
    given = environ.get("HERON_HOME")
    if given:
        return Path(given)
    data = environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "heron"


def fingerprint(environ: Mapping[str, str] = os.environ) -> str:
    """A hash of the variables that decide what a command answers (every ``HERON_*``
    but ``NOT_SEEN`` and ``HERON_SERVER_*``, and ``ALSO_SEEN``): a server started with
    other settings than the command's answers differently, so it is not used. Relative
    paths in them are taken as written (a server started in another folder reads them
    there; give absolute ones)."""
    seen = sorted(
        (name, value)
        for name, value in environ.items()
        if name in ALSO_SEEN
        or (
            name.startswith("HERON_")
            and name not in NOT_SEEN
            and not name.startswith("HERON_SERVER_")
        )
    )
    return hashlib.sha256(json.dumps(seen).encode()).hexdigest()


def proof(secret: str, nonce: str, home: Path) -> str:
    """What the server answers a ``nonce`` with: HMAC-SHA256 under its secret of the
    nonce and the absolute path of its home (hex)."""
    message = f"{nonce}\n{os.path.abspath(home)}".encode()
    return hmac.new(bytes.fromhex(secret), message, hashlib.sha256).hexdigest()


def proven(secret: str, nonce: str, home: Path, answer: str) -> bool:
    """The server's ``answer`` is ``proof(secret, nonce, home)`` (compared in constant
    time)."""
    return hmac.compare_digest(proof(secret, nonce, home), answer)


def read(folder: Path) -> Announcement:
    """The announcement in ``folder`` (a home), or ``Unusable`` saying why not: none
    there, not a regular file, another user's, readable by others, unreadable, its
    process gone. The environment's fingerprint is the caller's to compare."""
    path = folder / FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise Unusable(f"no server announced ({path} is absent)") from None
    except OSError as exc:  # a symlink there is ELOOP
        raise Unusable(f"{path} cannot be opened: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unusable(f"{path} is no regular file")
        if info.st_uid != os.getuid():
            raise Unusable(f"{path} belongs to another user")
        if info.st_mode & 0o077:
            raise Unusable(f"{path} is readable by others (mode {stat.S_IMODE(info.st_mode):o})")
        data = handle.read(MAX_BYTES + 1)
    try:
        fields = json.loads(data) if len(data) <= MAX_BYTES else None
        announced = Announcement(**fields) if isinstance(fields, dict) else None
    except (ValueError, TypeError):
        announced = None
    if announced is None or not isinstance(announced.pid, int):
        raise Unusable(f"{path} is not a server's announcement")
    if not _alive(announced.pid):
        raise Unusable(f"{path} is stale: process {announced.pid} has ended")
    return announced


def _alive(pid: int) -> bool:
    """A process of this user runs as ``pid``: signal 0 checks without sending one."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: not the server this user started
        return False
    return True
