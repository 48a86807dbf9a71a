"""Voice: the spoken variant of a critical intervention rendered to a WAV file.

Two backends, one method (``render(text, name) -> Path``), both writing into one folder
(``$HERON_HOME/interventions/audio/``) that the server serves at
``/interventions/audio/{file}``:

- ``EspeakVoice``: a local program, espeak-ng (Debian's ``espeak-ng``). The text goes on
  its standard input, never on its command line, so no text can become an option; it
  runs in the minimal program environment (``heron.programs.output_of``) with a timeout.
- ``SpeakingVoice``: any ``speak(text)`` giving WAV audio; ``heron serve`` passes the
  broker's (``/v1/audio/speech``, ``heron.llm.speech``).
- ``SpeechVoice``: any OpenAI-compatible ``POST {base}/v1/audio/speech`` (a broker, a
  local TTS server), asked for ``wav``.

A failure (the program missing, a timeout, an error answer, audio past
``MAX_AUDIO_BYTES``) is a ``VoiceError``; the service records it as the voice delivery's
outcome and the card goes out without audio. Audio is written as it comes, under a
temporary name, counted while written (never held whole in memory, never past the cap),
and renamed when complete, so a reader never sees half a file. ``prune_audio`` keeps the
folder to a count and an age.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

import httpx

from heron.errors import HeronError
from heron.private import private_dir
from heron.programs.output import output_of
from heron.redact import redact

#: What an audio file may be called: what ``audio_name`` makes, and all the server serves.
AUDIO_NAME = re.compile(r"^[0-9]{1,20}\.wav$")
#: The most bytes one spoken intervention may take: about 45 s of 24 kHz 16-bit mono,
#: well over what ``templates.MAX_SPOKEN`` characters need.
MAX_AUDIO_BYTES = 4 * 1024 * 1024
CHUNK = 64 * 1024


class VoiceError(HeronError):
    """The spoken variant could not be rendered; says why and what to set."""


def audio_name(intervention_id: int) -> str:
    return f"{intervention_id}.wav"


class Voice(Protocol):
    folder: Path

    def render(self, text: str, name: str) -> Path:
        """``text`` spoken, as ``folder / name``. ``VoiceError`` when it cannot be."""
        ...


def _write(folder: Path, name: str, chunks: Iterable[bytes], what: str) -> Path:
    """``chunks`` as ``folder / name``, written as they come and refused (the partial file
    removed) past ``MAX_AUDIO_BYTES``."""
    private_dir(folder)
    target = folder / name
    partial = folder / f".{name}.part"
    size = 0
    try:
        with partial.open("wb") as out:
            for chunk in chunks:
                size += len(chunk)
                if size > MAX_AUDIO_BYTES:
                    raise VoiceError(
                        f"{what} sent over {MAX_AUDIO_BYTES // 1024 // 1024} MiB of audio; "
                        "the card goes out without it."
                    )
                out.write(chunk)
        if size == 0:
            raise VoiceError(f"{what} sent no audio.")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def prune_audio(folder: Path, keep: int, *, max_age: float) -> int:
    """Remove the folder's audio files older than ``max_age`` seconds, and all but the
    newest ``keep``; returns how many went. Only files named as ``audio_name`` makes."""
    try:
        found = [(p.stat().st_mtime, p) for p in folder.iterdir() if AUDIO_NAME.match(p.name)]
    except FileNotFoundError:
        return 0
    found.sort(reverse=True)
    oldest = time.time() - max_age
    removed = 0
    for n, (mtime, path) in enumerate(found):
        if n >= keep or mtime < oldest:
            path.unlink(missing_ok=True)
            removed += 1
    return removed


class EspeakVoice:
    """espeak-ng (or a program taking its options: ``--stdin``, ``--stdout``), run by
    ``heron.programs.output_of``: read as it is written and killed past the timeout, so
    neither a long text nor a program that never stops can fill the memory or the disk."""

    def __init__(self, folder: Path, program: str = "espeak-ng", *, timeout: float = 10.0) -> None:
        self.folder = folder
        self.program = program
        self.timeout = timeout

    def render(self, text: str, name: str) -> Path:
        return SpeakingVoice(self.folder, self._spoken, self.program).render(text, name)

    def _spoken(self, text: str) -> Iterable[bytes]:
        return output_of(
            self.program,
            ["--stdin", "--stdout"],
            text.encode("utf-8"),
            timeout=self.timeout,
            missing=": install it (apt-get install espeak-ng), set "
            "HERON_INTERVENTIONS_TTS_PROGRAM to one that is, or HERON_INTERVENTIONS_TTS_URL "
            "to a speech server",
            doing="speak",
        )


class SpeakingVoice:
    """Whatever ``speak(text)`` yields (WAV audio in chunks), written to the folder: how
    ``heron serve``'s cards speak through the broker's speech model
    (``heron.llm.speech``), which this package does not import. Its failures (a
    ``HeronError``) are the voice's ``VoiceError``."""

    def __init__(self, folder: Path, speak: Callable[[str], Iterable[bytes]], what: str) -> None:
        self.folder = folder
        self.speak = speak
        self.what = what

    def render(self, text: str, name: str) -> Path:
        try:
            return _write(self.folder, name, _checked(self.speak(text)), self.what)
        except VoiceError:
            raise
        except HeronError as exc:
            raise VoiceError(str(exc)) from None


def _checked(chunks: Iterable[bytes]) -> Iterable[bytes]:
    """``chunks``, refused unless the first starts a WAV file (``RIFF``)."""
    first = True
    for chunk in chunks:
        if first and not chunk.startswith(b"RIFF"):
            raise VoiceError("the answer is not WAV audio")
        first = False
        yield chunk


class SpeechVoice:
    """An OpenAI-compatible ``/v1/audio/speech`` at ``base_url``."""

    def __init__(
        self,
        folder: Path,
        base_url: str,
        *,
        model: str = "tts-1",
        voice: str = "alloy",
        api_key: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.folder = folder
        self.url = base_url.rstrip("/").removesuffix("/v1") + "/v1/audio/speech"
        self.model = model
        self.voice = voice
        self.headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = timeout

    def render(self, text: str, name: str) -> Path:
        body = {"model": self.model, "voice": self.voice, "input": text, "response_format": "wav"}
        what = f"The speech server {self.url}"
        try:
            with httpx.stream(
                "POST", self.url, json=body, headers=self.headers, timeout=self.timeout
            ) as answer:
                if answer.status_code != 200:
                    detail = redact(answer.read()[:300].decode("utf-8", "replace"))
                    raise VoiceError(f"{what} answered {answer.status_code}: {detail}")
                return _write(self.folder, name, answer.iter_bytes(CHUNK), what)
        except httpx.HTTPError as exc:
            raise VoiceError(
                f"{what} could not be reached ({type(exc).__name__}); "
                "check HERON_INTERVENTIONS_TTS_URL."
            ) from exc
