"""The ``Store`` contract (``heron/store/base.py``), run on every backend.

Each test here runs once per backend: ``[sqlite]`` on a file in a temporary folder,
``[postgres]`` on a fresh database of a real PostgreSQL with pgvector that the tests
start themselves (``tests/postgres.py``). Each store is opened as Heron opens its store,
by ``open_store`` with settings naming the test's database (``HERON_DATABASE_URL``). A
new backend joins by adding its name to ``BACKENDS`` and a line to ``location``. What
only one backend has (SQLite's damaged files and saved HNSW graphs, PostgreSQL's
migrations, counters and reconnects) is tested in ``test_sqlite.py`` and
``test_postgres.py``.
"""

from __future__ import annotations

import json
import multiprocessing
import threading
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from heron.embed import Embedder, MiniLMEmbedder, RemoteEmbedder
from heron.errors import InputError, NamespaceMismatch, NotFound, StoreError
from heron.settings import Settings
from heron.store import (
    SEARCH_MODES,
    NamespaceInfo,
    Record,
    SearchMode,
    Store,
    UpsertResult,
    check_store,
    open_store,
)
from heron.store.analysis import query_terms
from heron.store.sql import FIRST_STEP
from tests.openai_server import serve
from tests.postgres import pg_server, pg_url  # noqa: F401

BACKENDS = ["sqlite", "postgres"]
MODES = SEARCH_MODES

DOCS = [
    Record(
        "pods",
        "A Pod is the smallest deployable unit; it runs one or more containers.",
        {"collection": "concepts", "title": "Pods"},
    ),
    Record(
        "rollback",
        "Roll back a Deployment to a previous revision with kubectl rollout undo.",
        {"collection": "tasks", "title": "Rolling back"},
    ),
    Record(
        "secrets",
        "A Secret holds a small amount of sensitive data such as a password or token.",
        {"collection": "concepts", "title": "Secrets"},
    ),
    Record(
        "cron",
        "A CronJob creates Jobs on a repeating schedule written in cron format.",
        {"collection": "concepts", "title": "CronJob"},
    ),
    Record(
        "scale",
        "Scale a StatefulSet by changing its replicas field with kubectl scale.",
        {"collection": "tasks", "title": "Scaling"},
    ),
]


