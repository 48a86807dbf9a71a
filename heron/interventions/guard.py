"""Never nagging: the decision whether a condition goes out, as one pure function.

Two rules, checked in this order inside the store's write transaction (so that threads,
processes and servers sharing one database agree; see ``heron.interventions.base``):

1. **Active-condition guard.** While an intervention for a key is active in a room (sent,
   not yet resolved), another condition with that key is ``suppressed_guard``. Resolving
   the key re-arms it.
2. **Cooldown.** Within ``cooldown`` seconds of the room's last delivered intervention,
   any other condition is ``suppressed_cooldown``: a room gets one notice at a time,
   unless the new one is more severe than the one that started the cooldown (a conflict
   is not held back by a collaboration nudge). A suppressed condition does not become
   active, so it goes out when raised again after the cooldown. Resolving the condition
   that started a cooldown ends it: the room is quiet again, and what comes next is news.

>>> decide(active=False, last_delivered_at=100.0, now=250.0, cooldown=180.0)
'suppressed_cooldown'
>>> decide(active=False, last_delivered_at=100.0, now=250.0, cooldown=180.0,
...        severity="critical", last_severity="warning")
'delivered'
>>> decide(active=False, last_delivered_at=None, now=250.0, cooldown=180.0)
'delivered'
"""

from __future__ import annotations

from heron.interventions.model import DeliveryStatus, severity_rank


def decide(
    *,
    active: bool,
    last_delivered_at: float | None,
    now: float,
    cooldown: float,
    severity: str = "warning",
    last_severity: str | None = None,
) -> DeliveryStatus:
    """``delivered``, ``suppressed_guard`` or ``suppressed_cooldown`` (module docstring);
    ``last_severity``: that of the intervention that started the room's cooldown."""
    if active:
        return "suppressed_guard"
    cooling = last_delivered_at is not None and now - last_delivered_at < cooldown
    escalates = last_severity is not None and severity_rank(severity) > severity_rank(last_severity)
    if cooling and not escalates:
        return "suppressed_cooldown"
    return "delivered"
