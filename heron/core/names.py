"""Provider-safe tool names: each provider's rules as data, and a reversible codec.

MCP tool names such as ``osis.contact.list`` are refused by OpenAI and Anthropic (no
dots), names over 64 characters by OpenAI and Gemini, and duplicates by everyone.
``NameCodec`` turns a set of names into names valid for one profile, unique, and the
same every time for the same set, and maps a model's call back:

>>> codec = NameCodec(["osis.contact.list", "osis_contact_list"], OPENAI)
>>> codec.encode("osis.contact.list")
'osis_contact_list_b9660c13'
>>> codec.decode("osis_contact_list_b9660c13")
'osis.contact.list'

Rules: a name already valid keeps itself. Otherwise every character the profile does
not allow becomes ``_`` (and a prefix fixes a bad first character); when that loses
nothing but the characters and collides with no other name, it is the encoding.
On a collision or a cut to the length limit, the name keeps room for ``_`` plus the
first 8 hex digits of the SHA-256 of the *original* name, which makes it unique and
stable; the rare hash collision lengthens the digest.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from heron.core.errors import ToolInputError, UnknownTool

__all__ = [
    "ANTHROPIC",
    "GEMINI",
    "HASH_DIGITS",
    "OPENAI",
    "PROFILES",
    "STRICT",
    "NameCodec",
    "NameProfile",
    "get_profile",
    "sanitise",
]

HASH_DIGITS = 8


@dataclass(frozen=True)
class NameProfile:
    """What one provider accepts: a name ``pattern`` (full match), the characters
    allowed after the first (``chars``, a regex class body), the first character
    (``first``), ``max_len`` and ``max_tools`` (``None``: no documented limit)."""

    name: str
    chars: str
    first: str
    max_len: int
    max_tools: int | None

    @property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(rf"^[{self.first}][{self.chars}]{{0,{self.max_len - 1}}}$")

    def valid(self, name: str) -> bool:
        return bool(self.pattern.match(name))


#: OpenAI function names: ``^[a-zA-Z0-9_-]{1,64}$``; at most 128 tools per request.
OPENAI = NameProfile("openai", "a-zA-Z0-9_-", "a-zA-Z0-9_-", 64, 128)
#: Anthropic tool names: ``^[a-zA-Z0-9_-]{1,128}$``; no documented tool-count limit.
ANTHROPIC = NameProfile("anthropic", "a-zA-Z0-9_-", "a-zA-Z0-9_-", 128, None)
#: Gemini function declarations: start with a letter or underscore, then a-z A-Z 0-9 _ . -,
#: 64 at most. Some SDK docs also allow ``:``; the API's own error message does not, so
#: neither do we. Tool count: 128 assumed (no limit found in the docs).
GEMINI = NameProfile("gemini", "a-zA-Z0-9_.-", "a-zA-Z_", 64, 128)
#: Valid for every provider above at once: a letter, then letters, digits, underscores.
STRICT = NameProfile("strict", "a-zA-Z0-9_", "a-zA-Z", 64, 128)

PROFILES: dict[str, NameProfile] = {p.name: p for p in (OPENAI, ANTHROPIC, GEMINI, STRICT)}


def get_profile(name: str | NameProfile) -> NameProfile:
    if isinstance(name, NameProfile):
        return name
    try:
        return PROFILES[name]
    except KeyError:
        raise ToolInputError(
            f"Unknown provider profile {name!r}. Choose from: {', '.join(PROFILES)}."
        ) from None


def _digest(name: str, digits: int) -> str:
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:digits]


def sanitise(name: str, profile: NameProfile) -> str:
    """Disallowed characters become ``_``; a bad first character gets a ``t`` before it.

    >>> sanitise("osis.contact.list", OPENAI)
    'osis_contact_list'
    """
    body = re.sub(rf"[^{profile.chars}]", "_", name) or "tool"
    if not re.match(rf"[{profile.first}]", body[0]):
        body = "t" + body
    return body


def _with_digest(base: str, original: str, profile: NameProfile, digits: int) -> str:
    return f"{base[: profile.max_len - digits - 1]}_{_digest(original, digits)}"


class NameCodec:
    """Encodings of ``names`` for ``profile``; see the module docstring for the rules."""

    def __init__(self, names: Iterable[str], profile: str | NameProfile = "strict") -> None:
        self.profile = get_profile(profile)
        originals = sorted(set(names))
        for name in originals:
            if not isinstance(name, str) or not name:
                raise ToolInputError(f"Tool names must be non-empty strings, got {name!r}.")
        self._encoded = self._encode_all(originals)
        self._decoded = {enc: name for name, enc in self._encoded.items()}

    def _encode_all(self, originals: list[str]) -> dict[str, str]:
        profile = self.profile
        kept = {n for n in originals if profile.valid(n)}
        bases = {n: sanitise(n, profile) for n in originals if n not in kept}
        counts = Counter(bases.values())
        encoded: dict[str, str] = {n: n for n in kept}
        for name, base in bases.items():
            clean = len(base) <= profile.max_len and counts[base] == 1 and base not in kept
            encoded[name] = base if clean else _with_digest(base, name, profile, HASH_DIGITS)
        digits = HASH_DIGITS
        while len(set(encoded.values())) < len(encoded):
            # A digest collided with another name: lengthen the digests of the changed names
            # in the clash (valid names never change), deterministically.
            digits += 4
            clash = {e for e, c in Counter(encoded.values()).items() if c > 1}
            for name in sorted(bases):
                if encoded[name] in clash:
                    encoded[name] = _with_digest(bases[name], name, profile, digits)
        return encoded

    def encode(self, name: str) -> str:
        try:
            return self._encoded[name]
        except KeyError:
            raise UnknownTool(
                f"Tool {name!r} is not among the {len(self._encoded)} names of this codec; "
                "build the codec with every tool you offer."
            ) from None

    def decode(self, encoded: str) -> str:
        """The original name of a name the model called; ``UnknownTool`` if none."""
        try:
            return self._decoded[encoded]
        except KeyError:
            raise UnknownTool(
                f"The model called {encoded!r}, which is not one of the {len(self._decoded)} "
                "tools offered; answer it with an error so it picks an offered tool."
            ) from None

    def mapping(self) -> dict[str, str]:
        """Original name -> encoded name."""
        return dict(self._encoded)