def open_store_at(location: str, embedder: Embedder) -> Store:
    """The store on ``location``, a ``HERON_DATABASE_URL`` (``sqlite:///PATH`` or
    ``postgresql://...``), as ``open_store`` opens it."""
    return open_store(Settings(database_url=location), embedder)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def location(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The test's database as a ``HERON_DATABASE_URL``; PostgreSQL starts only for
    ``[postgres]``."""
    if backend == "postgres":
        return request.getfixturevalue("pg_url")
    return f"sqlite:///{tmp_path / 'heron.db'}"


@pytest.fixture
def open_backend(location: str) -> Iterator[Callable[[Embedder], Store]]:
    """Opens more stores on the test's database (another model, a second process's
    view); each is closed at the end."""
    opened: list[Store] = []

    def open_(embedder: Embedder) -> Store:
        opened.append(open_store_at(location, embedder))
        return opened[-1]

    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def store(open_backend: Callable[[Embedder], Store], embedder: MiniLMEmbedder) -> Store:
    return open_backend(embedder)


def ids(hits: list) -> list[str]:
    return [h.id for h in hits]


# -- writes and reads -------------------------------------------------------------------


def test_upsert_get_count_ids(store: Store) -> None:
    assert store.upsert("k8s", DOCS) == UpsertResult(5, 0, 0)
    assert store.count("k8s") == 5
    assert store.ids("k8s") == sorted(r.id for r in DOCS)
    record = store.get("k8s", "pods")
    assert (record.id, record.text) == ("pods", DOCS[0].text)
    assert record.metadata == {"collection": "concepts", "title": "Pods"}
    assert record.vector is not None and record.vector.shape == (384,)
    assert record.vector.dtype == np.float32
    assert abs(float(np.linalg.norm(record.vector)) - 1) < 1e-5


def test_second_upsert_of_same_records_embeds_nothing(
    store: Store, embedder: MiniLMEmbedder
) -> None:
    store.upsert("k8s", DOCS)
    calls = embedder.calls
    assert store.upsert("k8s", DOCS) == UpsertResult(0, 0, 5)
    assert embedder.calls == calls


def test_changed_record_is_replaced_whole_and_found(store: Store) -> None:
    store.upsert("k8s", DOCS)
    result = store.upsert("k8s", [Record("cron", "Heron feathers are grey and white.", {})])
    assert result == UpsertResult(0, 1, 0)
    assert store.search("k8s", "grey feathers of a heron", top_k=1)[0].id == "cron"
    assert store.get("k8s", "cron").metadata == {}
    assert store.search("k8s", "cron schedule", mode="lexical", filters={"title": "CronJob"}) == []
    assert store.count("k8s") == 5


def test_a_repeated_id_in_one_batch_counts_once_and_the_last_wins(store: Store) -> None:
    result = store.upsert("k8s", [Record("a", "first"), Record("b", "other"), Record("a", "last")])
    assert result == UpsertResult(2, 0, 1)
    assert store.get("k8s", "a").text == "last"


def test_progress_is_called_after_each_batch(store: Store) -> None:
    vectors = np.random.default_rng(1).standard_normal((300, 384)).astype(np.float32)
    seen: list[int] = []
    records = (Record(f"r{i}", f"record {i}", {}, vector=v) for i, v in enumerate(vectors))
    assert store.upsert("many", records, progress=seen.append).added == 300
    assert seen == [256, 44]


def test_progress_is_told_as_records_embed(store: Store) -> None:
    """A bar moves within a batch: the records it embeds are told in steps, before the
    batch's one write; the unchanged ones once it is written."""
    records = [Record(f"r{i}", f"Note {i}: rotate the VPN password.") for i in range(40)]
    seen: list[int] = []
    assert store.upsert("notes", records, progress=seen.append).added == 40
    assert len(seen) > 1 and sum(seen) == 40 and seen[0] == FIRST_STEP
    edited = [
        Record(r.id, r.text + " Ask the helpdesk.") if i % 2 else r for i, r in enumerate(records)
    ]
    seen.clear()
    assert store.upsert("notes", edited, progress=seen.append) == UpsertResult(0, 20, 20)
    assert len(seen) > 2 and sum(seen) == 40 and seen[-1] == 20  # the unchanged, last


def test_given_vectors_skip_the_embedder(store: Store, embedder: MiniLMEmbedder) -> None:
    vector = embedder.embed(["custom vector"])[0] * 3  # any length: the store normalises
    calls = embedder.calls
    store.upsert("k8s", [Record("v", "text that is not embedded", {}, vector=vector)])
    assert embedder.calls == calls
    np.testing.assert_allclose(store.get("k8s", "v").vector, vector / 3, atol=1e-6)


def test_metadata_round_trips_as_json(store: Store) -> None:
    meta = {
        "collection": "c",
        "tags": ["a", "b"],
        "nested": {"x": 1, "y": [1.5, None, True]},
        "unicode": "héron ✓",
        "empty": {},
    }
    store.upsert("k8s", [Record("m", "text", meta)])
    assert store.get("k8s", "m").metadata == json.loads(json.dumps(meta))
    assert store.search("k8s", "text", mode="dense")[0].metadata == meta


def test_empty_huge_and_unicode_texts(store: Store) -> None:
    store.upsert(
        "k8s",
        [
            Record("empty", ""),
            Record("huge", "node " * 50_000),
            Record("quote", "it's O'Brien's \\ back-slashed naïve café", {"title": "Ünïcode"}),
        ],
    )
    assert store.count("k8s") == 3
    assert store.search("k8s", "node", mode="lexical")[0].id == "huge"
    assert store.search("k8s", "O'Brien café", mode="lexical")[0].id == "quote"
    assert store.search("k8s", "naive cafe", mode="lexical")[0].id == "quote"
    assert store.get("k8s", "empty").text == ""


