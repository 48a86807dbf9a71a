"""What a watchdog check is given besides its spec (``Context``) and what it gives back
(``Outcome``): the values ``heron.ops.watchdog.checks`` and the deploy check
(``heron.ops.watchdog.deploy``) share, below both."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from heron.settings import Settings


@dataclass
class Outcome:
    ok: bool
    detail: str
    seconds: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)
    #: What the check itself did (a deploy's steps), recorded like remedies.
    actions: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Context:
    """What a check may use besides its spec: ``memory`` is this check's own persisted
    dict (a deploy remembers a commit it rolled back); ``run_named`` runs other checks of
    the config by name, now (a deploy's strict checks); ``clock`` is the watchdog's."""

    settings: Settings
    memory: dict[str, Any]
    run_named: Callable[[list[str]], list[tuple[str, Outcome]]]
    clock: Callable[[], float] = time.time
