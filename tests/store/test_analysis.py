"""Golden values of ``heron.store.analysis``: each text in its own language."""

from __future__ import annotations

import importlib.util

import pytest

from heron.store.analysis import analysis_language, analyze, page_language, query_terms
from tests.ci import missing


def test_pages_are_stemmed_in_their_own_language() -> None:
    assert analyze("As configurações do servidor foram alteradas", "pt") == [
        "configur",
        "servidor",
        "alter",
    ]
    assert analyze("Las copias de seguridad se guardan cada noche", "es") == [
        "copi",
        "segur",
        "guard",
        "cad",
        "noch",
    ]
    # As English, the same words kept their inflections and their stopwords.
    assert analyze("As configurações do servidor") == ["configuraçõ", "do", "servidor"]
    assert (
        analyze("The Pods are running", "en") == analyze("The Pods are running") == ["pod", "run"]
    )


def test_a_query_is_analysed_in_each_language_it_may_match() -> None:
    question = "Onde ficam guardadas as cópias?"
    assert query_terms(question, ("pt",)) == ["onde", "fic", "guard", "cóp"]
    assert query_terms(question, ("es",)) == ["onde", "ficam", "guard", "copi"]
    assert query_terms(question, ("en", "pt")) == [
        "ond",
        "ficam",
        "guardada",
        "cópia",
        "onde",
        "fic",
        "guard",
        "cóp",
    ]
    # English alone, as every query was analysed before: unchanged.
    assert query_terms("How do I roll back deployments?") == [
        "how",
        "do",
        "roll",
        "back",
        "deploy",
    ]


@pytest.mark.parametrize(
    ("tag", "code"),
    [("pt-BR", "pt"), ("es_ES", "es"), ("nb", "no"), ("ja", "en"), (None, "en"), ("EN", "en")],
)
def test_tags_map_to_an_analysis(tag: str | None, code: str) -> None:
    assert analysis_language(tag) == code


def test_a_page_is_read_in_its_language_and_english_when_unsure() -> None:
    if importlib.util.find_spec("py3langid") is None:
        missing("py3langid is not installed: pages are then all read as English", "scripts/setup")
    assert (
        page_language("Os pacotes são instalados com o apt, que resolve as dependências.") == "pt"
    )
    spanish = (
        "Los paquetes se instalan con apt, que resuelve las dependencias. Para buscar un "
        "paquete, use la orden apt search seguida del nombre que quiere encontrar."
    )
    assert page_language(spanish) == "es"
    # An English page naming José at the café is English; a page of code is not sure.
    assert page_language("José met the team at the café to plan the next release.") == "en"
    assert page_language("kubectl get pods -o wide") == "en"
