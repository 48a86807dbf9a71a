"""Silences, as in Alertmanager: ``heron watchdog silence CHECK --for 2h --reason ...``
mutes a check (a name, or a glob such as ``server-*``) until it ends or is expired.

A muted check still runs and is recorded, but sends no alert, raises no intervention and
runs no remedy (a person is working on it). When the silence ends, a check still failing
sends ``[FIRING]`` once, as a new incident would; one that recovered meanwhile sends
``[RESOLVED]`` only if its firing had been sent before the silence.

They live in ``$HERON_HOME/watchdog-silences.json``, changed under a lock and replaced
atomically; expired silences are kept a week (``heron watchdog silences --all`` shows
them), then dropped.
"""

from __future__ import annotations

import fcntl
import fnmatch
import json
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from heron.errors import ConfigError
from heron.private import private_dir

#: How long an ended silence stays listed.
KEEP_ENDED = 7 * 86400.0
#: How many silences the file holds at most (active ones are never dropped for it).
MOST = 1000


@dataclass(frozen=True)
class Silence:
    id: str
    matcher: str  # a check name or a glob
    starts: float
    ends: float
    reason: str
    by: str

    def active(self, now: float) -> bool:
        return self.starts <= now < self.ends

    def covers(self, name: str) -> bool:
        return fnmatch.fnmatchcase(name, self.matcher)


def silences_path(home: Path) -> Path:
    return home / "watchdog-silences.json"


class Silences:
    def __init__(self, home: Path) -> None:
        self.path = silences_path(home)

    def load(self) -> list[Silence]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return [Silence(**entry) for entry in data["silences"]]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"The watchdog silences {self.path} are unreadable ({exc}); delete the file "
                "to drop every silence."
            ) from exc

    def matching(self, name: str, now: float) -> Silence | None:
        """The active silence muting check ``name`` that ends last, if any."""
        found = [s for s in self.load() if s.active(now) and s.covers(name)]
        return max(found, key=lambda s: s.ends, default=None)

    def add(self, matcher: str, seconds: float, reason: str, by: str, now: float) -> Silence:
        silence = Silence(secrets.token_hex(4), matcher, now, now + seconds, reason, by)
        with self._changing(now) as silences:
            silences.append(silence)
        return silence

    def expire(self, silence_id: str, now: float) -> Silence:
        """End silence ``silence_id`` now (as Alertmanager's expire); it stays listed."""
        with self._changing(now) as silences:
            for i, silence in enumerate(silences):
                if silence.id == silence_id:
                    if silence.ends > now:
                        silences[i] = Silence(**{**asdict(silence), "ends": now})
                    return silences[i]
        active = ", ".join(s.id for s in silences if s.active(now)) or "none"
        raise ConfigError(
            f"No silence {silence_id!r}; active silences: {active} (heron watchdog silences)."
        )

    @contextmanager
    def _changing(self, now: float) -> Iterator[list[Silence]]:
        private_dir(self.path.parent)
        fd = os.open(self.path.with_name(".watchdog-silences.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # two people silencing at once both count
            silences = [s for s in self.load() if s.ends > now - KEEP_ENDED]
            yield silences
            silences.sort(key=lambda s: (s.ends > now, s.ends))
            kept = silences[-MOST:] if len(silences) > MOST else silences
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
            body = {"silences": [asdict(s) for s in kept]}
            tmp.write_text(json.dumps(body, indent=1), encoding="utf-8")
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        finally:
            os.close(fd)
