"""Voice: the spoken variant of a critical intervention rendered to a WAV file.

Two backends, one method (``render(text, name) -> Path``), both writing into one folder
(``$HERON_HOME/interventions/audio/``) that the server serves at
``/interventions/audio/{file}``:

- ``EspeakVoice``: a local program, espeak-ng (Debian's ``espeak-ng``). The text goes on
  its standard input, never on its command line, so no text can become an option; it
  runs in the minimal program environment (``heron.programs``) with a timeout.
- ``SpeechVoice``: any OpenAI-compatible ``POST {base}/v1/audio/speech`` (a broker, a
  local TTS server), asked for ``wav``.

A failure (the program missing, a timeout, an error answer) is a ``VoiceError``; the
service records it as the voice delivery's outcome and the card goes out without audio.
Files are written under a temporary name and renamed, so a reader never sees half a
file.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Protocol

import httpx

from heron.errors import HeronError
from heron.private import private_dir
from heron.programs import program_environment
from heron.redact import redact

#: What an audio file may be called: what ``audio_name`` makes, and all the server serves.
AUDIO_NAME = re.compile(r"^[0-9]{1,20}\.wav$")


class VoiceError(HeronError):
    """The spoken variant could not be rendered; says why and what to set."""


def audio_name(intervention_id: int) -> str:
    return f"{intervention_id}.wav"


class Voice(Protocol):
    folder: Path

    def render(self, text: str, name: str) -> Path:
        """``text`` spoken, as ``folder / name``. ``VoiceError`` when it cannot be."""
        ...


def _write(folder: Path, name: str, data: bytes) -> Path:
    private_dir(folder)
    target = folder / name
    partial = folder / f".{name}.part"
    partial.write_bytes(data)
    os.replace(partial, target)
    return target


class EspeakVoice:
    """espeak-ng (or a program taking its options: ``--stdin``, ``--stdout``)."""

    def __init__(self, folder: Path, program: str = "espeak-ng", *, timeout: float = 10.0) -> None:
        self.folder = folder
        self.program = program
        self.timeout = timeout

    def render(self, text: str, name: str) -> Path:
        found = shutil.which(self.program)
        if found is None:
            raise VoiceError(
                f"The text-to-speech program {self.program!r} is not installed: install it "
                "(apt-get install espeak-ng), set HERON_INTERVENTIONS_TTS_PROGRAM to one that "
                "is, or HERON_INTERVENTIONS_TTS_URL to a speech server."
            )
        try:
            done = subprocess.run(
                [found, "--stdin", "--stdout"],
                input=text.encode("utf-8"),
                capture_output=True,
                timeout=self.timeout,
                env=program_environment(),
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise VoiceError(f"{self.program} took over {self.timeout:g} s to speak.") from exc
        except OSError as exc:
            raise VoiceError(f"{self.program} could not be run: {exc.strerror}.") from exc
        if done.returncode != 0 or not done.stdout.startswith(b"RIFF"):
            error = redact(done.stderr.decode("utf-8", "replace").strip()[:300])
            raise VoiceError(f"{self.program} failed (exit {done.returncode}): {error}")
        return _write(self.folder, name, done.stdout)


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
        try:
            answer = httpx.post(self.url, json=body, headers=self.headers, timeout=self.timeout)
        except httpx.HTTPError as exc:
            raise VoiceError(
                f"The speech server {self.url} could not be reached ({type(exc).__name__}); "
                "check HERON_INTERVENTIONS_TTS_URL."
            ) from exc
        if answer.status_code != 200 or not answer.content:
            raise VoiceError(
                f"The speech server {self.url} answered {answer.status_code}: "
                f"{redact(answer.text[:300])}"
            )
        return _write(self.folder, name, answer.content)
