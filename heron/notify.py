"""Send one notice to people through alert channels: one apprise URL each.

>>> channels = Channels.parse(["json://127.0.0.1:9000/hook", "ntfy://heron-alerts"])
>>> deliveries = channels.send("Disk low", "/srv is 97% full", severity="critical")
>>> [(d.channel, d.ok, d.attempts) for d in deliveries]          # doctest: +SKIP
[('json://127.0.0.1:9000/hook', True, 1), ('ntfy://heron-alerts', False, 3)]

apprise (Slack, Discord, ntfy, email, JSON webhooks and a hundred more) does the wire
formats; this module adds what both the watchdog and interventions need around it:

- every URL is checked when the channels are built, so a typo is a ``ConfigError``
  naming the URL (apprise itself would just return ``False`` at send time);
- each channel is sent to on its own and retried with exponential backoff, and the
  outcome of each is returned (one dead webhook does not hide that Slack got it);
- what is returned and logged names a channel by its private form (apprise's
  ``url(privacy=True)``, then ``heron.redact``): the tokens inside URLs never reach a
  record, a log line or an error message.

Sending blocks (apprise uses ``requests``); call it from a worker thread in async code.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

import apprise

from heron.errors import ConfigError
from heron.redact import redact

log = logging.getLogger("heron.notify")

AlertLevel = Literal["info", "warning", "critical", "resolved"]

#: How a severity shows in the channels that colour or mark notices.
_TYPES = {
    "info": apprise.NotifyType.INFO,
    "warning": apprise.NotifyType.WARNING,
    "critical": apprise.NotifyType.FAILURE,
    "resolved": apprise.NotifyType.SUCCESS,
}


@dataclass(frozen=True)
class Delivery:
    """The outcome of sending one notice to one channel."""

    channel: str  # the channel's private form: no token, no password
    ok: bool
    attempts: int
    error: str | None = None  # why the last attempt failed


@dataclass(frozen=True)
class Channel:
    url: str
    name: str  # private form, safe to store and log
    _target: apprise.Apprise

    def send_once(self, title: str, body: str, severity: AlertLevel, timeout: float) -> bool:
        return bool(
            self._target.notify(
                body=body, title=title, notify_type=_TYPES[severity], timeout=timeout
            )
        )


class Channels:
    """The alert channels, built once from their URLs; ``send`` is safe from any thread."""

    def __init__(
        self,
        channels: Iterable[Channel],
        *,
        retries: int = 3,
        backoff: float = 0.5,
        timeout: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.channels = list(channels)
        self.retries = max(1, retries)
        self.backoff = backoff
        self.timeout = timeout
        self._sleep = sleep

    @classmethod
    def parse(cls, urls: Iterable[str], **options: float) -> Channels:
        """Channels for ``urls``; ``ConfigError`` names (privately) any URL apprise does
        not know. ``options``: ``retries``, ``backoff`` (first wait, seconds, doubled each
        retry), ``timeout`` (seconds per attempt)."""
        channels = []
        for url in urls:
            url = url.strip()
            if not url:
                continue
            target = apprise.Apprise()
            if not target.add(url):
                raise ConfigError(
                    f"Not an alert URL apprise knows: {redact(url)}. Each channel is one "
                    "apprise URL, e.g. json://host:port/path, ntfy://topic, "
                    "slack://tokenA/tokenB/tokenC; see https://github.com/caronc/apprise/wiki."
                )
            name = redact(target[0].url(privacy=True).split("?", 1)[0])
            channels.append(Channel(url, name, target))
        return cls(channels, **options)  # type: ignore[arg-type]

    def __bool__(self) -> bool:
        return bool(self.channels)

    def send(self, title: str, body: str, *, severity: AlertLevel = "warning") -> list[Delivery]:
        """Send to every channel (each retried ``retries`` times with backoff); one
        ``Delivery`` per channel, in order. Never raises for a channel's failure."""
        return [self._deliver(channel, title, body, severity) for channel in self.channels]

    def _deliver(self, channel: Channel, title: str, body: str, severity: AlertLevel) -> Delivery:
        error = None
        for attempt in range(1, self.retries + 1):
            try:
                if channel.send_once(title, body, severity, self.timeout):
                    return Delivery(channel.name, True, attempt)
                error = "the channel refused the notice or could not be reached"
            except Exception as exc:  # a plugin's own bug must not stop the others
                error = redact(f"{type(exc).__name__}: {exc}")
            if attempt < self.retries:
                self._sleep(self.backoff * 2 ** (attempt - 1))
        log.warning("alert to %s failed after %d attempts: %s", channel.name, self.retries, error)
        return Delivery(channel.name, False, self.retries, error)
