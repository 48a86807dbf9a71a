"""A Portuguese or Spanish question read in English too: Apertium's machine translation.

A question over pages in another language meets them through the multilingual model
alone: no word of it is a word of the pages, and its cosines to every page lie close
together, so a page that is near everything wins by a hair (docs/benchmarks.md,
"People"). Its English reading gives the lexical side words to match and the English
model a sentence to read. Apertium (rule-based, Debian's ``apertium`` with its language
pairs ``apertium-eng-spa`` and ``apertium-es-pt``) translates a question in about 0.1 s
per pair on one core, needs no model download and no network; Spanish goes to English
directly, Portuguese through Spanish (Debian ships no Portuguese-English pair). Its
English is rough ("Which is the schedule of the technical support?") and that is enough:
the reading is searched beside the question, never instead of it
(``heron.libraries.search.across``).

Without Apertium, or for a language it has no pair for, ``to_english`` says ``None`` and
the question is searched as it is; ``heron doctor`` says which languages are read.

>>> to_english("¿Cuál es el horario del soporte técnico?", "es")  # doctest: +SKIP
'Which is the schedule of the technical support?'
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import time
from functools import cache, lru_cache

log = logging.getLogger(__name__)

APERTIUM = "apertium"
#: The modes (Apertium's translation pipelines) that take each language to English, in
#: turn. ``-u``: an unknown word is passed on as it is, unmarked.
ROUTES: dict[str, tuple[str, ...]] = {"es": ("spa-eng",), "pt": ("pt-es", "spa-eng")}
#: What Debian packages each language's modes: named in ``heron doctor``'s fix.
PACKAGES = ("apertium", "apertium-eng-spa", "apertium-es-pt")
#: Seconds one mode may take: a question takes about 0.1 s; a hung one is given up on.
TIMEOUT = 5.0
#: Characters of a text translated: a question, not a document.
MAX_CHARS = 1_000
#: Seconds no question is translated after Apertium failed: a hung one would otherwise
#: make every Portuguese or Spanish search wait out its timeouts.
PAUSE = 60.0
#: Apertium's marks for a word it could not generate (``#``) or transfer (``@``).
_MARKS = re.compile(r"[#@](?=\w)")


@cache
def modes() -> frozenset[str]:
    """The Apertium modes installed here (``apertium -l``); empty without Apertium."""
    program = shutil.which(APERTIUM)
    if program is None:
        return frozenset()
    try:
        listed = subprocess.run(
            [program, "-l"], capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("cannot list Apertium's language pairs (%s); questions are not translated", exc)
        return frozenset()
    return frozenset(listed.stdout.split())


def languages() -> tuple[str, ...]:
    """The languages whose questions are read in English here."""
    installed = modes()
    return tuple(code for code, route in ROUTES.items() if set(route) <= installed)


def to_english(text: str, language: str) -> str | None:
    """``text`` (written in ``language``, an ISO 639-1 code) in English, or ``None``:
    no route for the language, Apertium missing, failing (logged; then no question is
    translated for ``PAUSE`` seconds) or reading nothing."""
    global _failed_at
    if language not in languages() or time.monotonic() - _failed_at < PAUSE:
        return None
    try:
        return _translated(" ".join(text[:MAX_CHARS].split()), language) or None
    except (OSError, subprocess.SubprocessError) as exc:
        _failed_at = time.monotonic()
        log.warning(
            "Apertium failed (%s); questions are searched as written for %.0f s", exc, PAUSE
        )
        return None


_failed_at = -PAUSE


@lru_cache(maxsize=1024)
def _translated(text: str, language: str) -> str:
    """``text`` through ``language``'s route. Cached: a question is searched once per
    turn, and again when a turn is retried; a failure raises, so it is not cached."""
    for mode in ROUTES[language]:
        text = _MARKS.sub("", " ".join(_run(mode, text).split()))
    return text


def _run(mode: str, text: str) -> str:
    """``text`` through one Apertium mode; raises ``SubprocessError`` when it fails."""
    done = subprocess.run(
        [shutil.which(APERTIUM) or APERTIUM, "-u", mode],
        input=text,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise subprocess.SubprocessError(f"{mode}: {reason}")
    return done.stdout
