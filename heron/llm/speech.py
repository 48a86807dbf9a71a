"""Speech through the broker: text to audio (``/v1/audio/speech``) and audio to text
(``/v1/audio/transcriptions``), for every service of the platform and for the spoken
interventions of ``heron serve``.

A models.yml alias with ``mode: audio_speech`` or ``mode: audio_transcription`` (LiteLLM's
``model_info.mode``) is a speech model, never a chat one:

- ``provider: espeak`` (speech only): espeak-ng on this machine (``model``: the program,
  default ``espeak-ng``; ``voice``: one of its voices, ``en``, ``pt``...), WAV only, run
  by ``heron.programs.output_of`` (the text on its standard input, a timeout);
- ``provider: openai``: any OpenAI-compatible ``{base_url}/audio/speech`` or
  ``{base_url}/audio/transcriptions`` (OpenAI's ``tts-1``/``whisper-1``, a LiteLLM proxy,
  a local server), with the alias's key(s).

Without a speech alias the broker speaks with espeak-ng (``HERON_INTERVENTIONS_TTS_PROGRAM``);
without a transcription alias, transcription is refused, naming what to add.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from heron.errors import ConfigError, InputError
from heron.llm.config import ModelSpec
from heron.llm.http import HTTPModel
from heron.programs.output import output_of

SPEECH, TRANSCRIPTION = "audio_speech", "audio_transcription"
#: The speech model when models.yml has none.
LOCAL_SPEECH = ModelSpec("espeak", "espeak", "espeak-ng", mode=SPEECH)
#: What an OpenAI-compatible server may be asked for; espeak-ng writes WAV alone.
FORMATS = ("wav", "mp3", "opus", "aac", "flac", "pcm")
#: OpenAI's limit on the text of one speech request.
MAX_INPUT = 4096
#: A voice name as a program option's value: no leading '-', nothing to escape.
_VOICE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_+.-]{0,39}$")


def speak(
    spec: ModelSpec,
    key: str | None,
    text: str,
    *,
    voice: str | None,
    response_format: str,
    timeout: float,
) -> Iterator[bytes]:
    """``text`` spoken by ``spec``'s model, its audio in chunks as it comes."""
    if not text.strip() or len(text) > MAX_INPUT:
        raise InputError(f"input must be 1 to {MAX_INPUT:,} characters of text to speak.")
    if response_format not in FORMATS:
        raise InputError(f"response_format must be one of {', '.join(FORMATS)}.")
    voice = voice or spec.voice
    if spec.provider == "espeak":
        if response_format != "wav":
            raise InputError(
                f"the model {spec.alias!r} (espeak-ng) writes wav only; ask for "
                "response_format wav, or configure a speech server (mode: audio_speech, "
                "provider: openai) in models.yml."
            )
        if voice is not None and not _VOICE.match(voice):
            raise InputError(f"voice {voice[:40]!r} is not an espeak-ng voice name (en, pt...).")
        return output_of(
            spec.model,
            ["--stdin", "--stdout", *(["-v", voice] if voice else [])],
            text.encode("utf-8"),
            timeout=timeout,
            missing=": install it (apt-get install espeak-ng), or configure a speech server "
            "(mode: audio_speech) in models.yml",
            doing="speak",
        )
    payload = {
        "model": spec.model,
        "input": text,
        "voice": voice or "alloy",
        "response_format": response_format,
    }
    return _closing(_http(spec, key, "speech"), payload, timeout)


def transcribe(
    spec: ModelSpec,
    key: str | None,
    audio: bytes,
    filename: str,
    content_type: str,
    *,
    language: str | None,
    timeout: float,
) -> dict[str, object]:
    """``audio`` as text by ``spec``'s model: its answer (``{"text": ...}``)."""
    if spec.provider != "openai":
        raise ConfigError(f"the model {spec.alias!r} cannot transcribe: use provider: openai.")
    data = {"model": spec.model, "response_format": "json"}
    if language:
        data["language"] = language
    files = {"file": (filename, audio, content_type)}
    model = _http(spec, key, "transcriptions")
    try:
        return model.post_form(data, files, timeout)
    finally:
        model.close()


def _closing(model: HTTPModel, payload: dict[str, str], timeout: float) -> Iterator[bytes]:
    try:
        yield from model.audio(payload, timeout)
    finally:
        model.close()


def _http(spec: ModelSpec, key: str | None, path: str) -> HTTPModel:
    base = (spec.base_url or "https://api.openai.com/v1").rstrip("/")
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return HTTPModel(spec.alias, f"{base}/audio/{path}", headers, key, spec.api_key_env)
