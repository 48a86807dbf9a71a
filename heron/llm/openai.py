"""Any OpenAI-compatible ``/chat/completions`` endpoint: OpenAI, OpenRouter, Groq, Ollama,
vLLM, the llama.cpp server.

Wire format (https://platform.openai.com/docs/api-reference/chat): tools as
``{"type": "function", "function": {name, description, parameters}}``, a forced tool as
``{"type": "function", "function": {"name"}}``, tool calls with JSON-string arguments;
streamed as ``data: {chunk}`` lines ending with ``data: [DONE]``, tool calls arriving in
fragments keyed by ``index``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from heron.core.chat import ChatRequest, Completion, Done, Message, StreamEvent, TextDelta, Usage
from heron.llm.config import ModelSpec
from heron.llm.errors import ProviderDown
from heron.llm.http import HTTPModel, stream_error, truncated
from heron.llm.payload import (
    PASSED_FIELDS,
    ToolNames,
    extra_fields,
    forced_tool,
    sampling_fields,
    sampling_of,
)
from heron.resource import Resource


class OpenAIProvider(Resource):
    def __init__(self, spec: ModelSpec, key: str | None) -> None:
        self.spec = spec
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        url = f"{(spec.base_url or '').rstrip('/')}/chat/completions"
        self.http = HTTPModel(spec.alias, url, headers, key, spec.api_key_env)

    def complete(self, request: ChatRequest, *, timeout: float) -> Completion:
        names = ToolNames(request, self.spec.capabilities.name_profile)
        body = self.http.post(self._payload(request, names, stream=False), timeout)
        try:
            choice = body["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise ProviderDown(
                self.spec.alias, f"the answer has no choices[0].message: {str(body)[:200]}"
            ) from None
        calls = tuple(
            names.call(c.get("id", ""), c["function"]["name"], c["function"].get("arguments"))
            for c in message.get("tool_calls") or ()
        )
        return Completion(
            text=message.get("content") or "",
            tool_calls=calls,
            usage=_usage(body.get("usage")),
            model=self.spec.alias,
            finish_reason=choice.get("finish_reason") or "stop",
        )

    def stream(self, request: ChatRequest, *, timeout: float) -> Iterator[StreamEvent]:
        names = ToolNames(request, self.spec.capabilities.name_profile)
        payload = self._payload(request, names, stream=True)
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage, finish = Usage(), "stop"
        for _, chunk in self.http.events(payload, timeout):
            if chunk is None:
                break
            if "error" in chunk:
                raise stream_error(self.spec.alias, chunk)
            usage = _usage(chunk.get("usage")) if chunk.get("usage") else usage
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    text.append(delta["content"])
                    yield TextDelta(delta["content"])
                for part in delta.get("tool_calls") or ():
                    call = calls.setdefault(
                        part.get("index", 0), {"id": "", "name": "", "args": ""}
                    )
                    function = part.get("function") or {}
                    call["id"] = part.get("id") or call["id"]
                    call["name"] += function.get("name") or ""
                    call["args"] += function.get("arguments") or ""
                finish = choice.get("finish_reason") or finish
        else:
            raise truncated(self.spec.alias)
        tool_calls = tuple(
            names.call(c["id"], c["name"], c["args"]) for _, c in sorted(calls.items())
        )
        yield Done(Completion("".join(text), tool_calls, usage, self.spec.alias, finish))

    def _payload(self, request: ChatRequest, names: ToolNames, *, stream: bool) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.spec.model,
            "messages": [_message(m, names) for m in request.messages],
        }
        if request.tools:
            payload["tools"] = [
                {
                    "type": "function",
                    "function": dict(
                        zip(("name", "description", "parameters"), names.tool(t), strict=True)
                    ),
                }
                for t in request.tools
            ]
            forced = forced_tool(request)
            payload["tool_choice"] = (
                {"type": "function", "function": {"name": names.encode(forced)}}
                if forced
                else request.tool_choice
            )
        # The wire names are OpenAI's own, so every sampling field goes as it is.
        sampling = sampling_fields(sampling_of(request, self.spec))
        max_tokens = sampling.pop("max_tokens", None) or self.spec.max_output_tokens
        if max_tokens:
            # OpenAI's reasoning models refuse the older max_tokens; most other
            # OpenAI-compatible servers (Ollama, llama.cpp) know only max_tokens.
            official = "api.openai.com" in (self.spec.base_url or "")
            payload["max_completion_tokens" if official else "max_tokens"] = max_tokens
        if "stop" in sampling:
            sampling["stop"] = list(sampling["stop"])
        payload |= sampling
        # The client's other OpenAI fields, as it sent them: this is OpenAI's own API.
        payload |= extra_fields(self.spec.alias, request, frozenset(PASSED_FIELDS))
        if stream:
            payload["stream"] = True
            payload["stream_options"] = {"include_usage": True}
        return payload

    def close(self) -> None:
        self.http.close()


def _message(message: Message, names: ToolNames) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.content,
        }
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["content"] = message.content or None
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": names.encode(c.name),
                    "arguments": json.dumps(c.arguments, ensure_ascii=False),
                },
            }
            for c in message.tool_calls
        ]
    return out


def _usage(usage: dict[str, Any] | None) -> Usage:
    usage = usage or {}
    return Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
