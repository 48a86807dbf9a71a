"""What can go wrong talking to a model. Each error names the model alias and the fix.

HeronError
 ├── ConfigError               models.yml is malformed or names an unknown provider
 ├── InputError
 │    └── RequestError         the request itself is unusable (no messages, too long)
 └── ProviderError             a model call failed; ``.alias`` names the model
      ├── RateLimited          429; retried after ``retry_after`` (or backoff)
      ├── ProviderDown         5xx, 529 "overloaded"; retried
      ├── ProviderTimeout      timeout or connection failure; retried
      │    └── OwnTimeout      the request's own: its max_tokens took longer than the
      │                        timeout; not retried, and the model is not cooled
      ├── BadRequest           other 4xx: the request's fault; not retried, falls back
      ├── AuthError            401/403 or a missing key variable; falls back
      ├── CoolingDown          every model of the chain is cooling down (``cooldowns``)
      └── NoModelAvailable     every model of the fallback chain failed; lists why

A ``BadRequest`` is not retried (the same payload fails the same way) but does fall to
the next model: another provider may accept what this one refused (a longer context,
a tool_choice it supports), and the caller gets every refusal in ``NoModelAvailable``.

Each sets its row of the error table (``heron.errors``): ``http_status`` is the HTTP
status a server answers it with (400 the request's fault, 429 rate limited, 503 cooling
down, 502 any other failure), ``rpc_code`` follows it (``MODEL_UNAVAILABLE`` for 429 and
503) and ``retry_after`` is the seconds to wait before asking again, where the provider
or the cooldown says so: a server passes both on (``Retry-After``).
"""

from __future__ import annotations

from heron.errors import HeronError, InputError

#: JSON-RPC's code for a model rate limited upstream (429) or cooling down (503): ask
#: again after ``data.retry_after`` seconds.
MODEL_UNAVAILABLE = -32007


class RequestError(InputError):
    """The request cannot be sent to any model as it is."""


class ProviderError(HeronError):
    """A model call failed. ``retryable``: the broker may try the same model again."""

    retryable = False

    def __init__(self, alias: str, message: str) -> None:
        self.alias = alias
        super().__init__(f"model {alias!r}: {message}")

    @property
    def rpc_code(self) -> int:  # type: ignore[override]
        """Follows ``http_status``, which a chain's failure sets per instance."""
        return MODEL_UNAVAILABLE if self.http_status in (429, 503) else HeronError.rpc_code


class RateLimited(ProviderError):
    retryable = True
    http_status = 429

    def __init__(self, alias: str, message: str, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(alias, message)


class ProviderDown(ProviderError):
    retryable = True


class ProviderTimeout(ProviderError):
    """No answer in time, or no connection. ``waiting``: the provider took the request
    and was still answering when the timeout came (a read timeout), as opposed to a
    server that could not be reached or stopped sending mid-answer."""

    retryable = True

    def __init__(self, alias: str, message: str, *, waiting: bool = False) -> None:
        self.waiting = waiting
        super().__init__(alias, message)


class OwnTimeout(ProviderTimeout):
    """A timeout the request caused itself: a whole answer asked for at once with more
    ``max_tokens`` than a model writes for Heron's own calls, and not there within the
    timeout. It says nothing about the model's health (``heron.llm.cooldowns`` does not
    count it) and the same request would wait as long again, so it is not retried."""

    retryable = False


class BadRequest(ProviderError):
    http_status = 400


class ContextTooLong(BadRequest):
    """The prompt is over the model's context window: the broker tries the alias's
    ``context_window_fallbacks`` first."""


class CoolingDown(ProviderError):
    """Every model of the chain is cooling down after repeated failures; ``retry_after``
    says when the first is tried again. ``rate_limited``: each was cooled by a 429, so the
    answer is a 429 too (else 503)."""

    def __init__(self, alias: str, message: str, retry_after: float, rate_limited: bool) -> None:
        self.retry_after = retry_after
        self.http_status = 429 if rate_limited else 503
        super().__init__(alias, message)


class AuthError(ProviderError):
    pass


class NoModelAvailable(ProviderError):
    """Every model tried failed; ``errors`` holds each one's last error, in order."""

    def __init__(self, alias: str, errors: list[ProviderError]) -> None:
        self.errors = errors
        statuses = {e.http_status for e in errors}
        # One status when every model failed the same way; a mix is the chain's failure.
        self.http_status = statuses.pop() if len(statuses) == 1 else 502
        waits = [e.retry_after for e in errors]
        if self.http_status in (429, 503) and None not in waits:
            self.retry_after = min(w for w in waits if w is not None)
        reasons = "; ".join(str(e) for e in errors)
        super().__init__(
            alias,
            f"no model of the chain answered ({reasons}). Fix the first error, or add a "
            "fallback to the model's 'fallbacks' in models.yml (see: heron models list).",
        )
