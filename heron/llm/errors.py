"""What can go wrong talking to a model. Each error names the model alias and the fix.

HeronError
 ├── ConfigError               models.yml is malformed or names an unknown provider
 ├── InputError
 │    └── RequestError         the request itself is unusable (no messages, too long)
 └── ProviderError             a model call failed; ``.alias`` names the model
      ├── RateLimited          429; retried after ``retry_after`` (or backoff)
      ├── ProviderDown         5xx, 529 "overloaded"; retried
      ├── ProviderTimeout      timeout or connection failure; retried
      ├── BadRequest           other 4xx: the request's fault; not retried, falls back
      ├── AuthError            401/403 or a missing key variable; falls back
      └── NoModelAvailable     every model of the fallback chain failed; lists why

A ``BadRequest`` is not retried (the same payload fails the same way) but does fall to
the next model: another provider may accept what this one refused (a longer context,
a tool_choice it supports), and the caller gets every refusal in ``NoModelAvailable``.
"""

from __future__ import annotations

from heron.errors import HeronError, InputError


class RequestError(InputError):
    """The request cannot be sent to any model as it is."""


class ProviderError(HeronError):
    """A model call failed. ``retryable``: the broker may try the same model again."""

    retryable = False

    def __init__(self, alias: str, message: str) -> None:
        self.alias = alias
        super().__init__(f"model {alias!r}: {message}")


class RateLimited(ProviderError):
    retryable = True

    def __init__(self, alias: str, message: str, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(alias, message)


class ProviderDown(ProviderError):
    retryable = True


class ProviderTimeout(ProviderError):
    retryable = True


class BadRequest(ProviderError):
    pass


class AuthError(ProviderError):
    pass


class NoModelAvailable(ProviderError):
    """Every model tried failed; ``errors`` holds each one's last error, in order."""

    def __init__(self, alias: str, errors: list[ProviderError]) -> None:
        self.errors = errors
        reasons = "; ".join(str(e) for e in errors)
        super().__init__(
            alias,
            f"no model of the chain answered ({reasons}). Fix the first error, or add a "
            "fallback to the model's 'fallbacks' in models.yml (see: heron models list).",
        )
