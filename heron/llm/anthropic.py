"""Anthropic's Messages API, natively (https://docs.anthropic.com/en/api/messages).

Differences from OpenAI that shape this file: system prompts go in a top-level ``system``;
turns alternate user/assistant, so tool results travel as ``tool_result`` blocks in a user
turn and adjacent turns of one role merge; ``max_tokens`` is required; ``tool_choice`` is
``{"type": "auto" | "any" | "none" | "tool"}``. Streams are named events: message_start,
content_block_start / _delta (``text_delta``, ``input_json_delta``) / _stop,
message_delta (stop reason, output tokens), message_stop, ping, error.

Sampling: ``max_tokens``, ``temperature`` (0 to 1 here, not OpenAI's 0 to 2), ``top_p``
and ``stop`` (as ``stop_sequences``) are sent; the API has no ``seed``, no presence or
frequency penalty and no ``response_format``, so a request setting one is refused
(``BadRequest`` naming it) rather than answered as if it had been honoured; one Heron
set itself (``Sampling.defaults``) is left out instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from heron.core.chat import ChatRequest, Completion, Done, Message, StreamEvent, TextDelta, Usage
from heron.llm.config import ModelSpec
from heron.llm.errors import BadRequest, ProviderDown
from heron.llm.http import HTTPModel, stream_error, truncated
from heron.llm.payload import (
    ToolNames,
    extra_fields,
    forced_tool,
    refuse_unsupported,
    sampling_of,
)
from heron.resource import Resource

API_VERSION = "2023-06-01"
#: max_tokens is required by the API; used when neither the request nor models.yml sets it.
DEFAULT_MAX_TOKENS = 4096
FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}
#: What the Messages API has no parameter for, and what to do instead.
UNSUPPORTED = {
    "seed": "Anthropic's Messages API has no seed",
    "presence_penalty": "Anthropic's Messages API has no presence penalty",
    "frequency_penalty": "Anthropic's Messages API has no frequency penalty",
    "response_format": "Anthropic's Messages API has no JSON mode; ask for JSON in the "
    "system message instead",
}


def _extra(alias: str, request: ChatRequest, payload: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's other fields in the Messages API's terms: ``metadata`` holding only
    ``user_id`` and ``user`` become ``metadata.user_id``; ``parallel_tool_calls: false``
    becomes ``tool_choice.disable_parallel_tool_use``; the rest is refused by name
    unless neutral (``extra_fields``)."""
    extra = dict(request.extra)
    out: dict[str, Any] = {}
    metadata = extra.pop("metadata", None)
    if metadata is not None:
        if not isinstance(metadata, dict) or set(metadata) - {"user_id"}:
            raise BadRequest(
                alias,
                f"cannot honour metadata={metadata!r:.80}: Anthropic's metadata takes only "
                "user_id. Send {'user_id': ...}, or leave metadata out.",
            )
        out["metadata"] = metadata
    user = extra.pop("user", None)
    if user and "metadata" not in out:
        out["metadata"] = {"user_id": user}
    if extra.get("parallel_tool_calls") is False and request.tools:
        extra.pop("parallel_tool_calls")
        payload["tool_choice"] = {**payload["tool_choice"], "disable_parallel_tool_use": True}
    return out | extra_fields(alias, replace(request, extra=extra), frozenset())


