"""OpenAI's Embeddings API over Heron's embedder: ``POST /v1/embeddings``, so the bundled
model (or the configured remote one) serves other tools too::

    client = openai.OpenAI(base_url="http://127.0.0.1:8765/v1", api_key="unused")
    done = client.embeddings.create(model="heron", input=["a Pod runs containers"])
    len(done.data[0].embedding), done.model
    # (768, 'all-MiniLM-L6-v2-dynamic-int8+multilingual-e5-small-q4-onnx-int8'): the default
    # profile's MiniLM and e5 vectors side by side; HERON_EMBEDDER=minilm gives 384

The request is OpenAI's: ``input`` one string or a list of them (token arrays are
refused: the server cannot know which tokenizer made them), ``model`` any name (the
answer names the embedder that answered, e.g. ``all-MiniLM-L6-v2-dynamic-int8``),
``encoding_format`` ``float`` or ``base64`` (little-endian float32, what the OpenAI SDK
asks for by default), ``dimensions`` only the model's own. Vectors have unit length.
``usage.prompt_tokens`` counts the tokens the model read (MiniLM reads 256 of each
text at most, ``[CLS]`` and ``[SEP]`` included). Texts go to the model itself, not
through the embedding cache: that cache holds the libraries' texts, and other tools'
texts would grow it without bound.

What one request may cost is bounded before the model reads a word: at most
``MAX_INPUTS`` texts of ``embeddings_max_tokens`` estimated tokens together (3
characters each, every text counted whole, as OpenAI counts, and ``PER_TEXT`` more for
each text, whatever its length), weighed by the model's cost (``cost_of``), and at most
``embeddings_concurrency`` requests at once (one more is a 429 with ``Retry-After``).
With the defaults, the multilingual pair takes at most 180 texts a request, MiniLM 630.
The texts are embedded ``BATCH`` at a time, and a client that disconnects stops the
work at the next batch (``heron.server.http.gone``).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, Literal

import anyio
import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from heron.core.cancel import Gone, check_gone
from heron.embed import Embedder, MultilingualEmbedder
from heron.embed.base import clean_texts
from heron.errors import HeronError
from heron.llm.payload import CHARS_PER_TOKEN
from heron.server.features.keys import spend
from heron.server.hooks import NO_METHODS, no_lifespan
from heron.server.http.gone import gone, unless_gone
from heron.server.http.replies import heron_error, invalid, openai_error, read_body
from heron.server.http.strictjson import StrictJSONResponse
from heron.server.runtime import Runtime

#: Texts in one request, OpenAI's own limit.
MAX_INPUTS = 2048
#: Estimated tokens each text costs beside its own: a text of two characters still has
#: its special tokens, its share of a batch, and a run of e5 of its own (the pair runs e5
#: one text at a time). Measured: 2,048 texts of two characters took 1.8 s of CPU under
#: MiniLM and 8.2 s under the pair, where 96 texts of 250 characters (84 estimated
#: tokens) took 1.1 s and 2.7 s; a text costs about what 12 estimated tokens cost. Counted
#: as 2,048 tokens, the tiny texts passed a cap whose point is 2 s of CPU (issue 45).
PER_TEXT = 12
#: Texts embedded between two looks at whether the client is still there.
BATCH = 32
#: Seconds a client told 429 (every slot busy) is asked to wait.
RETRY_AFTER = 1


class EmbeddingRequest(BaseModel):
    # Unknown fields (``user``, vendor extras) are ignored, as OpenAI does.
    model_config = ConfigDict(extra="allow")

    input: str | list[str] | list[int] | list[list[int]]
    model: str = Field(min_length=1)
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1)


def model_of(embedder: Embedder) -> Embedder:
    """The model behind any cache (``CachedEmbedder.inner``): a client's texts are not
    kept. The multilingual pair is rebuilt from its parts' models: a client gets the
    vectors Heron stores."""
    if isinstance(embedder, MultilingualEmbedder):
        return MultilingualEmbedder(
            model_of(embedder.english), lambda: model_of(embedder.other), embedder.other_id
        )
    while isinstance(getattr(embedder, "inner", None), Embedder):
        embedder = embedder.inner  # type: ignore[attr-defined]
    return embedder


def cost_of(embedder: Embedder) -> float:
    """What a text costs ``embedder`` in CPU, MiniLM's being 1 (``MultilingualEmbedder``:
    ``cost``): a request's tokens are weighed by it against ``HERON_EMBEDDINGS_MAX_TOKENS``,
    whose point is CPU."""
    return float(getattr(embedder, "cost", 1.0))


def count_tokens(embedder: Embedder, texts: Sequence[str]) -> int:
    """Tokens the model reads for ``texts``: its own tokenizer where it has one (MiniLM,
    truncation included); otherwise (a remote model, whose server counts) Heron's
    estimate, ``characters / CHARS_PER_TOKEN``."""
    tokenizer = getattr(embedder, "tokenizer", None)
    if tokenizer is not None:
        return sum(len(e.ids) for e in tokenizer.encode_batch(list(texts)))
    return estimate_tokens(texts)


def estimate_tokens(texts: Sequence[str]) -> int:
    """Heron's estimate of the tokens of ``texts``, each counted whole: what a request
    is measured by before any tokenizer runs."""
    return sum(len(t) // CHARS_PER_TOKEN + 1 for t in texts)


def most_texts(max_tokens: int, cost: float = 1.0) -> int:
    """The most texts one request may send to a model of ``cost``, however short each:
    ``max_tokens`` over the least a text is weighed (one token and ``PER_TEXT``)."""
    return min(MAX_INPUTS, int(max_tokens / (cost * (1 + PER_TEXT))))


def texts_of(req: EmbeddingRequest, max_tokens: int, cost: float = 1.0) -> list[str] | str:
    """The texts to embed, or why they cannot be (``cost``: ``cost_of`` the embedder).

    >>> texts_of(EmbeddingRequest(model="m", input=["ab"] * 2048), 8192, 3.5)[:72]
    'input holds 2,048 texts; this model embeds at most 180 texts per request'
    """
    texts = [req.input] if isinstance(req.input, str) else req.input
    if not texts:
        return "input is empty; send a string or a list of strings."
    if not all(isinstance(t, str) for t in texts):
        return (
            "input holds token ids; Heron embeds text only (it cannot know which tokenizer "
            "made them). Send the text instead."
        )
    if len(texts) > MAX_INPUTS:
        return f"input holds {len(texts):,} texts; send at most {MAX_INPUTS:,} per request."
    most = most_texts(max_tokens, cost)
    if len(texts) > most:
        return (
            f"input holds {len(texts):,} texts; this model embeds at most {most:,} texts per "
            f"request (each counts {PER_TEXT} tokens beside its own, against "
            "HERON_EMBEDDINGS_MAX_TOKENS); send them in several requests."
        )
    tokens = estimate_tokens(texts)  # type: ignore[arg-type]
    counted = tokens + PER_TEXT * len(texts)
    if counted * cost > max_tokens:
        return (
            f"input is about {tokens:,} tokens, {counted:,} with the {PER_TEXT} each of its "
            f"{len(texts):,} texts counts beside its own, over the {int(max_tokens / cost):,} "
            "one request may send to this model (HERON_EMBEDDINGS_MAX_TOKENS); send the "
            "texts in several requests."
        )
    return texts  # type: ignore[return-value]


def _embed(embedder: Embedder, texts: list[str], encoding: str) -> tuple[list[Any], int]:
    texts = clean_texts(texts)
    parts = []
    for start in range(0, len(texts), BATCH):
        check_gone()
        parts.append(embedder.embed(texts[start : start + BATCH]))
    vectors = np.concatenate(parts)
    if encoding == "base64":
        rows: list[Any] = [base64.b64encode(v.astype("<f4").tobytes()).decode() for v in vectors]
    else:
        rows = vectors.tolist()
    return rows, count_tokens(embedder, texts)


class Embeddings:
    """``POST /v1/embeddings`` of one server: its handler, with the slots that bound how
    many requests embed at once."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.slots = anyio.Semaphore(rt.settings.server.embeddings_concurrency)

    async def handle(self, request: Request) -> Response:
        rt = self.rt
        req = await read_body(request, EmbeddingRequest)
        if isinstance(req, Response):
            return req
        embedder = model_of(rt.store.embedder)
        texts = texts_of(req, rt.settings.server.embeddings_max_tokens, cost_of(embedder))
        if isinstance(texts, str):
            return invalid(texts, "input")
        try:
            if req.dimensions is not None and req.dimensions != embedder.dim:
                return invalid(
                    f"dimensions: {embedder.model_id} gives {embedder.dim}-dimensional "
                    f"vectors and cannot shorten them; leave dimensions out or send "
                    f"{embedder.dim}.",
                    "dimensions",
                )
            if self.slots.value == 0:
                return self.busy()
            async with self.slots:
                rows, tokens = await unless_gone(
                    request, lambda: _embed(embedder, texts, req.encoding_format)
                )
        except Gone:
            return gone()
        except HeronError as exc:
            return heron_error(exc)
        spend(tokens, 0)  # the key's tokens
        data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)]
        return StrictJSONResponse(
            {
                "object": "list",
                "data": data,
                "model": embedder.model_id,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    def busy(self) -> Response:
        limit = self.rt.settings.server.embeddings_concurrency
        return openai_error(
            429,
            f"{limit} embeddings requests are being served, the most at once "
            f"(HERON_EMBEDDINGS_CONCURRENCY); retry in {RETRY_AFTER} s.",
            "rate_limit_exceeded",
            headers={"Retry-After": str(RETRY_AFTER)},
        )


def routes(rt: Runtime) -> list[BaseRoute]:
    """``POST /v1/embeddings``."""

    return [Route("/v1/embeddings", Embeddings(rt).handle, methods=["POST"])]


rpc = NO_METHODS
lifespan = no_lifespan
