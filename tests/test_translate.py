"""A question's English reading by Debian's Apertium (``heron.translate``): real Apertium
and its language pairs, which ``scripts/setup`` installs; without them these tests skip
with the reason, and fail in CI."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from heron import translate
from heron.translate import languages, modes, to_english


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test reads the machine again (the modes and translations are cached) and
    starts with no failure behind it."""
    monkeypatch.setattr(translate, "_failed_at", -translate.PAUSE)
    modes.cache_clear()
    translate._translated.cache_clear()
    yield
    modes.cache_clear()
    translate._translated.cache_clear()


def test_spanish_and_portuguese_questions_are_read_in_english(apertium: None) -> None:
    spanish = to_english("¿Cuál es el horario del soporte técnico?", "es")
    assert spanish is not None and {"schedule", "technical", "support"} <= set(
        spanish.lower().rstrip("?").split()
    )
    # Portuguese goes through Spanish: Debian ships no Portuguese-English pair.
    portuguese = to_english("Quanto custa o estacionamento por mês?", "pt")
    assert portuguese is not None and "month" in portuguese.lower()
    # Apertium's own marks for words it cannot generate are left out; its escapes too.
    assert "#" not in (to_english("Eu quero as férias [1] ^a/b$", "pt") or "#")


def test_a_language_without_a_route_is_not_translated(apertium: None) -> None:
    assert to_english("Wie spät ist es?", "de") is None
    assert to_english("What time is it?", "en") is None


def test_a_failing_pair_is_logged_and_the_question_stands(
    apertium: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A route naming a mode the machine lists but cannot run: Apertium exits with an error.
    monkeypatch.setattr(translate, "ROUTES", {"es": ("spa-eng", "eng-nope")})
    monkeypatch.setattr(translate, "modes", lambda: frozenset({"spa-eng", "eng-nope"}))
    with caplog.at_level(logging.WARNING, logger="heron.translate"):
        assert to_english("¿Dónde está la oficina?", "es") is None
    assert "Apertium failed" in caplog.text and "searched as written for 60 s" in caplog.text
    # For a while after, nothing is translated (a hung Apertium is not waited on again)...
    monkeypatch.setattr(translate, "ROUTES", {"es": ("spa-eng",)})
    assert to_english("¿Dónde está la oficina?", "es") is None
    # ... and the failure was not kept: once the pause is over, the question is read.
    monkeypatch.setattr(translate, "_failed_at", -translate.PAUSE)
    assert "office" in (to_english("¿Dónde está la oficina?", "es") or "").lower()


def test_without_apertium_nothing_is_translated(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path_factory.mktemp("empty-path")))
    assert languages() == ()
    assert to_english("¿Dónde está la oficina?", "es") is None