class AnthropicProvider(Resource):
    def __init__(self, spec: ModelSpec, key: str | None) -> None:
        self.spec = spec
        headers = {"anthropic-version": API_VERSION}
        if key:
            headers["x-api-key"] = key
        url = f"{(spec.base_url or '').rstrip('/')}/v1/messages"
        self.http = HTTPModel(spec.alias, url, headers, key, spec.api_key_env)

    def complete(self, request: ChatRequest, *, timeout: float) -> Completion:
        names = ToolNames(request, self.spec.capabilities.name_profile)
        body = self.http.post(self._payload(request, names, stream=False), timeout)
        if not isinstance(body.get("content"), list):
            raise ProviderDown(self.spec.alias, f"the answer has no content: {str(body)[:200]}")
        blocks = body["content"]
        return Completion(
            text="".join(b.get("text", "") for b in blocks if b.get("type") == "text"),
            tool_calls=tuple(
                names.call(b["id"], b["name"], b.get("input"))
                for b in blocks
                if b.get("type") == "tool_use"
            ),
            usage=_usage(body.get("usage")),
            model=self.spec.alias,
            finish_reason=FINISH.get(body.get("stop_reason") or "", body.get("stop_reason") or ""),
        )

    def stream(self, request: ChatRequest, *, timeout: float) -> Iterator[StreamEvent]:
        names = ToolNames(request, self.spec.capabilities.name_profile)
        text: list[str] = []
        tools: dict[int, dict[str, str]] = {}
        prompt = output = 0
        stop = ""
        for _, event in self.http.events(self._payload(request, names, stream=True), timeout):
            kind = event.get("type")
            if kind == "error":
                raise stream_error(self.spec.alias, event)
            if kind == "message_start":
                usage = event.get("message", {}).get("usage", {})
                prompt, output = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
            elif kind == "content_block_start" and event["content_block"]["type"] == "tool_use":
                block = event["content_block"]
                tools[event["index"]] = {"id": block["id"], "name": block["name"], "json": ""}
            elif kind == "content_block_delta":
                delta = event["delta"]
                if delta["type"] == "text_delta":
                    text.append(delta["text"])
                    yield TextDelta(delta["text"])
                elif delta["type"] == "input_json_delta":
                    tools[event["index"]]["json"] += delta["partial_json"]
            elif kind == "message_delta":
                stop = event.get("delta", {}).get("stop_reason") or stop
                output = event.get("usage", {}).get("output_tokens", output)
            elif kind == "message_stop":
                break
        else:
            raise truncated(self.spec.alias)
        calls = tuple(names.call(t["id"], t["name"], t["json"]) for _, t in sorted(tools.items()))
        completion = Completion(
            "".join(text), calls, Usage(prompt, output), self.spec.alias, FINISH.get(stop, stop)
        )
        yield Done(completion)

    def _payload(self, request: ChatRequest, names: ToolNames, *, stream: bool) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        turns: list[dict[str, Any]] = []
        for message in request.messages:
            if message.role == "system":
                continue
            role = "assistant" if message.role == "assistant" else "user"
            blocks = _blocks(message, names)
            if turns and turns[-1]["role"] == role:
                turns[-1]["content"].extend(blocks)
            else:
                turns.append({"role": role, "content": blocks})
        sampling = sampling_of(request, self.spec)
        refuse_unsupported(self.spec.alias, sampling, UNSUPPORTED)
        payload: dict[str, Any] = {
            "model": self.spec.model,
            "messages": turns,
            "max_tokens": sampling.max_tokens or self.spec.max_output_tokens or DEFAULT_MAX_TOKENS,
        }
        if system:
            payload["system"] = system
        if request.tools:
            payload["tools"] = [
                dict(zip(("name", "description", "input_schema"), names.tool(t), strict=True))
                for t in request.tools
            ]
            forced = forced_tool(request)
            payload["tool_choice"] = (
                {"type": "tool", "name": names.encode(forced)}
                if forced
                else {"type": {"required": "any"}.get(request.tool_choice, request.tool_choice)}
            )
        if sampling.temperature is not None:
            if sampling.temperature > 1:
                raise BadRequest(
                    self.spec.alias,
                    f"temperature {sampling.temperature} is over Anthropic's maximum of 1; "
                    "send a temperature from 0 to 1.",
                )
            payload["temperature"] = sampling.temperature
        if sampling.top_p is not None:
            payload["top_p"] = sampling.top_p
        if sampling.stop:
            payload["stop_sequences"] = list(sampling.stop)
        payload |= _extra(self.spec.alias, request, payload)
        if stream:
            payload["stream"] = True
        return payload

    def close(self) -> None:
        self.http.close()


def _blocks(message: Message, names: ToolNames) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content,
            }
        ]
    # The API refuses empty text blocks; an assistant turn may be tool calls alone.
    blocks: list[dict[str, Any]] = (
        [{"type": "text", "text": message.content}] if message.content else []
    )
    blocks += [
        {"type": "tool_use", "id": c.id, "name": names.encode(c.name), "input": c.arguments}
        for c in message.tool_calls
    ]
    return blocks


def _usage(usage: dict[str, Any] | None) -> Usage:
    usage = usage or {}
    return Usage(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0))
