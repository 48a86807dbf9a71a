from __future__ import annotations

import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heron.core import names
from heron.core.errors import ToolInputError, UnknownTool
from heron.core.names import ANTHROPIC, GEMINI, OPENAI, PROFILES, STRICT, NameCodec, get_profile

NAMES = st.sets(st.text(min_size=1, max_size=150), min_size=1, max_size=40)
# Names that differ only in the characters a profile drops, to force collisions.
NEAR = st.sets(st.text(alphabet="ab._-:/ é", min_size=1, max_size=80), min_size=1, max_size=40)


@pytest.mark.parametrize("profile", list(PROFILES.values()), ids=list(PROFILES))
@given(NAMES | NEAR)
@settings(max_examples=150, deadline=None)
def test_encoded_names_are_valid_unique_and_reversible(profile, originals) -> None:
    codec = NameCodec(originals, profile)
    encoded = [codec.encode(n) for n in originals]
    assert all(profile.valid(e) for e in encoded)
    assert len(set(encoded)) == len(encoded)
    assert all(codec.decode(codec.encode(n)) == n for n in originals)
    # Deterministic: the same set in another order gives the same names.
    assert NameCodec(reversed(sorted(originals)), profile).mapping() == codec.mapping()


def test_provider_patterns_as_documented() -> None:
    assert OPENAI.pattern.pattern == "^[a-zA-Z0-9_-][a-zA-Z0-9_-]{0,63}$"
    assert ANTHROPIC.valid("a" * 128) and not ANTHROPIC.valid("a" * 129)
    assert GEMINI.valid("osis.contact.list") and not GEMINI.valid("1abc")
    assert not STRICT.valid("_x") and STRICT.valid("x_1")
    assert not OPENAI.valid("osis.contact.list")
    assert OPENAI.max_tools == 128


def test_valid_names_keep_themselves_and_changes_are_readable() -> None:
    codec = NameCodec(["osis.contact.list", "search_docs", "hero_osis.contact.list"], OPENAI)
    assert codec.encode("search_docs") == "search_docs"
    assert codec.encode("osis.contact.list") == "osis_contact_list"
    assert codec.encode("hero_osis.contact.list") == "hero_osis_contact_list"


def test_long_names_are_cut_with_a_hash() -> None:
    long = "server." + "very_long_segment." * 10
    codec = NameCodec([long], STRICT)
    assert len(codec.encode(long)) == 64
    assert codec.encode(long).startswith("server_very_long")


def test_unknown_names_and_profiles_say_what_to_do() -> None:
    codec = NameCodec(["a"], OPENAI)
    with pytest.raises(UnknownTool, match="not one of the 1 tools offered"):
        codec.decode("b")
    with pytest.raises(UnknownTool, match="build the codec"):
        codec.encode("b")
    with pytest.raises(ToolInputError, match="Choose from: openai, anthropic, gemini, strict"):
        get_profile("opneai")


def test_doctests() -> None:
    assert doctest.testmod(names).failed == 0
