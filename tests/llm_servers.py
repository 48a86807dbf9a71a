"""A loopback server replaying OpenAI's /v1/chat/completions and Anthropic's /v1/messages
wire formats, validation errors included, for the paid providers tests cannot reach.

It checks requests the way the real APIs do (key, tool count, tool-name pattern, required
fields, tool results that answer a call, parameters the API does not have) and answers
with their documented bodies. A valid request gets a deterministic answer: with a forced
or required tool choice, a call to that tool (the first one for ``required``) with
arguments filled from its schema; otherwise the text ``echo: <last user text>`` (of a
grounded prompt, its question), or JSON
under OpenAI's ``response_format`` (``{"echo": ...}``, or a value of the schema). ``stop``
(``stop_sequences``) cuts the text at the first stop sequence, ``max_tokens`` (words here)
cuts it short with ``finish_reason: "length"``; the stream's usage chunk comes only with
``stream_options.include_usage``. ``ChatServer.fail(model, status)`` queues failures
(429 with ``retry-after``, 500, 529) that a model's next requests get first; status
``"slow"`` answers after ``delay`` seconds; ``"cut"`` streams one piece, then drops.
``ChatServer.pace`` spaces a stream's events (a model writing slowly) and
``ChatServer.usage`` is the ``(prompt, completion)`` tokens OpenAI's answers report.
``ChatServer.latency`` delays every answer of a model (a slower deployment);
``ChatServer.keys`` are the OpenAI keys accepted (others: 401) and ``limited_keys`` those
rate limited (429 with ``retry-after``, as OpenAI limits per key).
``/v1/audio/speech`` answers ``SPOKEN`` and the text; ``/v1/audio/transcriptions``
answers ``{"text": "heard N bytes"}``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEY = "sk-test-0123456789abcdef"
#: What the replay's /v1/audio/speech answers, before the text it was asked to speak.
SPOKEN = b"RIFF\x24\x00\x00\x00WAVEfmt "
#: models.yml with one OpenAI-compatible model, the replay server at ``url`` (``.format``).
ONE_MODEL = """default: gpt
models:
  gpt:
    provider: openai
    model: gpt-test
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
"""
OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ANTHROPIC_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
OPENAI_MAX_TOOLS = 128
#: The request fields each API documents; anything else is refused, as they do.
# fmt: off
OPENAI_FIELDS = frozenset((
    "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
    "max_completion_tokens", "max_tokens", "messages", "metadata", "modalities", "model", "n",
    "parallel_tool_calls", "prediction", "presence_penalty", "prompt_cache_key",
    "reasoning_effort", "response_format", "safety_identifier", "seed", "service_tier", "stop",
    "store", "stream", "stream_options", "temperature", "tool_choice", "tools", "top_logprobs",
    "top_p", "user", "verbosity", "web_search_options",
))
ANTHROPIC_FIELDS = frozenset((
    "container", "max_tokens", "mcp_servers", "messages", "metadata", "model", "service_tier",
    "stop_sequences", "stream", "system", "temperature", "thinking", "tool_choice", "tools",
    "top_k", "top_p",
))
# fmt: on


class APIError(Exception):
    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None):
        self.status, self.body, self.headers = status, body, headers or {}


def openai_error(
    status: int, message: str, kind: str, param: str | None = None, code: str | None = None
) -> APIError:
    return APIError(
        status, {"error": {"message": message, "type": kind, "param": param, "code": code}}
    )


def anthropic_error(status: int, kind: str, message: str) -> APIError:
    return APIError(status, {"type": "error", "error": {"type": kind, "message": message}})


def sample(schema: dict[str, Any]) -> Any:
    """A value valid for a small JSON schema: what a model's tool call would carry."""
    kind = schema.get("type", "object")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        props = schema.get("properties", {})
        return {k: sample(v) for k, v in props.items() if k in schema.get("required", props)}
    return {"string": "text", "integer": 1, "number": 1.5, "boolean": True, "array": []}.get(kind)


class ChatServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.failures: dict[str, list[tuple[int | str, dict[str, str]]]] = {}
        self.delay = 0.0
        self.url = ""
        #: Texts to answer with, in order, instead of the echo (a scripted model turn).
        self.replies: list[str] = []
        #: Seconds between a stream's events: a model that writes slowly.
        self.pace = 0.0
        #: The ``(prompt, completion)`` tokens an OpenAI answer reports.
        self.usage = (11, 7)
        #: Seconds before each answer of a model, by model name.
        self.latency: dict[str, float] = {}
        #: The OpenAI keys accepted, and those over their rate limit.
        self.keys: set[str] = {KEY}
        self.limited_keys: set[str] = set()

    def fail(self, model: str, status: int | str, times: int = 1, **headers: str) -> None:
        self.failures.setdefault(model, []).extend([(status, headers)] * times)

    def posted(self, path: str) -> list[dict[str, Any]]:
        """Bodies of the requests to ``path``, in order."""
        return [r["body"] for r in self.requests if r["path"] == path]


