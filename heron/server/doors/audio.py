"""OpenAI's audio API over the broker's speech models (``heron.llm.speech``):

- ``POST /v1/audio/speech``: ``{"model", "input", "voice", "response_format"}`` -> the
  audio, streamed as the model writes it (``model`` left out or ``default``: the table's
  first speech model, else espeak-ng; ``response_format`` default ``wav``);
- ``POST /v1/audio/transcriptions``: multipart ``file``, ``model``, ``language`` ->
  ``{"text": ...}`` (``response_format=text``: the text alone), where models.yml has a
  transcription model.

Both need the ``chat`` scope and follow the key's and context's model rules; a failure
before the first byte is answered with its status in OpenAI's error shape.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from heron.errors import HeronError, InputError
from heron.llm import Broker
from heron.llm.speech import FORMATS, MAX_INPUT
from heron.server.hooks import NO_METHODS, no_lifespan
from heron.server.http.contexts import runtime_of
from heron.server.http.replies import heron_error, invalid, read_body
from heron.server.http.strictjson import StrictJSONResponse
from heron.server.runtime import Runtime

MEDIA = {"wav": "audio/wav", "mp3": "audio/mpeg", "opus": "audio/opus", "aac": "audio/aac",
         "flac": "audio/flac", "pcm": "audio/pcm"}  # fmt: skip
#: The most bytes of audio a transcription request may carry (OpenAI's 25 MB).
MAX_AUDIO = 25 * 1024 * 1024


class SpeechRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    input: str = Field(min_length=1, max_length=MAX_INPUT)
    voice: str | None = Field(default=None, max_length=64)
    response_format: str = Field(default="wav", pattern=f"^({'|'.join(FORMATS)})$")
    speed: float | None = None


def _model(name: str | None) -> str | None:
    return None if name in (None, "", "default") else name


async def speech(rt: Runtime, request: Request) -> Response:
    rt = runtime_of(rt, request)
    req = await read_body(request, SpeechRequest)
    if isinstance(req, Response):
        return req
    if req.speed not in (None, 1.0):
        return invalid("speed is not supported; leave it out (1.0).", "speed")
    try:
        broker = await run_in_threadpool(lambda: rt.speech)
        chunks = broker.speak(
            req.input, model=_model(req.model), voice=req.voice, response_format=req.response_format
        )
        first = await run_in_threadpool(next, chunks, b"")  # a failure here has a status
    except InputError as exc:
        return invalid(str(exc))
    except HeronError as exc:
        return heron_error(exc)
    return StreamingResponse(_rest(first, chunks), media_type=MEDIA[req.response_format])


async def _rest(first: bytes, chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    yield first
    async for chunk in iterate_in_threadpool(chunks):
        yield chunk


async def transcriptions(rt: Runtime, request: Request) -> Response:
    rt = runtime_of(rt, request)
    async with request.form(max_files=1, max_fields=10) as form:
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            return invalid("send the audio as the multipart field 'file'.", "file")
        audio = await upload.read(MAX_AUDIO + 1)
        if len(audio) > MAX_AUDIO:
            return invalid(f"the audio is over {MAX_AUDIO // 1024 // 1024} MB.", "file")
        fields = {k: str(form.get(k) or "") for k in ("model", "language", "response_format")}
        filename = upload.filename or "audio"
        kind = upload.content_type or "application/octet-stream"
    try:
        broker: Broker = await run_in_threadpool(lambda: rt.speech)
        answer = await run_in_threadpool(
            lambda: broker.transcribe(
                audio,
                filename,
                kind,
                model=_model(fields["model"]),
                language=fields["language"] or None,
            )
        )
    except InputError as exc:
        return invalid(str(exc))
    except HeronError as exc:
        return heron_error(exc)
    if fields["response_format"] == "text":
        return PlainTextResponse(str(answer.get("text", "")))
    return StrictJSONResponse({"text": answer.get("text", ""), **answer})


rpc = NO_METHODS
lifespan = no_lifespan


def routes(rt: Runtime) -> list[BaseRoute]:
    async def speech_route(request: Request) -> Response:
        return await speech(rt, request)

    async def transcriptions_route(request: Request) -> Response:
        return await transcriptions(rt, request)

    return [
        Route("/v1/audio/speech", speech_route, methods=["POST"]),
        Route("/v1/audio/transcriptions", transcriptions_route, methods=["POST"]),
    ]
