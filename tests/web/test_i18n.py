"""``heron.server.web.i18n``: the catalogues agree, and a request gets the language it asks for."""

from __future__ import annotations

import re

import pytest

from heron.server.web.i18n import CATALOGUES, DEFAULT, LANGUAGES, Messages, negotiate


def test_every_catalogue_has_every_key_with_the_same_placeholders() -> None:
    english = CATALOGUES[DEFAULT]
    for code, messages in CATALOGUES.items():
        assert set(messages) == set(english), code
        for key, text in messages.items():
            holes = set(re.findall(r"\{(\w+)\}", text))
            assert holes == set(re.findall(r"\{(\w+)\}", english[key])), (code, key)


@pytest.mark.parametrize(
    ("header", "code"),
    [
        ("pt-BR,pt;q=0.9,en;q=0.8", "pt-BR"),
        ("pt", "pt-BR"),
        ("en-GB,pt-BR;q=0.5", "en"),
        ("de-DE,pt-BR;q=0.7,en;q=0.3", "pt-BR"),
        ("fr, de", "en"),
        ("", "en"),
        ("pt-BR;q=0, en", "en"),
        ("pt-BR;q=bogus", "en"),
    ],
)
def test_accept_language_chooses_the_catalogue(header: str, code: str) -> None:
    assert negotiate(header) == code


def test_a_message_fills_its_placeholders() -> None:
    assert Messages("pt-BR")("libraries.added", name="docs") == "docs adicionada."
    assert Messages("en")("no.such.key") == "no.such.key"
    assert set(LANGUAGES) == set(CATALOGUES)