def test_bad_records_are_rejected_and_nothing_of_the_batch_is_written(store: Store) -> None:
    store.upsert("k8s", DOCS[:1])
    nan = np.full(384, np.nan, dtype=np.float32)
    for bad, message in [
        (Record("x", "t", {}, vector=nan), "NaN or infinity"),
        (Record("x", "t", {}, vector=np.ones(3)), "shape"),
        (Record("x", "t", {}, vector=np.zeros(384)), "zero vector"),
        (Record("", "t"), "non-empty string"),
        (Record(7, "t"), "non-empty string"),  # type: ignore[arg-type]
        (Record("x", None), "text must be a string"),  # type: ignore[arg-type]
        (Record("x", "t", ["not", "a", "dict"]), "JSON object"),  # type: ignore[arg-type]
        (Record("x", "t", {"score": float("nan")}), "not valid JSON"),
        (Record("x", "t", {"when": object()}), "not valid JSON"),
    ]:
        with pytest.raises(InputError, match=message):
            store.upsert("k8s", [DOCS[1], bad])
    assert store.ids("k8s") == ["pods"]


def test_delete_removes_from_every_search(store: Store) -> None:
    store.upsert("k8s", DOCS)
    assert store.delete("k8s", ["rollback", "missing"]) == 1
    assert store.delete("k8s", []) == 0
    for mode in MODES:
        assert "rollback" not in ids(store.search("k8s", "rollout undo", mode=mode))
    with pytest.raises(NotFound, match="No record 'rollback' in namespace 'k8s'"):
        store.get("k8s", "rollback")
    assert store.count("k8s") == 4
    assert store.upsert("k8s", DOCS) == UpsertResult(1, 0, 4)  # it can come back


def test_namespaces_are_listed_by_name_with_their_counts(store: Store) -> None:
    for name, records in [("b", DOCS[:2]), ("B", DOCS[:1]), ("a.1", DOCS)]:
        store.upsert(name, records)
    store.kv_set("state-only", "k", "v")
    assert store.namespaces() == [
        NamespaceInfo("B", store.embedder.model_id, 384, 1),
        NamespaceInfo("a.1", store.embedder.model_id, 384, 5),
        NamespaceInfo("b", store.embedder.model_id, 384, 2),
    ]


def test_ids_are_sorted_in_code_point_order(store: Store) -> None:
    names = ["b", "B", "é", "a-2", "a_1", "10", "9"]
    store.upsert("k8s", [Record(name, f"text {name}") for name in names])
    assert store.ids("k8s") == sorted(names)


# -- search -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("query", "expected"),
    [("undo a deployment rollout", "rollback"), ("store a password securely", "secrets")],
)
def test_each_mode_finds_the_obvious_record(
    store: Store, mode: SearchMode, query: str, expected: str
) -> None:
    store.upsert("k8s", DOCS)
    hits = store.search("k8s", query, mode=mode, top_k=3)
    assert hits[0].id == expected
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(a.score >= b.score for a, b in pairwise(hits))


def test_hits_expose_component_scores_and_ranks(store: Store) -> None:
    store.upsert("k8s", DOCS)
    top = store.search("k8s", "kubectl rollout undo deployment", mode="hybrid", top_k=5)[0]
    assert top.dense_rank == 1 and top.lexical_rank == 1
    assert 0 < top.dense_score <= 1 and top.lexical_score > 0
    dense = store.search("k8s", "kubectl rollout undo", mode="dense")[0]
    assert dense.lexical_score is None and dense.score == dense.dense_score
    assert dense.lexical_rank is None and dense.dense_rank == 1
    lexical = store.search("k8s", "kubectl rollout undo", mode="lexical")[0]
    assert lexical.dense_score is None and lexical.score == lexical.lexical_score
    assert set(top.to_dict()) >= {"id", "score", "rank", "metadata", "text"}
    # Hybrid hits carry the stored vector the search had in hand (a pool of several
    # libraries fuses them again with feedback); it is never serialised.
    hybrid = store.search("k8s", "kubectl rollout undo deployment", mode="hybrid", top_k=5)
    for hit in hybrid:
        assert hit.vector is not None
        np.testing.assert_allclose(hit.vector, store.get("k8s", hit.id).vector, atol=1e-6)
    assert "vector" not in top.to_dict() and dense.vector is None


def test_lexical_uses_stemming_and_ignores_stopwords(store: Store) -> None:
    store.upsert("k8s", DOCS)
    assert store.search("k8s", "the scaling of replicas", mode="lexical")[0].id == "scale"
    assert store.search("k8s", "the of and", mode="lexical") == []
    # Hybrid search still has its dense side when no word counts.
    hybrid = store.search("k8s", "the of and", mode="hybrid", top_k=5)
    assert len(hybrid) == 5 and all(h.lexical_rank is None for h in hybrid)


