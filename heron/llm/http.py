"""What the HTTP providers share: one POST (plain or streamed), errors translated at the
boundary, Server-Sent Events.

httpx is used directly rather than the vendors' SDKs because the SDKs retry on their own
(OpenAI's and Anthropic's twice by default); under the broker's retry loop that would
nest loops and multiply waits. Here a call is exactly one HTTP request.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from heron.llm.errors import (
    AuthError,
    BadRequest,
    ContextTooLong,
    ProviderDown,
    ProviderError,
    ProviderTimeout,
    RateLimited,
)
from heron.redact import redact
from heron.resource import Resource

#: How providers word a prompt over the context window: OpenAI's error code, Anthropic's
#: and vLLM's messages, llama.cpp's server.
CONTEXT_MARKS = (
    "context_length_exceeded",
    "prompt is too long",
    "maximum context length",
    "exceed context window",
    "exceeds the available context size",
)


class HTTPModel(Resource):
    """A model reached over HTTP: ``alias`` for messages, ``url`` to POST to, ``headers``
    (with the key, which ``redact`` masks in every error), ``key_env`` to name the fix."""

    def __init__(
        self, alias: str, url: str, headers: dict[str, str], key: str | None, key_env: str | None
    ) -> None:
        self.alias = alias
        self.url = url
        self.key = key
        self.key_env = key_env
        self.client = httpx.Client(headers=headers)

    def post(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        with self._translated(timeout):
            response = self.client.post(self.url, json=payload, timeout=timeout)
        self._check(response)
        try:
            body = response.json()
        except ValueError:
            raise ProviderDown(
                self.alias,
                f"{self.url} answered {response.text[:120]!r}, not JSON; is it the right base_url?",
            ) from None
        if not isinstance(body, dict):
            raise ProviderDown(self.alias, f"{self.url} answered JSON that is not an object.")
        return body

    def events(self, payload: dict[str, Any], timeout: float) -> Iterator[tuple[str, Any]]:
        """``(event name or "", parsed data)`` for each Server-Sent Event of the answer;
        OpenAI's closing ``data: [DONE]`` comes as ``("", None)``."""
        with (
            self._translated(timeout),
            self.client.stream("POST", self.url, json=payload, timeout=timeout) as response,
        ):
            if response.status_code >= 400:
                response.read()
                self._check(response)
            for event, data in sse(response.iter_lines()):
                if data == "[DONE]":
                    yield "", None
                    return
                try:
                    yield event, json.loads(data)
                except ValueError:
                    raise ProviderDown(
                        self.alias, f"the stream carried {data[:120]!r}, which is not JSON."
                    ) from None

    def audio(self, payload: dict[str, Any], timeout: float) -> Iterator[bytes]:
        """The answer's body in chunks as it arrives (``/audio/speech``)."""
        with (
            self._translated(timeout),
            self.client.stream("POST", self.url, json=payload, timeout=timeout) as response,
        ):
            if response.status_code >= 400:
                response.read()
                self._check(response)
            yield from response.iter_bytes(64 * 1024)

    def post_form(
        self, data: dict[str, str], files: dict[str, tuple[str, bytes, str]], timeout: float
    ) -> dict[str, Any]:
        """A multipart POST (``/audio/transcriptions``); its JSON answer."""
        with self._translated(timeout):
            response = self.client.post(self.url, data=data, files=files, timeout=timeout)
        self._check(response)
        try:
            body = response.json()
        except ValueError:
            shown = response.text[:120]
            raise ProviderDown(self.alias, f"{self.url} answered {shown!r}, not JSON.") from None
        if not isinstance(body, dict):
            raise ProviderDown(self.alias, f"{self.url} answered JSON that is not an object.")
        return body

    @contextmanager
    def _translated(self, timeout: float) -> Iterator[None]:
        try:
            yield
        except httpx.TimeoutException as exc:
            raise ProviderTimeout(
                self.alias,
                f"no answer from {self.url} within {timeout:g} s ({type(exc).__name__})"
                ". Raise the timeout or check the server.",
                waiting=isinstance(exc, httpx.ReadTimeout),
            ) from None
        except httpx.TransportError as exc:
            raise ProviderTimeout(
                self.alias,
                f"could not reach {self.url} ({self._clean(str(exc))}). Is the "
                "server running, and is base_url right?",
            ) from None

    def _clean(self, text: str) -> str:
        return redact(text, [self.key])

    def _check(self, response: httpx.Response) -> None:
        status = response.status_code
        if status < 400:
            return
        detail = self._clean(error_message(response))
        if status == 429:
            raise RateLimited(
                self.alias, f"rate limited (429): {detail}", retry_after(response.headers)
            )
        if status in (401, 403):
            raise AuthError(
                self.alias,
                f"the key was refused ({status}): {detail}. Check the key in "
                f"${self.key_env or 'the api_key_env of models.yml'}.",
            )
        if status == 408:
            raise ProviderTimeout(self.alias, f"the server timed out (408): {detail}")
        if status >= 500:
            raise ProviderDown(
                self.alias,
                f"server error {status}: {detail}. The provider is failing; try "
                "later or add a fallback in models.yml.",
            )
        if any(mark in detail.lower() for mark in CONTEXT_MARKS):
            raise ContextTooLong(self.alias, f"request refused ({status}): {detail}")
        raise BadRequest(self.alias, f"request refused ({status}): {detail}")

    def close(self) -> None:
        self.client.close()


def error_message(response: httpx.Response) -> str:
    """The message of an error body: OpenAI ``{"error": {"message"}}``, Anthropic
    ``{"type": "error", "error": {"type", "message"}}``, Ollama ``{"error": "..."}``."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        kind = error.get("type") or error.get("code")
        message = str(error.get("message") or error)
        return f"{message} [{kind}]" if kind else message
    return str(error or body)[:300]


def retry_after(headers: httpx.Headers) -> float | None:
    """Seconds from ``retry-after-ms`` (OpenAI) or ``retry-after``; None if absent or a date."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            return max(0.0, float(headers[name]) / scale)
        except (KeyError, ValueError):
            continue
    return None


def sse(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """Server-Sent Events from text lines: ``(event, data)``, data lines joined by ``\\n``."""
    event, data = "", []
    for line in lines:
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "", []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line.startswith("event:"):
            event = line[6:].strip()
    if data:
        yield event, "\n".join(data)


def truncated(alias: str) -> ProviderTimeout:
    """A stream whose connection closed before the provider's end marker."""
    return ProviderTimeout(
        alias, "the stream ended before the answer did (the connection dropped); try again."
    )


def stream_error(alias: str, body: Any) -> ProviderError:
    """An error delivered inside a stream (Anthropic's ``event: error``; some OpenAI-compatible
    servers send ``{"error": ...}`` as a chunk)."""
    error = body.get("error") if isinstance(body, dict) else None
    kind = error.get("type", "") if isinstance(error, dict) else ""
    message = error.get("message", error) if isinstance(error, dict) else error
    if kind in ("overloaded_error", "api_error", "server_error"):
        return ProviderDown(alias, f"error in the stream: {message} [{kind}]")
    if kind == "rate_limit_error":
        return RateLimited(alias, f"error in the stream: {message} [{kind}]")
    return BadRequest(alias, f"error in the stream: {message} [{kind or 'error'}]")
