"""Conditions in, interventions out: the values every part of ``heron.interventions`` passes.

A ``Condition`` is what a detector (or a person, through the API) saw; an ``Intervention``
is what became of it, stored: sent (``delivered``) or held back by the room's cooldown or
the active-condition guard, the text it was given, where it went (``Delivery``) and what
the person did with it (``accept`` / ``dismiss``). ``Resolution`` ends a condition.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

from heron.core.contexts import DEFAULT
from heron.errors import InputError

Severity = Literal["info", "warning", "critical"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
DeliveryStatus = Literal["delivered", "suppressed_cooldown", "suppressed_guard"]
STATUSES: tuple[DeliveryStatus, ...] = get_args(DeliveryStatus)
Outcome = Literal["accept", "dismiss"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
Channel = Literal["card", "message", "voice"]

#: The longest kind, key, room or actor taken; a fact's text is cut at ``MAX_FACT``
#: characters, a list fact at ``MAX_ITEMS`` items of at most ``MAX_ITEM`` characters each:
#: one fact is at most about 2 KB, whatever the caller sent.
MAX_NAME = 500
MAX_FACT = 2_000
MAX_ITEMS = 20
MAX_ITEM = 100


def severity_rank(severity: str) -> int:
    """``info`` 0, ``warning`` 1, ``critical`` 2: policies compare severities by rank."""
    return SEVERITIES.index(severity)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Condition:
    """What was detected. ``key`` is its identity within ``room`` (``collision:README.md``):
    while a condition with that key is active there, another is not sent again."""

    kind: str
    key: str
    room: str
    severity: Severity = "warning"
    facts: dict[str, Any] = field(default_factory=dict)
    actor: str = ""  # who raised it: the API's ``user`` or the token's name, a detector
    #: The context whose room it is in (``heron.core.contexts``): a room of one context
    #: is not the room of the same name in another. ``Interventions`` sets its own.
    context: str = DEFAULT

    def checked(self) -> Condition:
        """This condition, its names stripped; ``InputError`` says what is wrong."""
        names = {"kind": self.kind, "key": self.key, "room": self.room}
        for what, value in names.items():
            if not isinstance(value, str) or not value.strip():
                raise InputError(f"A condition needs a {what}: a non-empty string.")
            if len(value) > MAX_NAME:
                raise InputError(f"The condition's {what} is over {MAX_NAME} characters.")
        if self.severity not in SEVERITIES:
            raise InputError(
                f"Unknown severity {self.severity!r}. Choose from: {', '.join(SEVERITIES)}."
            )
        if not isinstance(self.facts, dict) or not all(isinstance(k, str) for k in self.facts):
            raise InputError('Facts are an object of named values, e.g. {"file": "README.md"}.')
        return Condition(
            self.kind.strip(),
            self.key.strip(),
            self.room.strip(),
            self.severity,
            {k: _fact(v) for k, v in self.facts.items()},
            (self.actor or "").strip()[:MAX_NAME],
            self.context,
        )


def _fact(value: Any, limit: int = MAX_FACT) -> Any:
    """A fact as stored: a scalar, or a flat list of scalars (``["alice", "bob"]``), cut
    to the bounds above (a nested list or an object becomes its text, cut)."""
    if isinstance(value, list | tuple) and limit == MAX_FACT:
        return [_fact(v, MAX_ITEM) for v in value[:MAX_ITEMS]]
    if value is None or isinstance(value, bool | int | float):
        return value
    return str(value)[:limit]


@dataclass(frozen=True)
class Resolution:
    """A condition that has ended: its key in its room is re-armed."""

    room: str
    key: str


@dataclass(frozen=True)
class Action:
    """A button on a card: the JSON-RPC call it makes (``jobs.confirm`` ``{"id": ...}``)."""

    label: str
    method: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Rendered:
    """What the templates made of a condition's facts."""

    text: str
    spoken: str
    actions: tuple[Action, ...] = ()


@dataclass(frozen=True)
class Delivery:
    """One channel's outcome for one intervention. ``target``: the alert channel's
    private name, the audio file, or the room's stream."""

    channel: Channel
    target: str
    ok: bool
    attempts: int = 1
    error: str | None = None
    at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class Intervention:
    id: int
    kind: str
    key: str
    room: str
    severity: Severity
    facts: dict[str, Any]
    actor: str
    status: DeliveryStatus
    text: str
    spoken: str
    actions: tuple[Action, ...]
    seen_before: int  # delivered interventions of this key in this room before this one
    created_at: float
    resolved_at: float | None = None
    audio_url: str | None = None
    outcome: Outcome | None = None
    outcome_by: str | None = None
    outcome_at: float | None = None
    step: int = 0  # the learned step of its kind in its room when raised (``learn``)
    context: str = DEFAULT  # the context of its room
    deliveries: tuple[Delivery, ...] = ()

    @property
    def delivered(self) -> bool:
        return self.status == "delivered"

    def card(self) -> dict[str, Any]:
        """The card a live client gets (docs/interventions.md, "The card")."""
        return {
            "id": self.id,
            "kind": self.kind,
            "key": self.key,
            "room": self.room,
            "severity": self.severity,
            "text": self.text,
            "spoken": self.spoken,
            "audio_url": self.audio_url,
            "actions": [asdict(a) for a in self.actions],
            "created_at": self.created_at,
            "seen_before": self.seen_before,
        }

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["actions"] = [asdict(a) for a in self.actions]
        data["deliveries"] = [asdict(d) for d in self.deliveries]
        return data


@dataclass(frozen=True)
class Member:
    """One person in a room's roster: where a ping to them goes (``channel``: ``page``,
    the room's cards, or an apprise URL, kept as given to send to and shown by its
    private form, ``shown``) and since when."""

    room: str
    person: str
    channel: str
    shown: str
    joined_at: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "room": self.room,
            "person": self.person,
            "channel": self.shown,
            "joined_at": self.joined_at,
        }


@dataclass(frozen=True)
class Learned:
    """Where the learning loop has put one kind in one room: its ``step`` down from the
    policy, and the outcomes given since its last change (what the next one is decided
    on)."""

    room: str
    kind: str
    step: int
    accepted: int
    dismissed: int
    changed_at: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PolicyChange:
    """One step the learning loop (or an operator's reset) took, with its reason."""

    id: int
    room: str
    kind: str
    from_step: int
    to_step: int
    reason: str
    by: str
    at: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Pruned:
    """What one retention pass removed."""

    interventions: int = 0
    suppressed: int = 0
    changes: int = 0
    audio: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class KindStats:
    """Per kind: how many were raised, and what became of them."""

    kind: str
    raised: int
    delivered: int
    suppressed_cooldown: int
    suppressed_guard: int
    accepted: int
    dismissed: int

    def rate(self, count: int) -> float | None:
        """``count`` as a share of the delivered ones (``None`` before any)."""
        return count / self.delivered if self.delivered else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {
            "accept_rate": self.rate(self.accepted),
            "dismiss_rate": self.rate(self.dismissed),
        }