#: Pages in three languages, each tagged as the library indexer tags a page it read.
TONGUES = [
    Record(
        "correio",
        "A configuração do servidor de correio fica em /etc/postfix.",
        {"title": "Servidor de correio", "language": "pt"},
    ),
    Record(
        "copias",
        "Las copias de seguridad se guardan cada noche en el disco externo.",
        {"title": "Copias de seguridad", "language": "es"},
    ),
    Record(
        "mail",
        "The mail server's configuration lives in /etc/postfix.",
        {"title": "Mail server"},
    ),
]


def test_each_record_is_analysed_in_its_own_language(store: Store) -> None:
    store.upsert("docs", TONGUES)
    # Portuguese's stemmer makes "configurar" and "configuração" one term ("configur"),
    # English's kept them apart; the English page's "configuration" is English's
    # "configur" too, so it matches that word alone.
    found = store.search("docs", "Como configurar o servidor de correio?", mode="lexical")
    assert ids(found) == ["correio", "mail"]
    # Spanish's: "guardadas" and "guardan" (guard), "copias" and "copias" (copi).
    found = store.search("docs", "¿Dónde quedan guardadas las copias?", mode="lexical")
    assert ids(found) == ["copias"]
    # A page's own stopwords are not indexed: "para", "os" and "em" are no terms.
    assert store.search("docs", "para os em", mode="lexical") == []
    # An English question is analysed as each page's language: English's "configuration"
    # and Portuguese's "configuração" are both "configur", so it finds both pages.
    terms = ["postfix", "configur", "configuration"]
    assert query_terms("postfix configuration", ("en", "es", "pt")) == terms
    found = store.search("docs", "postfix configuration", mode="lexical")
    assert sorted(ids(found)) == ["correio", "mail"]
    assert store.get("docs", "correio").metadata["language"] == "pt"


def test_a_tag_without_a_stemmer_of_its_own_is_analysed_as_english(store: Store) -> None:
    store.upsert("docs", [Record("ja", "Running pods restart", {"language": "ja"})])
    assert ids(store.search("docs", "run pod", mode="lexical")) == ["ja"]
    store.upsert("docs", [Record("br", "Executando os pods", {"language": "pt-BR"})])
    assert ids(store.search("docs", "executar", mode="lexical")) == ["br"]


@pytest.mark.parametrize("mode", MODES)
def test_search_many_equals_single_searches(store: Store, mode: SearchMode) -> None:
    store.upsert("k8s", DOCS)
    queries = ["sensitive password", "repeating schedule", "kubectl", "the of"]
    many = store.search_many("k8s", queries, mode=mode, top_k=3)
    single = [store.search("k8s", q, mode=mode, top_k=3) for q in queries]
    assert [[(h.id, h.rank) for h in hits] for hits in many] == [
        [(h.id, h.rank) for h in hits] for hits in single
    ]
    for a, b in zip(many, single, strict=True):
        np.testing.assert_allclose([h.score for h in a], [h.score for h in b], rtol=1e-5)


def test_a_given_query_vector_skips_the_embedder(store: Store, embedder: MiniLMEmbedder) -> None:
    store.upsert("k8s", DOCS)
    vector = embedder.embed(["store a password securely"])[0]
    calls = embedder.calls
    for shape in [(384,), (1, 384)]:
        hits = store.search("k8s", "password", vector=vector.reshape(shape), mode="hybrid")
        assert hits[0].id == "secrets"
    assert embedder.calls == calls


@pytest.mark.parametrize("mode", MODES)
def test_filters(store: Store, mode: SearchMode) -> None:
    store.upsert("k8s", DOCS)
    hits = store.search("k8s", "kubectl", mode=mode, filters={"collection": "tasks"})
    assert hits and {h.metadata["collection"] for h in hits} == {"tasks"}
    assert store.search("k8s", "kubectl", mode=mode, filters={"collection": "nope"}) == []
    both = {"collection": "tasks", "title": "Scaling"}
    assert ids(store.search("k8s", "kubectl scale", mode=mode, filters=both)) == ["scale"]


