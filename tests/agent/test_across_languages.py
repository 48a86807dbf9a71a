"""A question asked across languages (``heron.agent.retrieval``, ``heron.translate``): a
Spanish or Portuguese question over English pages is searched in English too, said in
``Answer.grounding``; an English question, a question over pages in its own language and
``HERON_LIBRARY_TRANSLATE=false`` search the question as written. Real Apertium (skips
without it, fails in CI)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from heron.agent import Agent, Turn
from heron.libraries import add_library, index_library
from heron.settings import Settings
from heron.wiring import open_agent
from tests.libraries.conftest import write_pages

pytestmark = pytest.mark.usefixtures("apertium")

#: Pages written in Portuguese: a question in Portuguese over them needs no English.
PORTUGUESE = {
    "horta/compostagem.md": (
        "# Compostagem\n\nMisture restos de cozinha com folhas secas e revire a pilha a "
        "cada duas semanas. O composto fica pronto em três meses.\n"
    ),
    "horta/sementes.md": (
        "# Sementes\n\nGuarde as sementes num frasco de vidro bem fechado, num lugar "
        "fresco, seco e escuro, longe da cozinha. As sementes de tomate duram quatro anos; "
        "as de cenoura, só dois. Escreva no frasco o nome da planta e o ano da colheita.\n"
    ),
}


def opened(translate: bool) -> Agent:
    agent = open_agent(Settings(library={"translate": translate}))
    index_library("garden", agent.store, settings=agent.settings)
    return agent


@pytest.fixture
def agents(garden: Path) -> Iterator[tuple[Agent, Agent]]:
    """Agents on the English ``garden`` library: translating, and not."""
    on, off = opened(True), opened(False)
    yield on, off
    on.close()
    off.close()


def test_a_spanish_question_over_english_pages_is_searched_in_english_too(
    agents: tuple[Agent, Agent],
) -> None:
    on, off = agents
    answer = on.ask(Turn("¿Cuándo hay que podar los rosales?"))
    english = answer.grounding.english
    assert english and "rosebushes" in english.lower()
    assert answer.grounding.to_dict()["english"] == english
    assert answer.grounding.query == "¿Cuándo hay que podar los rosales?"
    assert [c.page for c in answer.citations][:1] == ["garden/pruning"]
    assert "late winter" in answer.answer.split("[1]")[0]
    assert "english" not in off.ask(Turn("¿Cuándo hay que podar los rosales?")).grounding.to_dict()
    assert on.ask(Turn("When do I prune roses?")).grounding.english is None


def test_a_question_over_pages_in_its_own_language_is_searched_as_written(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    add_library("horta", str(write_pages(tmp_path / "horta", PORTUGUESE)), Settings())
    agent = open_agent(Settings())
    try:
        index_library("horta", agent.store, settings=agent.settings)
        answer = agent.ask(Turn("Quando o composto fica pronto?"))
    finally:
        agent.close()
    assert answer.grounding.english is None
    assert [c.page for c in answer.citations][:1] == ["horta/compostagem"]
