"""``ToolRouter``: offer each request only the tools that fit it, under the provider's limit.

Modes:

- ``pattern``: every tool. Over the provider's tool limit it degrades to ``hybrid``
  (keeping as many as the limit allows) with a warning, never an over-long list.
- ``semantic``: cosine between the query and each tool's text; the ``top_k`` best whose
  cosine reaches ``threshold``.
- ``hybrid`` (default): cosine and BM25 fused, the ``top_k`` best; a tool below
  ``threshold`` is dropped unless the query shares a word with it.

``threshold`` is a cosine on the embedder's scale: unset, it is the model's
(``heron.embed.calibration``: MiniLM 0.25, e5 0.83).

``always_include`` tools are kept in every mode and count towards ``top_k`` and the limit.

Fusion is a convex combination of z-scores, as in ``heron.store.fusion``, but over *every*
tool (a catalogue of tools is small enough to score exactly on both sides):
``fused = alpha * z(cosine) + (1 - alpha) * w * z(bm25)``. ``ALPHA`` = 0.8 was tuned on
MetaTool queries outside the benchmark's sample (see ``bench/tools.py``); plain
reciprocal rank fusion ignores how far apart the scores are and loses to dense alone.

``w`` (``lexical_weight``) is how much of the query the lexical side can read: of the
query's analysed terms, those in the index's vocabulary against those not,
``min(1, known / unknown)``. BM25 analyses text as English (``heron.store.analysis``), so
a request in another language keeps only a few words the English index knows, mostly by
accident ("me", "com", "en"), and a z-score turns one stray match among all-zero scores
into a large one (about the square root of the number of tools): at full weight it can
outrank every cosine. A query the index knows at least as many terms of as it does not
(almost every English request: on MetaTool a median 0.86 of its terms are known, against
0.12 for the Portuguese and Spanish translations) keeps the full weight and ranks exactly
as without ``w``; below that the lexical side fades to nothing and the ranking leans on
the embedding, which reads whatever languages its model does. There is no constant to
tune, the stored postings are unchanged (``w`` reads their vocabulary) and it costs about
13 us a query. On MetaTool's translations (``bench/multilingual.py``) hybrid Recall@5 had
fallen below dense in three cases of four (MiniLM pt 0.525 against 0.550, e5 pt 0.550
against 0.575, e5 es 0.700 against 0.750); with ``w`` it is at or above dense in all four
(0.575, 0.600, 0.750, MiniLM es 0.575), and every English MetaTool figure is as before or
higher (single-tool Recall@1 0.595 -> 0.596), also over random catalogues of 8 to 50 of
its tools, where English requests know fewer of their words. On the held-out BFCL set
(``bench/heldout_tools.py``, never tuned on) Recall@5 is unchanged (MiniLM 0.929, e5
0.925).

Example requests (``Tool.examples``) move a tool towards the words its users really use,
as example utterances do in intent routers: the tool's vector becomes the normalised sum of
its text's vector and the mean of its examples' vectors, and its BM25 text gains the
examples. On MetaTool five examples a tool lift hybrid Recall@5 from 0.815 to 0.896
(``bench/tools.py``); a tool without examples is scored exactly as before.

The index lives in the store's ``tools`` namespace (one record per tool, its ``text()``,
and one per example): the store skips records whose content hash is unchanged, so only a
changed tool is embedded again. The SHA-256 of the whole index (model id, every tool's
text and examples) is kept in the key-value table with the BM25 postings: when it matches
at start-up, the vectors and postings are read back, and nothing is embedded or analysed.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from heron.core.errors import ToolInputError
from heron.core.names import NameCodec, NameProfile, get_profile
from heron.core.tools import Tool
from heron.embed.base import Embedder, embed_queries
from heron.embed.calibration import MINILM, calibration_of
from heron.errors import NotFound
from heron.store.analysis import query_terms, readable
from heron.store.base import Record, Store
from heron.tools.lexical import BM25

log = logging.getLogger("heron.tools")

RouteMode = Literal["pattern", "semantic", "hybrid"]
ROUTE_MODES: tuple[RouteMode, ...] = ("pattern", "semantic", "hybrid")
DEFAULT_MODE: RouteMode = "hybrid"
DEFAULT_TOP_K = 10
#: MiniLM's routing threshold (the bundled model's); ``ToolRouter`` left without one reads
#: its embedder's (``calibration_of(embedder).route``).
DEFAULT_THRESHOLD = MINILM.route
#: Weight of the cosine side in hybrid routing (tuned on MetaTool, outside its test sample).
ALPHA = 0.8
NAMESPACE = "tools"
#: Besides the tools kept, a route explains this many of the next best that were dropped.
EXPLAIN_DROPPED = 10


@dataclass(frozen=True)
class RoutedTool:
    """One tool's scores for a query and why it was kept or dropped.

    ``name`` is the encoded name the provider sees; ``tool.name`` the original.
    """

    tool: Tool
    name: str
    rank: int
    score: float
    dense_score: float
    lexical_score: float
    kept: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.tool.name,
            "name": self.tool.name,
            "encoded": self.name,
            "rank": self.rank,
            "score": self.score,
            "dense_score": self.dense_score,
            "lexical_score": self.lexical_score,
            "kept": self.kept,
            "reason": self.reason,
            "source": self.tool.source,
        }


@dataclass
class Route:
    """The tools to offer for one query (``tools``), the best of the rest (``dropped``)."""

    query: str
    mode: RouteMode
    profile: NameProfile
    tools: list[RoutedTool]
    dropped: list[RoutedTool]
    warnings: list[str] = field(default_factory=list)

    def payload(self, provider: str | None = None) -> list[dict[str, Any]]:
        """The ``tools`` array of a request, in ``provider``'s wire format (default: the
        route's profile; ``strict`` and ``openai`` give OpenAI's)."""
        flavour = provider or self.profile.name
        out = []
        for routed in self.tools:
            tool = routed.tool
            if flavour == "anthropic":
                out.append(
                    {
                        "name": routed.name,
                        "description": tool.description,
                        "input_schema": tool.parameters,
                    }
                )
            elif flavour == "gemini":
                out.append(
                    {
                        "name": routed.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    }
                )
            else:
                out.append(
                    {
                        "type": "function",
                        "function": {
                            "name": routed.name,
                            "description": tool.description,
                            "parameters": tool.parameters,
                        },
                    }
                )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "profile": self.profile.name,
            "warnings": self.warnings,
            "results": [t.to_dict() for t in self.tools],
            "dropped": [t.to_dict() for t in self.dropped],
        }


@dataclass(frozen=True)
class SyncReport:
    """``embedded``: texts (tools and their examples) whose vectors were computed now;
    ``removed``: records of tools or examples gone; ``unchanged_index``: the index hash
    matched and nothing was even compared."""

    tools: int
    embedded: int
    removed: int
    unchanged_index: bool


def index_hash(model_id: str, names: Sequence[str], texts: Sequence[str]) -> str:
    """SHA-256 over the model id and every (name, text) pair, in the order given."""
    digest = hashlib.sha256(model_id.encode("utf-8"))
    for name, text in zip(names, texts, strict=True):
        digest.update(b"\x00" + name.encode("utf-8") + b"\x01" + text.encode("utf-8"))
    return digest.hexdigest()


def routing_text(tool: Tool) -> str:
    """What BM25 indexes of a tool, and what the index hash covers: its text, then each
    example."""
    return "\n".join((tool.text(), *tool.examples))


def tools_hash(model_id: str, tools: Sequence[Tool]) -> str:
    """The hash a router's index of ``tools`` (in this order) is stored under."""
    return index_hash(model_id, [t.name for t in tools], [routing_text(t) for t in tools])