def _openai_check(body: dict[str, Any], headers: Any, keys: set[str] | None = None) -> None:
    sent = (headers.get("Authorization") or "").removeprefix("Bearer ")
    if sent not in (keys or {KEY}):
        raise openai_error(
            401,
            f"Incorrect API key provided: {sent}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            code="invalid_api_key",
        )
    for name in body:
        if name not in OPENAI_FIELDS:
            raise openai_error(
                400,
                f"Unrecognized request argument supplied: {name}",
                "invalid_request_error",
            )
    if not body.get("messages"):
        raise openai_error(
            400, "[] is too short - 'messages'", "invalid_request_error", "messages", "empty_array"
        )
    tools = body.get("tools") or []
    if len(tools) > OPENAI_MAX_TOOLS:
        raise openai_error(
            400,
            f"Invalid 'tools': array too long. Expected an array with maximum length "
            f"{OPENAI_MAX_TOOLS}, but got an array with length {len(tools)} instead.",
            "invalid_request_error",
            "tools",
            "array_above_max_length",
        )
    for i, tool in enumerate(tools):
        name = tool["function"]["name"]
        if not OPENAI_NAME.match(name):
            raise openai_error(
                400,
                f"Invalid 'tools[{i}].function.name': string does not match pattern. "
                "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                "invalid_request_error",
                f"tools[{i}].function.name",
                "invalid_value",
            )
    if body.get("tool_choice") and not tools:
        raise openai_error(
            400,
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' "
            "are specified.",
            "invalid_request_error",
            "tool_choice",
        )