def test_filter_values_fields_and_errors(store: Store) -> None:
    store.upsert(
        "k8s",
        [
            *DOCS,
            Record("nested", "kubectl nested", {"source": {"kind": "web"}, "n": 3}),
            Record("tagged", "kubectl tagged", {"tags": ["a", "b"], "flag": True}),
        ],
    )
    concepts_or_tasks = {"collection": ["tasks", "concepts"]}
    either = store.search("k8s", "data", mode="dense", filters=concepts_or_tasks)
    assert len(either) == 5
    assert ids(store.search("k8s", "kubectl", filters={"source.kind": "web"})) == ["nested"]
    assert ids(store.search("k8s", "kubectl", filters={"n": 3})) == ["nested"]
    assert ids(store.search("k8s", "kubectl", filters={"flag": True})) == ["tagged"]
    # A field holding a list is compared whole, not by its members.
    assert store.search("k8s", "kubectl", filters={"tags": "a"}) == []
    with pytest.raises(InputError, match="Invalid filter field"):
        store.search("k8s", "x", filters={"a'); DROP TABLE records; --": 1})
    with pytest.raises(InputError, match="lists no values"):
        store.search("k8s", "x", filters={"collection": []})


def test_top_k_bounds(store: Store) -> None:
    store.upsert("k8s", DOCS)
    for mode in MODES:
        assert len(store.search("k8s", "kubectl", mode=mode, top_k=1)) == 1
        with pytest.raises(InputError, match="top_k must be at least 1"):
            store.search("k8s", "kubectl", mode=mode, top_k=0)
    assert len(store.search("k8s", "kubectl", mode="dense", top_k=500)) == 5
    assert len(store.search("k8s", "kubectl", mode="hybrid", top_k=500)) == 5
    lexical = store.search("k8s", "kubectl", mode="lexical", top_k=500)
    assert sorted(ids(lexical)) == ["rollback", "scale"]  # only records the words match


def test_equal_scores_are_ordered_by_when_records_were_first_stored(store: Store) -> None:
    twins = [Record(name, "Identical twins share one text.", {"title": "Twin"}) for name in "zma"]
    store.upsert("k8s", [*twins, *DOCS])
    for mode in MODES:
        hits = store.search("k8s", "identical twins", mode=mode, top_k=3)
        assert ids(hits) == ["z", "m", "a"], mode
        assert hits[0].score == hits[1].score == hits[2].score
    # An update keeps a record's place; a record deleted and stored again goes last.
    store.upsert("k8s", [Record("z", twins[0].text, {"title": "Twin", "v": 2})])
    store.delete("k8s", ["m"])
    store.upsert("k8s", [twins[1]])
    for mode in MODES:
        assert ids(store.search("k8s", "identical twins", mode=mode, top_k=3)) == ["z", "a", "m"]


def test_a_namespace_whose_records_are_gone_finds_nothing(store: Store) -> None:
    store.upsert("k8s", DOCS)
    assert store.delete("k8s", [r.id for r in DOCS]) == 5
    assert (store.count("k8s"), store.ids("k8s")) == (0, [])
    for mode in MODES:
        assert store.search("k8s", "kubectl", mode=mode) == []
        assert store.search_many("k8s", ["a", "b"], mode=mode) == [[], []]
    assert store.namespaces()[0].count == 0


# -- errors -----------------------------------------------------------------------------


def test_a_missing_namespace_or_record_is_not_found(store: Store) -> None:
    for call in [
        lambda: store.search("nope", "x"),
        lambda: store.count("nope"),
        lambda: store.ids("nope"),
        lambda: store.get("nope", "pods"),
        lambda: store.delete("nope", ["pods"]),
        lambda: store.drop("nope"),
    ]:
        with pytest.raises(NotFound, match="No namespace 'nope'"):
            call()
    store.upsert("k8s", DOCS[:1])
    with pytest.raises(NotFound, match="namespaces: k8s"):
        store.search("nope", "x")
    with pytest.raises(KeyError):  # NotFound is a KeyError too
        store.get("k8s", "missing")


