"""Telling people: one notice per incident event, through ``heron.notify`` (apprise).

What ``state.observe`` decided becomes at most one notice: ``firing`` when a check
crosses its failure threshold, ``repeat`` every ``repeat_interval`` while it stays
failed, ``escalated`` when its restart budget is spent, ``resolved`` once on recovery;
nothing in between, so a check failing for hours sends a handful, not one a run.
"""

from __future__ import annotations

import socket
from typing import Any, Literal

from heron.notify import AlertLevel, Channels
from heron.ops.watchdog.state import CheckState, iso

Event = Literal["firing", "repeat", "escalated", "resolved"]


def notice(event: Event, name: str, spec: Any, state: CheckState, detail: str) -> tuple[str, str]:
    """The title and body of the notice for ``event`` on check ``name``."""
    host = socket.gethostname()
    title = f"[{event.upper()}] heron watchdog on {host}: {name}"
    lines = [detail]
    if event == "resolved":
        lines.append("The check passes again.")
    else:
        since = iso(state.since) if state.since else "now"
        lines.append(f"Failing since {since} ({state.failures} failed runs in a row).")
    if event == "escalated":
        lines.append(
            f"Its remedy ran {len(state.remedies)} times in the budget window and did not "
            "help; no more remedies run until it recovers. A person is needed."
        )
    return title, "\n".join(lines)


def severity(event: Event, spec: Any) -> AlertLevel:
    if event == "resolved":
        return "resolved"
    return "critical" if spec.critical or event == "escalated" else "warning"


def send(
    channels: Channels, event: Event, name: str, spec: Any, state: CheckState, detail: str
) -> dict[str, Any]:
    """Send the notice to every channel; the action record, deliveries included."""
    title, body = notice(event, name, spec, state, detail)
    deliveries = channels.send(title, body, severity=severity(event, spec)) if channels else []
    return {
        "action": "alert",
        "alert": event,
        "title": title,
        "ok": all(d.ok for d in deliveries),
        "deliveries": [
            {"channel": d.channel, "ok": d.ok, "attempts": d.attempts, "error": d.error}
            for d in deliveries
        ],
        "detail": "sent" if deliveries else "no alert channels configured",
    }
