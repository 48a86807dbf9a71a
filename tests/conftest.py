"""Shared fixtures: the real bundled embedder, fresh stores in temporary directories."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from heron.embed import Embedder, MiniLMEmbedder
from heron.settings import Settings
from heron.store import SQLiteStore, open_store
from tests import budget
from tests.ci import missing
from tests.llm_servers import KEY, ChatServer, serve

SHARED = Path(os.environ.get("HERON_SHARED") or Path(__file__).parents[1] / ".." / "shared")


def sqlite_store(path: Path, embedder: Embedder) -> SQLiteStore:
    """The record store on the SQLite file ``path``, opened as Heron opens its store
    (``open_store``, by settings naming the file), sharing ``embedder``."""
    store = open_store(Settings(database_url=f"sqlite:///{path}"), embedder)
    assert isinstance(store, SQLiteStore)
    return store


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder(Settings().models_dir, threads=1)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HERON_HOME for this test; the shared model cache stays where it is."""
    models_dir = Settings().models_dir
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HERON_MODELS_DIR", str(models_dir))
    monkeypatch.delenv("HERON_CONFIG", raising=False)
    return tmp_path / "home"


@pytest.fixture
def store(tmp_path: Path, embedder: MiniLMEmbedder) -> Iterator[SQLiteStore]:
    with sqlite_store(tmp_path / "heron.db", embedder) as store:
        yield store


def pytest_configure(config: pytest.Config) -> None:
    """The suite runs on the bundled MiniLM, subprocesses and module fixtures included: the
    default profile (multilingual, where e5 is installed) loads e5 too (about 2 s) and
    embeds every indexed text twice, which would put the suite past its budget.
    ``tests/embed/test_multilingual.py`` and the tests that ask for ``default_profile``
    run on the default. The whole run keeps to its time budget (``tests.budget``)."""
    os.environ["HERON_EMBEDDER"] = "minilm"
    budget.register(config)


@pytest.fixture
def default_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    """``HERON_EMBEDDER`` as a user leaves it: unset."""
    monkeypatch.delenv("HERON_EMBEDDER", raising=False)


@pytest.fixture
def apertium() -> None:
    """Debian's Apertium with the pairs ``heron.translate`` reads Portuguese and Spanish
    through (``scripts/setup`` installs them): missing, the test skips, and fails in CI."""
    from heron.translate import APERTIUM, PACKAGES, languages, modes

    modes.cache_clear()
    if shutil.which(APERTIUM) is None or set(languages()) != {"es", "pt"}:
        missing(
            "Apertium with its spa-eng and pt-es pairs is not installed",
            f"apt-get install {' '.join(PACKAGES)} (scripts/setup does)",
        )


@pytest.fixture(autouse=True)
def fresh_cooldowns() -> Iterator[None]:
    """Each test starts with no model cooling down: the record is the process's, and a
    loopback server of a later test may get an earlier one's port."""
    from heron.llm.cooldowns import COOLDOWNS

    COOLDOWNS.reset()
    yield


@pytest.fixture(scope="module")
def replay() -> Iterator[ChatServer]:
    """A module's replay server of the paid providers' wire formats (tests.llm_servers),
    with the key variables its models.yml names set while it runs."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TEST_OPENAI_KEY", KEY)
        mp.setenv("TEST_ANTHROPIC_KEY", KEY)
        with serve() as server:
            yield server
