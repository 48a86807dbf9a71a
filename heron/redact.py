"""Secret redaction for anything Heron writes down: job events, logs, error messages.

``redact`` masks secrets inside free text; ``redact_value`` walks JSON-like values and
also masks whole values stored under secret-sounding keys (``password``, ``api_key``,
``authorization`` ...). Both replace the secret with ``[REDACTED]`` and keep the
surrounding text, so a log line stays readable.

>>> redact("curl -H 'Authorization: Bearer abc.def' https://x")
"curl -H 'Authorization: Bearer [REDACTED]' https://x"
>>> redact_value({"token": "s3cret", "note": "key sk-abcdefghijklmnopqrstu"})
{'token': '[REDACTED]', 'note': 'key [REDACTED]'}
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any

MASK = "[REDACTED]"

_SECRET_WORDS = (
    r"pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key"
    r"|private[_-]?key|client[_-]?secret|credentials?"
)
#: Keys whose whole value is a secret, whatever it looks like.
SECRET_KEY = re.compile(rf"(?i)(?:^|[_-])(?:{_SECRET_WORDS}|auth|authorization|cookie)$")

# Each pattern's first group, when present, is kept: it is the label, not the secret.
_PATTERNS = [
    # Authorization: Bearer xxx / Basic xxx / Token xxx (headers, curl -H, logs)
    re.compile(
        r"(?i)(\bauthorization\s*[:=]\s*[\"']?(?:bearer|basic|token|digest)?\s*)[^\s\"',;]+"
    ),
    re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]{8,}=*"),
    # password=..., "api_key": "...", TOKEN: ...
    re.compile(
        rf"(?i)(\b[\w-]*(?:{_SECRET_WORDS})[\w-]*[\"']?\s*[:=]\s*[\"']?)(?!\[REDACTED)[^\s\"',;&]+"
    ),
    # user:password@ in URLs
    re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(?=@)"),
    # OpenAI / Anthropic style keys: sk-..., sk-proj-..., sk-ant-...
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),
    # GitHub tokens: ghp_, gho_, ghu_, ghs_, ghr_, and fine-grained github_pat_
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"),
    # AWS access key ids
    re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
    # Slack tokens
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    # Google API keys
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"),
    # JSON Web Tokens: header.payload.signature, header and payload base64url JSON
    re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+"),
    # PEM private key blocks
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----", re.M),
]


def _mask(match: re.Match[str]) -> str:
    label = match.group(1) if match.re.groups else ""
    return f"{label}{MASK}"


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every secret it contains replaced by ``[REDACTED]``: the ``secrets``
    given (say, the API key a request was sent with) and anything shaped like one."""
    for secret in secrets:
        if secret and len(secret) >= 4:  # a shorter "secret" would mask ordinary words
            text = text.replace(secret, MASK)
    for pattern in _PATTERNS:
        text = pattern.sub(_mask, text)
    return text


def redact_value(value: Any, key: str = "") -> Any:
    """A copy of a JSON-like ``value`` with secrets masked: strings are ``redact``-ed and
    any non-empty value under a secret-sounding key is replaced whole."""
    if key and SECRET_KEY.search(key) and value not in (None, "", [], {}):
        return MASK
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's formatted message.

    >>> logging.getLogger("heron").addFilter(RedactingFilter())  # doctest: +SKIP
    """

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage())
        record.args = None
        return True