def test_bad_arguments_are_input_errors_before_anything_is_read(store: Store) -> None:
    with pytest.raises(InputError, match="Choose from: dense, lexical, hybrid"):
        store.search("nope", "x", mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="top_k must be at least 1"):
        store.search("nope", "x", top_k=-1)
    with pytest.raises(InputError, match="Invalid filter field"):
        store.search("nope", "x", filters={"bad field": 1})
    for name in ["../etc", "", "-x", "a" * 129, "a b"]:
        with pytest.raises(InputError, match="Invalid namespace"):
            store.upsert(name, DOCS[:1])
    store.upsert("k8s", DOCS)
    bad_vectors = [
        (np.ones((2, 384)), "2 vectors for 1 queries"),
        (np.ones((1, 8)), "shape"),
        (np.full((1, 384), np.inf), "NaN or infinity"),
    ]
    for vectors, message in bad_vectors:
        for namespace in ("k8s", "nope"):
            with pytest.raises(InputError, match=message):
                store.search_many(namespace, ["x"], mode="dense", vectors=vectors)
    assert store.namespaces()[0].name == "k8s"


def test_a_namespace_of_another_model_is_refused_until_dropped(
    store: Store, open_backend: Callable[[Embedder], Store]
) -> None:
    store.upsert("k8s", DOCS[:1])
    store.kv_set("k8s", "page:a", "h")
    with serve(dim=8) as (url, _):
        other = open_backend(RemoteEmbedder(url, "other-model"))
        for call in [
            lambda: other.search("k8s", "pods"),
            lambda: other.upsert("k8s", [Record("b", "text")]),
            lambda: other.count("k8s"),
            lambda: other.get("k8s", "pods"),
            lambda: other.delete("k8s", ["pods"]),
        ]:
            with pytest.raises(NamespaceMismatch, match=r"384 dims.*heron store drop k8s"):
                call()
        assert other.kv_get("k8s", "page:a") == "h"  # state is not the model's
        assert [ns.name for ns in other.namespaces()] == ["k8s"]
        other.drop("k8s")
        other.upsert("k8s", [Record("b", "text")])
        assert other.get("k8s", "b").vector.shape == (8,)
        assert ids(other.search("k8s", "text", mode="dense")) == ["b"]
        assert ids(other.search("k8s", "text", mode="hybrid")) == ["b"]
    with pytest.raises(NamespaceMismatch, match="other-model"):
        store.search("k8s", "pods")


# -- key-value state and drop -----------------------------------------------------------


def test_key_value_state(store: Store) -> None:
    store.kv_set("k8s", "page:a", "hash1")
    store.kv_set("k8s", "page:a", "hash2")
    store.kv_set("k8s", "page:b", "hash3")
    store.kv_set("k8s", "page%", "wild")  # a prefix is not a pattern
    store.kv_set("k8s", "other", "x")
    store.kv_set("elsewhere", "page:c", "y")
    assert store.kv_get("k8s", "page:a") == "hash2"
    assert store.kv_get("k8s", "missing") is None
    assert store.kv_items("k8s", "page:") == {"page:a": "hash2", "page:b": "hash3"}
    assert list(store.kv_items("k8s")) == ["other", "page%", "page:a", "page:b"]
    store.kv_delete("k8s", "page:a")
    store.kv_delete("k8s", "never-set")
    assert store.kv_get("k8s", "page:a") is None
    assert store.kv_get("elsewhere", "page:c") == "y"


def test_drop_forgets_everything(store: Store) -> None:
    store.upsert("k8s", DOCS)
    store.upsert("keep", DOCS[:1])
    store.kv_set("k8s", "a", "b")
    store.drop("k8s")
    assert [ns.name for ns in store.namespaces()] == ["keep"]
    assert store.kv_get("k8s", "a") is None
    with pytest.raises(NotFound, match="No namespace 'k8s'"):
        store.search("k8s", "pods")
    assert store.upsert("k8s", DOCS[:2]) == UpsertResult(2, 0, 0)
    assert ids(store.search("k8s", "pods", mode="lexical")) == ["pods"]
    assert store.count("keep") == 1


def test_drop_clears_state_of_a_namespace_without_records(store: Store) -> None:
    store.kv_set("pending", "page:a", "h")
    store.drop("pending")
    assert store.kv_get("pending", "page:a") is None
    with pytest.raises(NotFound, match="No namespace 'pending'"):
        store.drop("pending")


