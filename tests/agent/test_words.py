"""Heron's own words: in the asker's language, naming what their door offers."""

from __future__ import annotations

from heron.agent import Agent, Turn
from heron.agent.words import nothing_found, refusal, say, speaks


def test_the_asker_is_answered_in_their_language_english_otherwise() -> None:
    assert speaks("Quantos dias de férias eu tenho por ano?") == "pt"
    assert speaks("¿Qué hago si pierdo mi portátil?") == "es"
    assert speaks("How many vacation days do I get?") == "en"
    assert speaks("Wie viele Urlaubstage habe ich?") == "en"  # not spoken: English
    assert say("closest", "pt").startswith("Estes são os trechos mais próximos")


def test_a_refusal_names_what_the_door_offers_never_a_command_outside_the_cli() -> None:
    for lang in ("en", "pt", "es"):
        cli = nothing_found(["acme"], ["acme"], 0.2, lang=lang, surface="cli", generated=False)
        api = nothing_found(["acme"], ["acme"], 0.2, lang=lang, surface="api", generated=False)
        page = nothing_found(["acme"], ["acme"], 0.2, lang=lang, surface="page", generated=False)
        assert "heron library add" in cli and "--answer generative" in cli
        assert "heron " not in api and '"answer": "generative"' in api
        assert "heron " not in page and "generative" not in page
        assert all(refusal(text) for text in (cli, api, page))
    empty = nothing_found([], [], None, lang="pt", surface="page", generated=False)
    assert empty.startswith("Ainda não há nenhuma biblioteca indexada") and refusal(empty)


def test_an_unrelated_question_is_refused_in_its_own_language(agent: Agent) -> None:
    answer = agent.ask(Turn("Qual é a capital da Austrália?", surface="page"))
    assert answer.citations == [] and answer.answer.startswith("Não encontrei nada")
    assert "heron " not in answer.answer
    assert answer.evidence is not None and answer.evidence.verdict == "unrelated"