def _anthropic_check(body: dict[str, Any], headers: Any) -> None:
    if headers.get("x-api-key") != KEY:
        raise anthropic_error(401, "authentication_error", "invalid x-api-key")
    if not headers.get("anthropic-version"):
        raise anthropic_error(400, "invalid_request_error", "anthropic-version: header is required")
    for name in body:
        if name not in ANTHROPIC_FIELDS:
            raise anthropic_error(
                400, "invalid_request_error", f"{name}: Extra inputs are not permitted"
            )
    if "max_tokens" not in body:
        raise anthropic_error(400, "invalid_request_error", "max_tokens: Field required")
    messages = body.get("messages") or []
    if not messages:
        raise anthropic_error(
            400, "invalid_request_error", "messages: at least one message is required"
        )
    for i, message in enumerate(messages):
        if message["role"] not in ("user", "assistant"):
            raise anthropic_error(
                400,
                "invalid_request_error",
                f"messages.{i}.role: Input should be 'user' or 'assistant'",
            )
        content = message["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for block in blocks:
            if block["type"] == "text" and not block["text"]:
                raise anthropic_error(
                    400,
                    "invalid_request_error",
                    f"messages.{i}: text content blocks must be non-empty",
                )
            if block["type"] == "tool_result":
                previous = messages[i - 1]["content"] if i else []
                ids = {b.get("id") for b in previous if isinstance(b, dict)}
                if block["tool_use_id"] not in ids:
                    raise anthropic_error(
                        400,
                        "invalid_request_error",
                        f"messages.{i}.content: unexpected "
                        "`tool_use_id` found in `tool_result` blocks. Each `tool_result` block "
                        "must have a corresponding `tool_use` block in the previous message.",
                    )
    for i, tool in enumerate(body.get("tools") or []):
        if not ANTHROPIC_NAME.match(tool["name"]):
            raise anthropic_error(
                400,
                "invalid_request_error",
                f"tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'",
            )


def _failure(openai: bool, status: int) -> APIError:
    if status == 429:
        return (
            openai_error(
                429, "Rate limit reached for requests", "requests", code="rate_limit_exceeded"
            )
            if openai
            else anthropic_error(
                429, "rate_limit_error", "Number of requests has exceeded your rate limit"
            )
        )
    if status == 529:
        return anthropic_error(529, "overloaded_error", "Overloaded")
    return (
        openai_error(
            status,
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
        )
        if openai
        else anthropic_error(status, "api_error", "Internal server error")
    )


def _answer(body: dict[str, Any], openai: bool) -> tuple[str, list[tuple[str, str, Any]]]:
    """``(text, [(call id, tool name, arguments)])`` for a valid request."""
    tools = body.get("tools") or []
    choice = body.get("tool_choice")
    if openai:
        schemas = {t["function"]["name"]: t["function"].get("parameters", {}) for t in tools}
        forced = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
        wanted = forced or (next(iter(schemas)) if choice == "required" else None)
    else:
        schemas = {t["name"]: t.get("input_schema", {}) for t in tools}
        kind = (choice or {}).get("type")
        wanted = (
            choice.get("name")
            if kind == "tool"
            else (next(iter(schemas)) if kind == "any" else None)
        )
    if wanted:
        return "", [(f"call_{len(body['messages'])}", wanted, sample(schemas[wanted]))]
    last = body["messages"][-1]["content"]
    if isinstance(last, list):
        last = " ".join(b.get("text") or str(b.get("content", "")) for b in last)
    # A grounded turn (heron.agent.prompt.user_prompt) is echoed by its question alone: a
    # model that gives the passages and Heron's instructions back is what the agent's echo
    # guard withholds (tests/agent/test_echo.py), and the other tests want an answer.
    last = last.rpartition("\n\nQuestion: ")[2]
    form = (body.get("response_format") or {}) if openai else {}
    if form.get("type") == "json_object":
        return json.dumps({"echo": last}), []
    if form.get("type") == "json_schema":
        return json.dumps(sample(form["json_schema"]["schema"])), []
    return f"echo: {last}", []


def _limit(body: dict[str, Any], text: str, openai: bool) -> tuple[str, str]:
    """``(text, finish reason)``: the text cut at the first stop sequence or after
    ``max_tokens`` words, the finish reason in the API's own words."""
    stops = body.get("stop") if openai else body.get("stop_sequences")
    stops = [stops] if isinstance(stops, str) else stops or []
    cut = min((text.find(s) for s in stops if s in text), default=-1)
    if cut >= 0:
        return text[:cut], "stop" if openai else "stop_sequence"
    most = body.get("max_completion_tokens") or body.get("max_tokens")
    words = _chunks(text)
    if most and len(words) > most:
        return "".join(words[:most]), "length" if openai else "max_tokens"
    return text, "stop" if openai else "end_turn"


def _chunks(text: str) -> list[str]:
    return re.findall(r"\S+\s*", text) or [""]


def _openai_stream(
    body: dict[str, Any],
    text: str,
    calls: list,
    finish: str = "stop",
    usage: tuple[int, int] = (11, 7),
) -> Iterator[dict[str, Any]]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": body["model"]}
    yield {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    for piece in _chunks(text) if text else []:
        yield {**base, "choices": [{"index": 0, "delta": {"content": piece}}]}
    for index, (cid, name, args) in enumerate(calls):
        raw = json.dumps(args)
        head = {
            "index": index,
            "id": cid,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        yield {**base, "choices": [{"index": 0, "delta": {"tool_calls": [head]}}]}
        for start in range(0, len(raw), 5):  # arguments arrive in fragments
            part = {"index": index, "function": {"arguments": raw[start : start + 5]}}
            yield {**base, "choices": [{"index": 0, "delta": {"tool_calls": [part]}}]}
    finish = "tool_calls" if calls else finish
    yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    if (body.get("stream_options") or {}).get("include_usage"):
        used = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
        yield {**base, "choices": [], "usage": used | {"total_tokens": sum(usage)}}


def _anthropic_stream(
    body: dict[str, Any], text: str, calls: list, finish: str = "end_turn"
) -> Iterator[dict[str, Any]]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": body["model"],
        "stop_reason": None,
        "usage": {"input_tokens": 11, "output_tokens": 1},
    }
    yield {"type": "message_start", "message": message}
    index = 0
    if text:
        yield {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": ""},
        }
        yield {"type": "ping"}
        for piece in _chunks(text):
            yield {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": piece},
            }
        yield {"type": "content_block_stop", "index": 0}
        index = 1
    for offset, (cid, name, args) in enumerate(calls):
        i = index + offset
        yield {
            "type": "content_block_start",
            "index": i,
            "content_block": {"type": "tool_use", "id": cid, "name": name, "input": {}},
        }
        raw = json.dumps(args)
        for start in range(0, len(raw), 5):
            yield {
                "type": "content_block_delta",
                "index": i,
                "delta": {"type": "input_json_delta", "partial_json": raw[start : start + 5]},
            }
        yield {"type": "content_block_stop", "index": i}
    stop = "tool_use" if calls else finish
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": 7},
    }
    yield {"type": "message_stop"}


def _has_text(event: dict[str, Any]) -> bool:
    choices = event.get("choices") or [{}]
    return bool(choices[0].get("delta", {}).get("content") or event.get("delta", {}).get("text"))


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def handle(self) -> None:
            # A client that left mid-answer (a timeout, a reader that stopped) is no error.
            with suppress(BrokenPipeError, ConnectionResetError):
                super().handle()

        def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _audio(self, raw: bytes) -> None:
            """OpenAI's /v1/audio/speech (JSON in, audio out) and /v1/audio/transcriptions
            (multipart in, ``{"text"}`` out), each with its key checked."""
            sent = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            server.requests.append({"path": self.path, "headers": dict(self.headers), "body": raw})
            if sent not in server.keys:
                self._json(401, {"error": {"message": "Incorrect API key provided",
                                           "type": "invalid_request_error"}})  # fmt: skip
                return
            if self.path == "/v1/audio/speech":
                body = json.loads(raw)
                missing = [k for k in ("model", "input", "voice") if not body.get(k)]
                if missing:
                    self._json(400, {"error": {"message": f"Missing {missing[0]}",
                                               "type": "invalid_request_error"}})  # fmt: skip
                    return
                audio = SPOKEN + body["input"].encode()
                self.send_response(200)
                self.send_header("Content-Type", "audio/wav")
                self.send_header("Content-Length", str(len(audio)))
                self.end_headers()
                self.wfile.write(audio)
                return
            if b'name="file"' not in raw or b'name="model"' not in raw:
                self._json(400, {"error": {"message": "file and model are required",
                                           "type": "invalid_request_error"}})  # fmt: skip
                return
            self._json(200, {"text": f"heard {len(raw)} bytes"})

        def _sse(self, events: Iterator[dict[str, Any]], openai: bool, cut: bool) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for n, event in enumerate(events):
                if n and server.pace:
                    time.sleep(server.pace)
                name = "" if openai else f"event: {event['type']}\n"
                self.wfile.write(f"{name}data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                if cut and _has_text(event):
                    return  # the connection drops after the first piece of text
            if openai:
                self.wfile.write(b"data: [DONE]\n\n")

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path.startswith("/v1/audio/"):
                self._audio(raw)
                return
            body = json.loads(raw)
            server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            openai = self.path == "/v1/chat/completions"
            if not openai and self.path != "/v1/messages":
                self._json(
                    404, {"error": {"message": "Not found", "type": "invalid_request_error"}}
                )
                return
            try:
                if openai:
                    _openai_check(body, self.headers, server.keys)
                    sent = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                    if sent in server.limited_keys:
                        error = _failure(True, 429)
                        error.headers = {"retry-after": "20"}
                        raise error
                else:
                    _anthropic_check(body, self.headers)
                time.sleep(server.latency.get(body.get("model"), 0.0))
                queued = server.failures.get(body.get("model"), [])
                status, headers = queued.pop(0) if queued else (200, {})
                if status == "slow":
                    time.sleep(server.delay)
                elif isinstance(status, int) and status != 200:
                    error = _failure(openai, status)
                    error.headers = headers
                    raise error
            except APIError as exc:
                self._json(exc.status, exc.body, exc.headers)
                return
            text, calls = _answer(body, openai)
            if server.replies and not calls:
                text = server.replies.pop(0)
            text, finish = _limit(body, text, openai)
            if body.get("stream"):
                events = (
                    _openai_stream(body, text, calls, finish, server.usage)
                    if openai
                    else _anthropic_stream(body, text, calls, finish)
                )
                self._sse(events, openai, cut=status == "cut")
            elif openai:
                message = {"role": "assistant", "content": text or None}
                if calls:
                    message["tool_calls"] = [
                        {
                            "id": c,
                            "type": "function",
                            "function": {"name": n, "arguments": json.dumps(a)},
                        }
                        for c, n, a in calls
                    ]
                choice = {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else finish,
                }
                prompt, completion = server.usage
                usage = {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                }
                self._json(
                    200,
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "model": body["model"],
                        "choices": [choice],
                        "usage": usage,
                    },
                )
            else:
                content = [{"type": "text", "text": text}] if text else []
                content += [
                    {"type": "tool_use", "id": c, "name": n, "input": a} for c, n, a in calls
                ]
                self._json(
                    200,
                    {
                        "id": "msg_1",
                        "type": "message",
                        "role": "assistant",
                        "model": body["model"],
                        "content": content,
                        "stop_reason": "tool_use" if calls else finish,
                        "usage": {"input_tokens": 11, "output_tokens": 7},
                    },
                )

    return Handler


@contextmanager
def serve() -> Iterator[ChatServer]:
    """A ``ChatServer`` on 127.0.0.1 for the block; ``.url`` is its base URL."""
    state = ChatServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{httpd.server_port}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