# -- sharing and lifetime ---------------------------------------------------------------


def test_a_second_store_sees_writes_of_the_first(
    store: Store, open_backend: Callable[[Embedder], Store], embedder: MiniLMEmbedder
) -> None:
    other = open_backend(embedder)
    store.upsert("k8s", DOCS[:2])
    assert {h.id for h in other.search("k8s", "pods", mode="dense")} == {"pods", "rollback"}
    store.upsert("k8s", DOCS[2:])
    store.delete("k8s", ["pods"])
    for mode in MODES:
        found = {h.id for h in other.search("k8s", "kubectl pods", mode=mode)}
        assert "pods" not in found and found <= {r.id for r in DOCS[1:]}
    assert {h.id for h in other.search("k8s", "pods", mode="dense")} == {r.id for r in DOCS[1:]}
    other.kv_set("k8s", "from", "other")
    assert store.kv_get("k8s", "from") == "other"


def _writer(location: str, worker: int, count: int) -> None:
    store = open_store_at(location, MiniLMEmbedder(Settings().models_dir, threads=1))
    for i in range(count):
        vector = np.random.default_rng(worker * 1000 + i).standard_normal(384)
        store.upsert(
            "shared", [Record(f"w{worker}-{i}", f"worker {worker} item {i}", {}, vector=vector)]
        )
        store.kv_set("shared", f"w{worker}-{i}", "done")
    store.close()


def test_two_processes_writing_at_once_lose_nothing(store: Store, location: str) -> None:
    store.upsert("shared", [Record("seed", "seed")])
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(location, w, 40)) for w in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(180)
        assert worker.exitcode == 0
    assert store.count("shared") == 81
    assert len(store.kv_items("shared", "w")) == 80
    assert len(store.search("shared", "worker item", mode="dense", top_k=100)) == 81
    assert len(store.search("shared", "worker item", mode="lexical", top_k=100)) == 80
    check_store(store)


def test_threads_sharing_one_store_lose_nothing(store: Store) -> None:
    rng = np.random.default_rng(7)
    store.upsert("shared", [Record("seed", "seed", {}, vector=rng.standard_normal(384))])
    vectors = rng.standard_normal((4, 30, 384)).astype(np.float32)
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(30):
                record = Record(f"t{t}-{i}", f"thread {t} note {i}", {"t": t}, vector=vectors[t, i])
                store.upsert("shared", [record])
                hits = store.search("shared", "thread note", vector=vectors[t, i], top_k=3)
                assert hits and hits[0].id == record.id
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    assert store.count("shared") == 121
    assert len(store.search("shared", "thread", mode="lexical", filters={"t": 2}, top_k=50)) == 30


def test_searches_while_another_store_writes_never_fail(
    store: Store, open_backend: Callable[[Embedder], Store], embedder: MiniLMEmbedder
) -> None:
    """Every record holds the query's word, so a search whose counts came from two
    moments (before and after a write) would see more matches than records."""
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((150, 384)).astype(np.float32)
    store.upsert("live", [Record("r0", "alpha beta", {}, vector=vectors[0])])
    writer = open_backend(embedder)
    done = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for i in range(1, 150):
                writer.upsert("live", [Record(f"r{i}", f"alpha {i}", {}, vector=vectors[i])])
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=write)
    thread.start()
    searches = 0
    while not done.is_set() or searches < 20:
        for mode in ("lexical", "hybrid"):
            try:
                hits = store.search("live", "alpha", mode=mode, vector=vectors[0], top_k=5)
                assert hits, mode
            except BaseException as exc:  # reported below
                errors.append(exc)
        searches += 1
    thread.join(60)
    assert errors == []
    assert store.count("live") == 150


def test_close_is_idempotent_and_a_closed_store_says_so(store: Store) -> None:
    store.upsert("k8s", DOCS[:1])
    store.search("k8s", "pods", mode="hybrid")  # starts the hybrid worker
    store.close()
    store.close()
    for call in [
        lambda: store.search("k8s", "pods"),
        lambda: store.count("k8s"),
        lambda: store.upsert("k8s", DOCS[1:2]),
        lambda: store.kv_get("k8s", "a"),
        lambda: store.namespaces(),
    ]:
        with pytest.raises(StoreError, match="closed; open the store again"):
            call()
