"""Speech through the broker (issue 50): ``/v1/audio/speech`` with espeak-ng on this
machine and with a remote OpenAI-compatible speech model from models.yml, both through
the real ``openai`` SDK; ``/v1/audio/transcriptions`` where a transcription model is
configured; the model rules of a key; a critical intervention spoken by the broker."""

from __future__ import annotations

import shutil
from pathlib import Path

import openai
import pytest

from heron.interventions.service import audio_folder
from heron.keys import open_keys
from heron.server import create_app
from heron.settings import Settings
from tests.ci import missing
from tests.llm_servers import KEY, SPOKEN, ChatServer
from tests.server.conftest import Served, running

MODELS = """default: gpt
models:
  gpt:
    provider: openai
    model: gpt-test
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
  tts:
    provider: openai
    mode: audio_speech
    model: tts-1
    voice: alloy
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
  local-tts:
    provider: espeak
    mode: audio_speech
    voice: en
  stt:
    provider: openai
    mode: audio_transcription
    model: whisper-1
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
"""


@pytest.fixture(scope="module")
def served(heron_home: Path, replay: ChatServer, tmp_path_factory: pytest.TempPathFactory):
    models = tmp_path_factory.mktemp("audio") / "models.yml"
    models.write_text(MODELS.format(url=replay.url))
    settings = Settings(llm={"models_file": models, "retries": 0})
    with running(create_app(settings)) as (url, server):
        yield Served(url, heron_home / "home", settings, server)


def sdk(served: Served, token: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key=token, max_retries=0)


def test_espeak_speaks_on_this_machine(served: Served) -> None:
    if shutil.which("espeak-ng") is None:
        missing("espeak-ng is not installed", "apt-get install espeak-ng (scripts/setup)")
    audio = sdk(served).audio.speech.create(
        model="local-tts", voice="en", input="The check is failing.", response_format="wav"
    )
    assert audio.content[:4] == b"RIFF" and len(audio.content) > 10_000
    with pytest.raises(openai.BadRequestError, match="writes wav only"):
        sdk(served).audio.speech.create(
            model="local-tts", voice="en", input="x", response_format="mp3"
        )


def test_a_remote_speech_model_by_config(served: Served, replay: ChatServer) -> None:
    replay.requests.clear()
    audio = sdk(served).audio.speech.create(
        model="default", voice="nova", input="Deploy is blocked.", response_format="wav"
    )
    assert audio.content == SPOKEN + b"Deploy is blocked."  # the first speech model: tts
    sent = replay.requests[-1]
    headers = {k.lower(): v for k, v in sent["headers"].items()}
    assert sent["path"] == "/v1/audio/speech" and headers["authorization"] == f"Bearer {KEY}"
    with pytest.raises(openai.BadRequestError, match="is a speech model"):
        sdk(served).chat.completions.create(
            model="raw/tts", messages=[{"role": "user", "content": "hi"}]
        )


def test_transcriptions_where_a_model_is_configured(served: Served) -> None:
    text = sdk(served).audio.transcriptions.create(
        model="stt", file=("note.wav", SPOKEN + b"hello")
    )
    assert text.text.startswith("heard ")
    with pytest.raises(openai.BadRequestError, match="is not a audio_transcription model"):
        sdk(served).audio.transcriptions.create(model="tts", file=("note.wav", SPOKEN))


def test_a_key_speaks_only_with_its_models(served: Served) -> None:
    with open_keys(served.settings) as keys:
        token = keys.create("chat-only", ("chat",), models=["gpt"])[1]
    with pytest.raises(openai.PermissionDeniedError, match="may not call the model 'tts'"):
        sdk(served, token).audio.speech.create(model="tts", voice="alloy", input="hello")


def test_a_critical_card_is_spoken_by_the_broker(served: Served, replay: ChatServer) -> None:
    replay.requests.clear()
    raised = served.rpc(
        "interventions.raise",
        {
            "kind": "watchdog_incident",
            "key": "watchdog:api",
            "room": "ops",
            "severity": "critical",
            "facts": {"check": "api-health", "detail": "GET /health answered 503"},
        },
    )["result"]
    spoken = [r for r in replay.requests if r["path"] == "/v1/audio/speech"]
    assert spoken, "the card's voice went through the broker's speech model"
    audio = audio_folder(served.settings) / f"{raised['id']}.wav"
    assert audio.read_bytes().startswith(SPOKEN)
