"""OpenAI's Chat Completions API in front of the agent: any OpenAI client gets grounded,
cited answers. ``POST /v1/chat/completions`` (plain or ``stream: true``) and
``GET /v1/models`` (the aliases of models.yml).

The question is the last user message; ``session_id`` and ``library`` may ride in the
request body (``extra_body`` in the OpenAI SDK) for a server-side conversation and a
library filter. Answers carry ``citations`` beside ``choices``, a field standard clients
ignore; in a stream it arrives on the last chunk before ``data: [DONE]``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from heron.errors import HeronError, InputError
from heron.server.methods import ChatParams, chat
from heron.server.replies import openai_error
from heron.server.runtime import Runtime
from heron.server.sse import event_data, http_status, open_stream
from heron.server.strictjson import StrictJSONResponse, dumps, read_json


class Part(BaseModel):
    """One piece of a message's content; only text parts reach the agent."""

    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None


class Message(BaseModel):
    role: str
    content: str | list[Part] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(p.text or "" for p in self.content if p.type == "text")
        return self.content or ""


class CompletionRequest(BaseModel):
    # Clients send many optional fields (temperature, n, ...); the agent decides those.
    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[Message] = Field(min_length=1)
    stream: bool = False
    session_id: str | None = None
    library: str | None = None

    def question(self) -> str:
        for message in reversed(self.messages):
            if message.role == "user" and message.text().strip():
                return message.text()
        raise InputError("No user message with text; send at least one {'role': 'user', ...}.")


def heron_error(exc: HeronError) -> Response:
    status = http_status(exc)
    kind = "invalid_request_error" if status < 500 else "server_error"
    return openai_error(status, str(exc), kind, type(exc).__name__)


def _usage(usage: dict[str, int]) -> dict[str, int]:
    return {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]}


def completion(answer: dict[str, Any], cid: str, created: int) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": answer["model"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer["answer"]},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": _usage(answer["usage"]),
        "citations": answer["citations"],
        "session_id": answer["session_id"],
    }


def _chunk(cid: str, created: int, model: str, delta: dict[str, Any], **extra: Any) -> str:
    finish = extra.pop("finish_reason", None)
    body = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        **extra,
    }
    return f"data: {dumps(body)}\n\n"


async def _stream(
    rt: Runtime, events: Iterator[Any], model: str, cid: str, created: int
) -> AsyncIterator[str]:
    start = time.perf_counter()
    yield _chunk(cid, created, model, {"role": "assistant", "content": ""})
    try:
        async for event in iterate_in_threadpool(events):
            name, data = event_data(event)
            if name == "token":
                yield _chunk(cid, created, model, {"content": data["text"]})
            elif name == "final":
                rt.metrics.observe_model(data["model"], time.perf_counter() - start)
                yield _chunk(
                    cid,
                    created,
                    data["model"],
                    {},
                    finish_reason="stop",
                    usage=_usage(data["usage"]),
                    citations=data["citations"],
                    session_id=data["session_id"],
                )
    except HeronError as exc:  # mid-stream: OpenAI sends the error as a data line
        body = {"error": {"message": str(exc), "type": "server_error", "code": type(exc).__name__}}
        yield f"data: {dumps(body)}\n\n"
    yield "data: [DONE]\n\n"


async def chat_completions(request: Request) -> Response:
    rt: Runtime = request.app.state.runtime
    try:
        req = CompletionRequest.model_validate(await read_json(request))
        question = req.question()
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        return openai_error(
            400, f"Invalid request: {where}: {first['msg']}.", "invalid_request_error"
        )
    except InputError as exc:
        return openai_error(400, str(exc), "invalid_request_error")
    except ValueError as exc:  # not JSON, or JSON Heron does not take (too deep, NaN)
        return openai_error(400, f"Invalid request: {exc}", "invalid_request_error")
    cid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    params = ChatParams(
        message=question, session_id=req.session_id, library=req.library, model=req.model
    )
    start = time.perf_counter()
    try:
        if req.stream:
            events = await run_in_threadpool(open_stream, rt, params)
            return StreamingResponse(
                _stream(rt, events, req.model, cid, created),
                media_type="text/event-stream",
                headers={"cache-control": "no-cache"},
            )
        answer = (await run_in_threadpool(chat, rt, params)).to_dict()
    except HeronError as exc:
        return heron_error(exc)
    rt.metrics.observe_model(answer["model"], time.perf_counter() - start)
    return StrictJSONResponse(completion(answer, cid, created))


def _model(alias: str, provider: str) -> dict[str, Any]:
    return {"id": alias, "object": "model", "created": 0, "owned_by": f"heron:{provider}"}


async def models(request: Request) -> Response:
    """``GET /v1/models`` (every alias) and ``GET /v1/models/{model}`` (one)."""
    from heron.llm.config import load_table

    rt: Runtime = request.app.state.runtime
    try:
        table = await run_in_threadpool(load_table, rt.settings)
    except HeronError as exc:
        return heron_error(exc)
    wanted = request.path_params.get("model")
    if wanted is None:
        data = [_model(alias, spec.provider) for alias, spec in table.models.items()]
        return StrictJSONResponse({"object": "list", "data": data})
    if wanted not in table.models:
        known = ", ".join(table.models)
        return openai_error(404, f"No model {wanted!r}. Models: {known}.", "invalid_request_error")
    return StrictJSONResponse(_model(wanted, table.models[wanted].provider))


routes = [
    Route("/v1/chat/completions", chat_completions, methods=["POST"]),
    Route("/v1/models", models, methods=["GET"]),
    Route("/v1/models/{model:path}", models, methods=["GET"]),
]
