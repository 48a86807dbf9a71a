"""``MultilingualEmbedder``: each query read by its language's model, exactly as that
model alone would score it, in one index; the default profile where e5 is installed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from heron.embed import (
    E5,
    MINILM,
    E5OnnxEmbedder,
    MiniLMEmbedder,
    MultilingualEmbedder,
    calibration_of,
    embed_queries,
    load_embedder,
    query_space,
)
from heron.embed.e5_onnx import ensure_graph
from heron.errors import ModelError
from heron.language import is_english
from heron.server.doors.embeddings import EmbeddingRequest, cost_of, model_of, texts_of
from heron.settings import Settings
from heron.store import Record
from heron.store.fusion import rocchio
from tests.conftest import sqlite_store

PASSAGES = [
    "kubectl rollout undo reverts a Deployment to its previous revision.",
    "A Service exposes a set of Pods as one network endpoint.",
    "Secrets hold passwords and tokens; mount them as files or environment variables.",
    "The VPN password rotates every 90 days; request a new one from the IT portal.",
]
ENGLISH = ["how do I roll back a deployment?", "kubectl rollout undo", "vpn password"]
OTHER = [
    "como faço para reverter uma implantação?",
    "¿cómo expongo un conjunto de pods en la red?",
    "onde guardo as senhas da aplicação?",
]


@pytest.fixture(scope="module")
def e5() -> Iterator[E5OnnxEmbedder]:
    with E5OnnxEmbedder(ensure_graph(Settings().models_dir), threads=1) as model:
        yield model


@pytest.fixture(scope="module")
def both(embedder: MiniLMEmbedder, e5: E5OnnxEmbedder) -> MultilingualEmbedder:
    return MultilingualEmbedder(embedder, lambda: e5, e5.model_id)


def test_a_query_scores_passages_exactly_as_its_languages_model_alone(
    both: MultilingualEmbedder, embedder: MiniLMEmbedder, e5: E5OnnxEmbedder
) -> None:
    passages = both.embed(PASSAGES)
    assert passages.shape == (4, 768)
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    for queries, model in ((ENGLISH, embedder), (OTHER, e5)):
        expected = embed_queries(model, queries) @ model.embed(PASSAGES).T
        np.testing.assert_allclose(embed_queries(both, queries) @ passages.T, expected, atol=1e-5)


def test_english_is_the_fallback_and_other_languages_need_a_confident_label() -> None:
    assert all(is_english(q) for q in ENGLISH)
    assert not any(is_english(q) for q in OTHER)
    assert is_english("")  # nothing to tell: the English model
    assert is_english("CrashLoopBackOff")
    # Short texts get no confident label either way; English must not be a distant guess.
    assert all(is_english(q) for q in ("pdf", "hiring process", "docker compose up"))
    assert not any(is_english(q) for q in ("hacer un gif", "organizar meus recibos"))


def test_each_query_is_judged_on_its_models_scale(both: MultilingualEmbedder) -> None:
    assert calibration_of(both) is MINILM  # with no query: the English model's
    assert calibration_of(both, ENGLISH[0]) is MINILM
    across = calibration_of(both, OTHER[0])  # e5's, lowered: the passage is in English
    assert across.docs == pytest.approx(E5.docs - 0.034) and across.spread == E5.spread


def test_feedback_and_comparisons_stay_in_the_querys_model(
    both: MultilingualEmbedder, embedder: MiniLMEmbedder
) -> None:
    """Rocchio (the store's hybrid) and the extractive answer's sentence comparisons see
    what MiniLM alone sees for an English query."""
    query = embed_queries(both, ENGLISH[:1])[0]
    alone = embedder.embed(ENGLISH[:1])[0]
    unit, parts = query_space(query, both.embed(PASSAGES), both.splits)
    np.testing.assert_allclose(unit[:384], alone, atol=1e-6)
    np.testing.assert_allclose(parts[:, :384], embedder.embed(PASSAGES), atol=1e-5)
    assert not parts[:, 384:].any()
    moved = rocchio(query, both.embed(PASSAGES[:1]), splits=both.splits)
    np.testing.assert_allclose(moved[:384], rocchio(alone, embedder.embed(PASSAGES[:1])), atol=1e-5)
    assert not moved[384:].any()
    # A model of one part is left as it is, zeros and all.
    assert np.array_equal(query_space(np.array([1.0, 0.0]), np.eye(2))[1], np.eye(2))
    same, rows = query_space(alone, embedder.embed(PASSAGES))
    assert same is not None and np.array_equal(same, alone)
    assert np.array_equal(rows, embedder.embed(PASSAGES))


def test_a_store_ranks_each_language_as_its_model_does(
    tmp_path: Path, both: MultilingualEmbedder, embedder: MiniLMEmbedder, e5: E5OnnxEmbedder
) -> None:
    records = [Record(str(i), text) for i, text in enumerate(PASSAGES)]
    orders = {}
    for name, model in (("both", both), ("minilm", embedder), ("e5", e5)):
        with sqlite_store(tmp_path / f"{name}.db", model) as store:
            store.upsert("docs", records)
            orders[name] = [
                [hit.id for hit in hits]
                for hits in store.search_many("docs", ENGLISH + OTHER, top_k=4)
            ]
    assert orders["both"][:3] == orders["minilm"][:3]
    assert orders["both"][3:] == orders["e5"][3:]
    assert [hits[0] for hits in orders["both"][3:]] == ["0", "1", "2"]


def test_the_default_profile_is_multilingual_where_e5_is_installed(
    home: Path, default_profile: None
) -> None:
    settings = Settings()
    assert settings.embed.embedder == "auto" and settings.embed.profile == "multilingual"
    with load_embedder(settings) as model:
        assert isinstance(model, MultilingualEmbedder)
        assert model.model_id.startswith("all-MiniLM-L6-v2-dynamic-int8+multilingual-e5-small")
        assert model.tokenizer is not None  # chunks are cut to MiniLM's input
    assert Settings(embed={"embedder": "minilm"}).embed.profile == "minilm"


def test_the_second_model_loads_on_first_need_and_must_be_the_one_named(
    embedder: MiniLMEmbedder, e5: E5OnnxEmbedder
) -> None:
    made: list[E5OnnxEmbedder] = []

    def load() -> E5OnnxEmbedder:
        made.append(e5)
        return e5

    pair = MultilingualEmbedder(embedder, load, e5.model_id)
    embed_queries(pair, ENGLISH)
    assert not made  # English searches never load e5
    pair.prepare()  # what an index calls before its chunk bar starts
    assert made == [e5]
    embed_queries(pair, OTHER[:1])
    pair.embed(PASSAGES[:1])
    assert made == [e5]  # once
    pair.close()
    with pytest.raises(ModelError, match="was closed"):
        pair.embed(PASSAGES[:1])
    wrong = MultilingualEmbedder(embedder, lambda: embedder, e5.model_id)
    with pytest.raises(ModelError, match="expected multilingual-e5-small"):
        wrong.embed(PASSAGES[:1])


def test_the_embeddings_route_weighs_a_request_by_what_the_pair_costs(
    both: MultilingualEmbedder, embedder: MiniLMEmbedder
) -> None:
    request = EmbeddingRequest(model="m", input=["the scheduler binds pods " * 10] * 80)
    assert isinstance(texts_of(request, 8192, cost_of(embedder)), list)
    refused = texts_of(request, 8192, cost_of(both))
    assert isinstance(refused, str) and "over the 2,340 one request may send" in refused
    served = model_of(both)  # the pair, for a client, as Heron stores it
    assert isinstance(served, MultilingualEmbedder) and served.model_id == both.model_id