def stored_hash(store: Store, namespace: str = NAMESPACE) -> str | None:
    """The hash of the tool index ``store`` holds, ``None`` before the first route."""
    return store.kv_get(NAMESPACE, f"index:{namespace}")


def example_id(tool: str, i: int) -> str:
    # The unit separator cannot collide with a tool name any provider or MCP accepts.
    return f"{tool}\x1fexample:{i}"


def _z(values: np.ndarray) -> np.ndarray:
    std = float(values.std())
    return (values - values.mean()) / std if std > 0 else np.zeros_like(values)


class ToolRouter:
    """Routes queries over ``tools``, indexed in ``namespace`` of ``store`` (whose
    ``embedder`` embeds the queries unless one is given).

    >>> router = ToolRouter(registry.tools(), store, profile="openai")   # doctest: +SKIP
    >>> route = router.route("add a contact to the CRM")                  # doctest: +SKIP
    >>> request["tools"] = route.payload()                                # doctest: +SKIP
    >>> router.decode(tool_call.name)                                     # doctest: +SKIP
    Tool(name='osis.contact.create', ...)
    """

    def __init__(
        self,
        tools: Iterable[Tool],
        store: Store,
        *,
        profile: str | NameProfile = "strict",
        mode: RouteMode = DEFAULT_MODE,
        top_k: int = DEFAULT_TOP_K,
        threshold: float | None = None,
        always_include: Iterable[str] = (),
        alpha: float = ALPHA,
        namespace: str = NAMESPACE,
        embedder: Embedder | None = None,
    ) -> None:
        self.tools = sorted(tools, key=lambda t: t.name)
        names = [t.name for t in self.tools]
        if len(set(names)) != len(names):
            raise ToolInputError("Two tools share a name; a registry holds each name once.")
        self.store = store
        # The store embeds tool texts; queries must go through the same model.
        found = embedder or getattr(store, "embedder", None)
        if found is None:
            raise ToolInputError("This store has no embedder; pass ToolRouter(embedder=...).")
        self.embedder: Embedder = found
        self.profile = get_profile(profile)
        self.mode = _check_mode(mode)
        self.top_k = top_k
        # Unset: the model's own, per query (``threshold_for``).
        self.threshold = threshold
        self.alpha = alpha
        self.namespace = namespace
        self.always_include = list(dict.fromkeys(always_include))
        unknown = [n for n in self.always_include if n not in set(names)]
        if unknown:
            raise ToolInputError(
                f"always_include names unknown tools: {', '.join(unknown)}; "
                "list the registered ones with: heron tools list"
            )
        self.codec = NameCodec(names, self.profile)
        self._by_name = {t.name: i for i, t in enumerate(self.tools)}
        self._texts = [routing_text(t) for t in self.tools]
        self.sync_report = self._sync()

    # -- the index -----------------------------------------------------------------------

    def _sync(self) -> SyncReport:
        """Bring the store's index up to date and load the vectors (see module doc)."""
        model_id = self.embedder.model_id
        digest = index_hash(model_id, [t.name for t in self.tools], self._texts)
        key, bm25_key = f"index:{self.namespace}", f"bm25:{self.namespace}"
        if stored_hash(self.store, self.namespace) == digest:
            saved = self.store.kv_get(NAMESPACE, bm25_key)
            try:
                self._vectors = self._load_vectors()
            except NotFound:
                saved = None  # someone deleted records under us: rebuild below
            if saved is not None:
                self._bm25 = BM25.loads(saved)
                return SyncReport(len(self.tools), 0, 0, True)
        records = []
        for tool in self.tools:
            records.append(
                Record(tool.name, tool.text(), {"title": tool.name, "source": tool.source})
            )
            records += [
                Record(example_id(tool.name, i), text, {"tool": tool.name, "example": True})
                for i, text in enumerate(tool.examples)
            ]
        result = self.store.upsert(self.namespace, records) if records else None
        try:
            stale = set(self.store.ids(self.namespace)) - {r.id for r in records}
        except NotFound:
            stale = set()
        if stale:
            self.store.delete(self.namespace, stale)
        self._vectors = self._load_vectors()
        self._bm25 = BM25.build(self._texts)
        # The BM25 postings first: a reader that sees the new hash must find them too.
        self.store.kv_set(NAMESPACE, bm25_key, self._bm25.dumps())
        self.store.kv_set(NAMESPACE, key, digest)
        embedded = (result.added + result.updated) if result else 0
        return SyncReport(len(self.tools), embedded, len(stale), False)

    def _load_vectors(self) -> np.ndarray:
        dim = self.embedder.dim
        vectors = np.empty((len(self.tools), dim), dtype=np.float32)
        for i, tool in enumerate(self.tools):
            vectors[i] = self._vector(tool.name)
            if tool.examples:
                examples = [
                    self._vector(example_id(tool.name, j)) for j in range(len(tool.examples))
                ]
                centroid = vectors[i] + np.mean(examples, axis=0)
                vectors[i] = centroid / max(float(np.linalg.norm(centroid)), 1e-12)
        return vectors

    def _vector(self, record_id: str) -> np.ndarray:
        stored = self.store.get(self.namespace, record_id).vector
        assert stored is not None  # the store always returns the vector
        return stored

    # -- routing -------------------------------------------------------------------------

    def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        return embed_queries(self.embedder, list(queries))

    def route(
        self,
        query: str,
        *,
        mode: RouteMode | None = None,
        top_k: int | None = None,
        vector: np.ndarray | None = None,
    ) -> Route:
        """The tools for ``query``; ``vector`` is its embedding when already computed."""
        return self.route_many(
            [query], mode=mode, top_k=top_k, vectors=None if vector is None else vector[None]
        )[0]

    def route_many(
        self,
        queries: Sequence[str],
        *,
        mode: RouteMode | None = None,
        top_k: int | None = None,
        vectors: np.ndarray | None = None,
    ) -> list[Route]:
        mode = _check_mode(mode or self.mode)
        top_k = self.top_k if top_k is None else top_k
        if top_k < 1:
            raise ToolInputError(f"top_k must be at least 1, got {top_k}.")
        if vectors is None and self.tools:
            vectors = self.embed_queries(queries)
        return [
            self._route(q, mode, top_k, None if vectors is None else vectors[i])
            for i, q in enumerate(queries)
        ]

    def scores(self, query: str, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Cosine, BM25 and fused score of every tool, in ``self.tools`` order."""
        dense = self._vectors @ np.asarray(vector, dtype=np.float32)
        lexical = self._bm25.scores(query)
        weight = (1 - self.alpha) * self.lexical_weight(query)
        fused = self.alpha * _z(dense) + weight * _z(lexical)
        return dense, lexical, fused

    def lexical_weight(self, query: str) -> float:
        """How much of ``query`` BM25 can read (see module doc): ``min(1, known / unknown)``
        over its analysed terms, 1.0 when every term (or none) is in the index."""
        terms = query_terms(query)
        return readable(self._bm25.known(terms), len(terms))

    def threshold_for(self, query: str) -> float:
        """The cosine from which ``query``'s tools are offered: the one given, else that of
        the model that embeds ``query`` (``calibration_of``)."""
        if self.threshold is not None:
            return self.threshold
        return calibration_of(self.embedder, query).route

    def _route(self, query: str, mode: RouteMode, top_k: int, vector: np.ndarray | None) -> Route:
        warnings: list[str] = []
        threshold = self.threshold_for(query)
        limit = self.profile.max_tools
        n = len(self.tools)
        if mode == "pattern":
            if limit is None or n <= limit:
                return self._all(query)
            warnings.append(
                f"{n} tools exceed the {self.profile.name} limit of {limit}: routing in hybrid "
                f"mode instead, keeping the {limit} that fit best."
            )
            log.warning(warnings[-1])
            # Asked for everything: keep as many as fit, however weak their match.
            mode, top_k, threshold = "hybrid", limit, float("-inf")
        if limit is not None and top_k > limit:
            warnings.append(f"top_k {top_k} lowered to the {self.profile.name} limit of {limit}.")
            top_k = limit
        if not n or vector is None:
            return Route(query, mode, self.profile, [], [], warnings)
        dense, lexical, fused = self.scores(query, vector)
        ranking = dense if mode == "semantic" else fused
        order = np.lexsort((np.arange(n), -ranking))
        kept: list[RoutedTool] = []
        dropped: list[RoutedTool] = []
        pinned = [self._by_name[name] for name in self.always_include]
        for i in pinned[:top_k]:
            kept.append(self._routed(i, 0, ranking, dense, lexical, True, "always_include"))
        slots = top_k - len(kept)
        for rank, i in enumerate(order.tolist(), 1):
            if i in pinned:
                continue
            below = dense[i] < threshold and (mode == "semantic" or lexical[i] == 0)
            if below:
                why = f"cosine {dense[i]:.3f} < threshold {threshold}"
                if mode == "hybrid":
                    why += " and no word in common"
            elif slots > 0:
                slots -= 1
                kept.append(self._routed(i, rank, ranking, dense, lexical, True, f"rank {rank}"))
                continue
            else:
                why = f"rank {rank} > top_k {top_k}"
            if len(dropped) < EXPLAIN_DROPPED:
                dropped.append(self._routed(i, rank, ranking, dense, lexical, False, why))
            if slots == 0 and len(dropped) >= EXPLAIN_DROPPED:
                break
        return Route(query, mode, self.profile, kept, dropped, warnings)

    def _routed(
        self,
        i: int,
        rank: int,
        ranking: np.ndarray,
        dense: np.ndarray,
        lexical: np.ndarray,
        kept: bool,
        reason: str,
    ) -> RoutedTool:
        tool = self.tools[i]
        return RoutedTool(
            tool,
            self.codec.encode(tool.name),
            rank,
            float(ranking[i]),
            float(dense[i]),
            float(lexical[i]),
            kept,
            reason,
        )

    def _all(self, query: str) -> Route:
        tools = [
            RoutedTool(t, self.codec.encode(t.name), r, 0.0, 0.0, 0.0, True, "pattern: all tools")
            for r, t in enumerate(self.tools, 1)
        ]
        return Route(query, "pattern", self.profile, tools, [])

    def decode(self, encoded: str) -> Tool:
        """The tool behind a name the model called (``UnknownTool`` if it was not offered)."""
        return self.tools[self._by_name[self.codec.decode(encoded)]]


def _check_mode(mode: str) -> RouteMode:
    if mode not in ROUTE_MODES:
        raise ToolInputError(f"Unknown route mode {mode!r}. Choose from: {', '.join(ROUTE_MODES)}.")
    return mode  # type: ignore[return-value]
