"""``Limiter``: at most so many hits per key in a moving window, kept in memory.

The one rate limiter of the server, on the ``limits`` library's moving window (exact:
no burst at a window's edge). The credential throttle (``heron.server.auth.Throttle``)
counts failed sign-ins and bearer tokens per client with it; a per-key request limit
would be another ``Limiter``.

>>> limiter = Limiter(2, 60)
>>> limiter.hit("10.0.0.7"), limiter.hit("10.0.0.7"), limiter.hit("10.0.0.7")
(True, True, False)
>>> 0 < limiter.retry_after("10.0.0.7") <= 60
True
"""

from __future__ import annotations

import math
import time

from limits import RateLimitItemPerSecond
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter


class Limiter:
    """``amount`` hits per ``seconds`` for each key (a client address, an API key)."""

    def __init__(self, amount: int, seconds: int) -> None:
        self.item = RateLimitItemPerSecond(amount, seconds)
        self._limiter = MovingWindowRateLimiter(MemoryStorage())

    def hit(self, key: str) -> bool:
        """Count one hit for ``key``; ``False`` when it is one too many (not counted)."""
        return self._limiter.hit(self.item, key)

    def allowed(self, key: str) -> bool:
        """Whether one more hit would be allowed, counting nothing."""
        return self._limiter.test(self.item, key)

    def retry_after(self, key: str) -> int:
        """Whole seconds until ``key`` may hit again (0: now), for ``Retry-After``."""
        if self.allowed(key):
            return 0
        reset = self._limiter.get_window_stats(self.item, key)[0]  # (reset_time, remaining)
        return max(1, math.ceil(reset - time.time()))

    def clear(self, key: str) -> None:
        self._limiter.clear(self.item, key)
