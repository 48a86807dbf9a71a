"""The hybrid's lexical weight: how much of a request the English BM25 index can read."""

from __future__ import annotations

import numpy as np
import pytest

from heron.store import SQLiteStore
from heron.store.analysis import query_terms
from heron.tools import Tool, ToolRouter
from heron.tools.router import ALPHA
from tests.tools import test_router

TOOLS = [
    *test_router.TOOLS,
    Tool("reminders.add", "Remind me about something at a given time."),
    Tool("contacts.add", "Add a person to the address book."),
    Tool("music.play", "Play a song or playlist."),
    Tool("maps.directions", "Driving or walking directions between two places."),
    Tool("news.headlines", "Latest news headlines on a topic."),
    Tool("timer.start", "Start a countdown timer."),
    Tool("notes.create", "Write a note and save it."),
    Tool("photos.search", "Find photos by place or date."),
    Tool("flights.search", "Search flights between airports."),
    Tool("hotels.book", "Book a hotel room."),
    Tool("recipes.find", "Find cooking recipes by ingredient."),
    Tool("calculator", "Evaluate an arithmetic expression."),
    Tool("lights.set", "Turn the lights on or off."),
    Tool("tasks.add", "Add a task to the to-do list."),
]


def z(values: np.ndarray) -> np.ndarray:
    return (values - values.mean()) / values.std()


@pytest.fixture
def router(store: SQLiteStore) -> ToolRouter:
    return ToolRouter(TOOLS, store, threshold=0.0)


@pytest.mark.parametrize(
    ("query", "known", "weight"),
    [
        # Every term in the index: full weight.
        ("send an email message", ["send", "email", "messag"], 1.0),
        # As many known as unknown ("boss", "my"): still full weight.
        ("send an email to my boss", ["send", "email"], 1.0),
        # One of four known: the lexical side reads a third as much as it misses.
        ("what will the weather be in Lisbon tomorrow?", ["weather"], 1 / 3),
        # Portuguese, its stopwords dropped (heron.store.analysis): "email" is the only
        # word the English index knows, 1 against 2 ("envi", "chefe").
        ("Envie um email para o meu chefe", ["email"], 1 / 2),
        # Portuguese: "me", known only by accident ("Remind me ..."), is a Portuguese
        # stopword, dropped before BM25 reads the request: nothing left is known.
        ("Adicione a Maria aos meus contatos e me mostre", [], 0.0),
        # Nothing known, and nothing to read at all.
        ("Quanto custa uma ação da Apple hoje?", [], 0.0),
        ("?!", [], 1.0),
    ],
)
def test_weight_is_known_terms_against_unknown_ones(
    router: ToolRouter, query: str, known: list[str], weight: float
) -> None:
    vocabulary = set(router._bm25.terms)
    assert [t for t in query_terms(query) if t in vocabulary] == known
    assert router.lexical_weight(query) == pytest.approx(weight)


def test_a_request_the_index_reads_ranks_as_plain_fusion(router: ToolRouter) -> None:
    query = "send an email message to a recipient"
    dense, lexical, fused = router.scores(query, router.embed_queries([query])[0])
    assert lexical.max() > 0
    np.testing.assert_allclose(fused, ALPHA * z(dense) + (1 - ALPHA) * z(lexical), rtol=1e-6)
    assert router.route(query, top_k=1).tools[0].tool.name == "mail.send"


def test_a_portuguese_request_leans_on_the_embedding(router: ToolRouter) -> None:
    # A stray English word in another language's request ("time" is Portuguese for
    # team) gets the lexical side a third of its weight: one term known against three.
    query = "Adicione a Maria aos contatos do meu time"
    dense, lexical, fused = router.scores(query, router.embed_queries([query])[0])
    assert lexical.any() and router.lexical_weight(query) == pytest.approx(1 / 3)
    np.testing.assert_allclose(fused, ALPHA * z(dense) + (1 - ALPHA) * z(lexical) / 3, rtol=1e-5)
    # "me" (known only by accident: "Remind me ...") never reaches BM25: a Portuguese
    # stopword; at full weight its one match would have outweighed every cosine.
    query = "Adicione a Maria aos meus contatos e me mostre"
    dense, lexical, fused = router.scores(query, router.embed_queries([query])[0])
    assert not lexical.any()
    assert int(np.argmax(fused)) == int(np.argmax(dense))
    assert (
        router.route(query, top_k=1).tools[0].tool.name == router.tools[int(np.argmax(dense))].name
    )


def test_the_weight_survives_a_restart_on_an_unchanged_index(
    router: ToolRouter, store: SQLiteStore
) -> None:
    again = ToolRouter(TOOLS, store, threshold=0.0)
    assert again.sync_report.unchanged_index
    query = "Envie um email para o meu chefe"
    assert again.lexical_weight(query) == router.lexical_weight(query) == pytest.approx(0.5)
