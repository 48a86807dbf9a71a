"""Secret redaction for anything Heron writes down: job events, logs, error messages,
stored chat turns, tool listings.

``redact`` masks secrets inside free text; ``redact_value`` walks JSON-like values and
also masks whole values stored under secret-sounding keys (``password``, ``api_key``,
``authorization`` ...). Both replace the secret with ``[REDACTED]`` and keep the
surrounding text, so a log line stays readable.

>>> redact("curl -H 'Authorization: Bearer abc.def' https://x")
"curl -H 'Authorization: Bearer [REDACTED]' https://x"
>>> redact_value({"token": "s3cret", "note": "key sk-abcdefghijklmnopqrstu"})
{'token': '[REDACTED]', 'note': 'key [REDACTED]'}

What counts as a secret value after a secret label (``password``, ``api key``,
``GITHUB_TOKEN``, ``X-Api-Key``, ``SESSION_COOKIE`` ...; the label must *end* with the
word, so ``max_tokens`` and ``tokenizer`` are not labels):

- a quoted value, whole, spaces and all: ``password: "correct horse battery staple"``;
  a quote the text never closes is masked to the end of its line;
- after ``:`` (YAML, headers, prose), the rest of the line: ``api key: abc def``;
- after ``=`` or a space (``--password xyz``, ``TOKEN=abc``), one shell word; cookies
  (``Cookie:``, ``*_COOKIE=``) to the end of the line, as their values hold ``;``;
- credentials in URLs: ``user:pass@host`` and query values such as ``?api_key=``,
  ``&token=``, ``?sig=``, ``&key=``;
- tokens of known shapes, bare: OpenAI/Anthropic ``sk-``, GitHub ``ghp_``, AWS ``AKIA``,
  Slack ``xoxb-``, Google ``AIza``, JWTs, Hugging Face ``hf_``, GitLab ``glpat-``,
  Stripe ``sk_live_``/``rk_live_``, npm ``npm_``, PyPI ``pypi-AgE``, Heron's own
  ``hk_`` keys (``heron keys create``); and webhook URLs
  whose path is the credential (``hooks.slack.com/services/...``,
  ``discord.com/api/webhooks/...``, ``api.telegram.org/bot<token>``), their host kept;
- a PEM private key from ``BEGIN`` to ``END``; one cut off at either end (output cut to
  a size limit) is masked from ``BEGIN`` to the end of the text, or from the start of the
  text to ``END``.

Values that are code, not secrets, are left alone: a call (``token = next(tokens)``), a
type (``password: str``), a placeholder (``${TOKEN}``).

**Redact before cutting.** A secret cut in half no longer matches its pattern, so text
must be redacted whole and only then cut to a size: ``redact_then_cut`` does both.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any, Literal

MASK = "[REDACTED]"

_SECRET_WORDS = (
    r"pass(?:word|wd|phrase)?|pwd|secret|token|api[ _-]?key|apikey|access[ _-]?key"
    r"|secret[ _-]?key|private[ _-]?key|client[ _-]?secret|credentials?|cookie"
)
#: Keys whose whole value is a secret, whatever it looks like.
SECRET_KEY = re.compile(rf"(?i)(?:^|[\s_-])(?:{_SECRET_WORDS}|auth|authorization)$")

# A label ends with its secret word: ``DB_PASSWORD``, ``x-api-key``, ``--token``, but not
# ``max_tokens``, ``tokenizer`` or ``--token-file``.
# The scan looks for the word, then for a value after it (``_labelled``): a pattern that
# began with the label's prefix (``\b[\w-]*password``) would be tried again from each word
# boundary of a long run like ``a-a-a-...``, in quadratic time.
_LABEL_WORD = re.compile(rf"(?i)(?:{_SECRET_WORDS})(?![\w-])")
#: The longest label prefix looked at for a leading ``--`` (a command-line flag).
_LABEL_MAX = 64
#: Values after a label that are code or placeholders, not secrets.
_NOT_SECRET = (
    r"(?!\\?[\"'])(?!\[REDACTED\])"
    r"(?!(?:str|bytes|int|bool|None|null|true|false|Any|SecretStr|Optional)\b)"
    r"(?!\$\{?\w{1,64}\}?(?:[\s\"',;&)]|$))"
)
_WORD = r"[^\s\"',;&()\[\]{}<>]+"
#: A value that is a call (``next(tokens)``) is code. Bounded: see ``_LABEL_WORD``.
_CALL = r"[^\s\"',;&()\[\]{}<>]{1,64}\("

_PEM_WORDS = r"[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?"
#: A private key block; a block whose END was cut off runs to the end of the text.
_PEM = re.compile(rf"-----BEGIN {_PEM_WORDS}-----[\s\S]*?(?:-----END {_PEM_WORDS}-----|\Z)")
#: An END whose BEGIN was cut off: the key's body is everything before it.
_PEM_TAIL = re.compile(rf"\A[\s\S]*?-----END {_PEM_WORDS}-----")

_SEP = r"[ \t]*[:=][ \t]*"
#: What follows a secret word when it labels a value, tried right after the word: one
#: branch per form of value, the value last in each.
_VALUE = re.compile(
    rf"(?im)(?P<quote>\\?[\"'])?(?:"
    # Cookies hold '; ' and '=': Cookie: a=b; c=d, SESSION_COOKIE=..., to the end of line
    rf"(?P<s0>(?<=cookie){_SEP})(?!\\?[\"'])(?P<v0>\S[^\n]*)"
    # Quoted values, whole: password: "a b c", 'secret' = 'x y', {"token": "..."}; JSON
    # in a string escapes its quotes; an unclosed quote runs to the end of the line
    rf'|(?P<s1>{_SEP}\\")(?P<v1>(?:(?!\\").)+)'
    rf'|(?P<s2>{_SEP}")(?P<v2>(?=[^"\n])[^"\\\n]*(?:\\.[^"\\\n]*)*)'
    rf"|(?P<s3>{_SEP}')(?P<v3>(?=[^'\n])[^'\\\n]*(?:\\.[^'\\\n]*)*)"
    # After a colon, the rest of the line: "api key: abc def", "password: two words";
    # inside a JSON string, up to its end (an escaped newline or quote, or a quote before
    # ',', '}' or ']'); ``_colon_value`` trims what closes the line
    rf"|(?P<s4>[ \t]*:[ \t]*){_NOT_SECRET}(?!{_CALL})"
    rf"(?P<v4>[^\s\"'{{\[](?:[^\n\"\\]+|\\(?![nr\"])|\"(?![ \t]*(?:[,}}\]]|$)))*)"
    # After '=' (TOKEN=abc), or after a space for a --flag (--password xyz): one word
    rf"|(?P<s5>[ \t]*=[ \t]*){_NOT_SECRET}(?!=)(?!{_CALL})(?P<v5>{_WORD})"
    rf"|(?P<s6>[ \t]+){_NOT_SECRET}(?!-)(?P<v6>{_WORD})"
    ")"
)
_SEPARATORS = ("s0", "s1", "s2", "s3", "s4", "s5", "s6")


# Each pattern's first group, when present, is kept: it is the label, not the secret.
_PATTERNS = [
    # Authorization: Bearer xxx / Basic xxx / Token xxx (headers, curl -H, logs)
    re.compile(
        r"(?i)(\b(?:proxy-)?authorization\s*[:=]\s*[\"']?(?:bearer|basic|token|digest)?\s*)"
        # Neither the secret masked already nor its scheme before the mask: idempotent.
        r"(?!\[REDACTED|(?:bearer|basic|token|digest)\s+\[REDACTED)[^\s\"',;]+"
    ),
    re.compile(r"(?i)(\bbearer\s+)(?!\[REDACTED)[A-Za-z0-9\-._~+/]{8,}=*"),
    # user:password@ in URLs
    # (no user name: https://:pw@host)
    re.compile(
        r"(?i)(\b[a-z][a-z0-9+.-]{0,31}://[^\s:/@]{0,256}:)(?!\[REDACTED)[^\s@/]{1,256}(?=@)"
    ),
    # ?api_key=..., &token=..., ?sig=..., &X-Amz-Signature=..., ?key=... in URLs
    re.compile(
        r"(?i)([?&;](?:[\w.-]{0,64}[_-])?(?:sig|signature|key|apikey|token|secret|password|passwd"
        r"|pwd|auth|credential|code)=)(?!\[REDACTED)[^&#\s\"'<>]+"
    ),
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
    # Hugging Face tokens: hf_ and 34 letters. The body has no '_', so identifiers such
    # as hf_hub_download never match.
    re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"),
    # GitLab tokens: personal (glpat-), deploy (gldt-), runner (glrt-), trigger (glptt-);
    # newer ones end in .01.xxxxxxxxx
    re.compile(r"\bgl(?:pat|dt|rt|ptt)-[A-Za-z0-9_-]{20,}(?:\.[0-9a-z]{2}\.[0-9a-z]{6,})?"),
    # Stripe secret and restricted keys, live and test
    re.compile(r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    # npm access tokens: npm_ and 36 letters and digits (npm_config_* has underscores)
    re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"),
    # PyPI API tokens: a macaroon, whose base64 always starts AgE
    re.compile(r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    # Heron's own API keys (heron.keys): hk_ and 43 base64url characters, 256 random bits.
    # Exactly 43, one of them a capital or a digit: the 11 characters `heron keys list`
    # shows stay readable, and so does an identifier such as hk_register_the_handlers.
    re.compile(
        r"(?<![A-Za-z0-9_-])hk_(?=[A-Za-z0-9_-]{0,42}[A-Z0-9])[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])"
    ),
    # Webhook URLs whose path is the credential: Slack, Discord; a Telegram bot's token
    re.compile(r"(?i)(\bhooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9_/-]+"),
    re.compile(r"(?i)(\bdiscord(?:app)?\.com/api/webhooks/)[0-9]+/[A-Za-z0-9_-]+"),
    re.compile(r"(?i)(\bapi\.telegram\.org/(?:file/)?bot)[0-9]+:[A-Za-z0-9_-]+"),
]


def _mask(match: re.Match[str]) -> str:
    label = match.group(1) if match.re.groups else ""
    return f"{label}{MASK}"


def _colon_value(rest: str) -> int:
    """How much of ``rest`` (what ``_VALUE`` took after ``password:``, up to the line's
    end or the end of the JSON string it sits in) is the secret: all but its trailing
    closers (``",`` or ``}]``). Plain string scanning: a lazy regex with a look-ahead to
    the line's end would take quadratic time on a long line."""
    end = len(rest.rstrip(" \t"))
    if end and rest[end - 1] in ",;":
        end -= 1
    while end and rest[end - 1] in "}]":
        end -= 1
    end = len(rest[:end].rstrip(" \t"))
    if end > 1 and rest[end - 1] in "\"'":
        end -= 1
    return max(end, 1)


def _is_flag(text: str, word_start: int) -> bool:
    """Whether the label ending at ``word_start`` is a ``--flag``: its run of word
    characters and dashes (at most ``_LABEL_MAX`` back) starts with ``--``."""
    begin = word_start
    while begin > max(0, word_start - _LABEL_MAX) and (
        text[begin - 1].isalnum() or text[begin - 1] in "_-"
    ):
        begin -= 1
    return text.startswith("--", begin)


def _labelled(text: str) -> str:
    """``text`` with the value after each secret label masked (see the module docstring)."""
    out: list[str] = []
    done = pos = 0
    while hit := _LABEL_WORD.search(text, pos):
        pos = hit.end()
        value = _VALUE.match(text, pos)
        if value is None:
            continue
        sep = next(n for n in _SEPARATORS if value.group(n) is not None)
        if sep == "s6" and not _is_flag(text, hit.start()):
            continue  # "token abc" is prose; "--token abc" is a flag and its value
        start, end = value.span(f"v{sep[1]}")
        if sep == "s4":
            end = start + _colon_value(text[start:end])
        if MASK in text[start:end]:
            continue  # redacted already ("Bearer [REDACTED]"): redacting twice changes nothing
        out += [text[done:start], MASK]
        done = pos = end
    return "".join(out) + text[done:] if out else text


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every secret it contains replaced by ``[REDACTED]``: the ``secrets``
    given (say, the API key a request was sent with) and anything shaped like one."""
    for secret in secrets:
        if secret and len(secret) >= 4:  # a shorter "secret" would mask ordinary words
            text = text.replace(secret, MASK)
    # Keys first: their base64 body must not be half-matched by the patterns below.
    text = _PEM_TAIL.sub(MASK, _PEM.sub(MASK, text))
    text = _labelled(text)
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


def redact_then_cut(
    data: str | bytes, limit: int, *, keep: Literal["head", "tail"] = "head"
) -> str:
    """``data`` (bytes are read as UTF-8) redacted whole, then cut to at most ``limit``
    UTF-8 bytes, keeping its ``head`` or its ``tail``; never half a character.

    This is the order that holds: a key cut first would lose the line that marks it.

    >>> redact_then_cut("token=abc " + "x" * 20, 12)
    'token=[REDAC'
    >>> redact_then_cut(b"ok\\npassword: two words", 14, keep="tail")
    'rd: [REDACTED]'
    """
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    raw = redact(text).encode("utf-8")
    if len(raw) <= limit:
        return raw.decode("utf-8")
    cut = raw[:limit] if keep == "head" else raw[len(raw) - limit :]
    return cut.decode("utf-8", "ignore")


_STANDARD_FIELDS = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record: its formatted message, the text of its
    exception (cached in ``exc_text``, which ``logging.Formatter`` prints instead of
    formatting again) and its string ``extra`` fields. Put it on a handler to cover every
    logger that writes through it.

    >>> logging.getLogger("heron").addFilter(RedactingFilter())  # doctest: +SKIP
    """

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        for name, value in list(vars(record).items()):
            if name not in _STANDARD_FIELDS and isinstance(value, str):
                setattr(record, name, redact(value))
        return True
