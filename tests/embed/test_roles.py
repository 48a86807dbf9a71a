"""Query roles and calibrations at every search: a model with roles gets its queries as
queries (the store, skills, libraries, tool router, agent), MiniLM is untouched, and the
thresholds come from the embedder's calibration."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from heron.agent import Turn
from heron.embed import (
    E5,
    MINILM,
    CachedEmbedder,
    Calibration,
    E5Embedder,
    E5OnnxEmbedder,
    MiniLMEmbedder,
    RemoteEmbedder,
    calibration_of,
    embed_queries,
)
from heron.libraries import add_library, index_library, search
from heron.settings import Settings
from heron.skills import SkillDir, SkillIndex
from heron.store import Record, SQLiteStore
from heron.tools import Tool, ToolRouter
from heron.wiring import open_agent
from tests.conftest import sqlite_store

#: Unlike either real profile's, so that a threshold read from the wrong place shows.
ROLES = Calibration(skill=0.61, weak=0.32, docs=0.43, tool=0.54, route=0.15, overlap=0.2)
QUESTION = "How often should I water my tomato plants?"


class RoleModel(MiniLMEmbedder):
    """MiniLM given a query role, as e5 has one: a query is embedded with ``query: ``
    before it. Each call is recorded as ``(role, texts)``."""

    calibration = ROLES

    def __init__(self, models_dir: Path) -> None:
        super().__init__(models_dir, threads=1)
        self.model_id = "all-MiniLM-L6-v2-int8-with-roles"
        self.roles: list[tuple[str, list[str]]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.roles.append(("passage", list(texts)))
        return super().embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.roles.append(("query", list(texts)))
        return MiniLMEmbedder.embed(self, [f"query: {t}" for t in texts])

    def roles_of(self, text: str) -> set[str]:
        return {role for role, texts in self.roles if text in texts}


@pytest.fixture
def model() -> RoleModel:
    return RoleModel(Settings().models_dir)


@pytest.fixture
def role_store(tmp_path: Path, model: RoleModel) -> Iterator[SQLiteStore]:
    with sqlite_store(tmp_path / "roles.db", model) as store:
        yield store


def test_minilm_has_no_roles_and_keeps_its_thresholds(
    embedder: MiniLMEmbedder, tmp_path: Path
) -> None:
    texts = [QUESTION, "kubectl rollout undo"]
    assert embed_queries(embedder, texts).tobytes() == embedder.embed(texts).tobytes()
    cache = CachedEmbedder(embedder, tmp_path / "cache.db")
    cache.embed(texts)
    assert cache.embed_queries(texts).tobytes() == embedder.embed(texts).tobytes()
    assert cache.misses == 2  # a query of a model without roles is the same cached vector
    cache.close()
    # The numbers Heron chose on MiniLM, unmoved; a model that says nothing gets them.
    assert (
        Calibration(skill=0.45, weak=0.3, docs=0.45, tool=0.5, route=0.25, overlap=0.25) == MINILM
    )
    remote = RemoteEmbedder("http://127.0.0.1:9/v1", "any", dim=384)
    for each in (embedder, cache, remote):
        assert calibration_of(each) is MINILM
    remote.close()
    assert E5Embedder.calibration is E5 and E5OnnxEmbedder.calibration is E5
    assert E5.skill > MINILM.skill and E5.route > MINILM.route  # e5's cosines run high


def test_the_store_and_the_cache_embed_queries_as_queries(
    role_store: SQLiteStore, model: RoleModel, tmp_path: Path
) -> None:
    role_store.upsert("notes", [Record("a", "Water tomatoes twice a week.", {})])
    role_store.search("notes", QUESTION)
    role_store.search_many("notes", ["prune roses"], mode="dense")
    assert model.roles_of("Water tomatoes twice a week.") == {"passage"}
    assert model.roles_of(QUESTION) == {"query"}
    assert model.roles_of("prune roses") == {"query"}
    cache = CachedEmbedder(model, tmp_path / "cache.db")
    assert calibration_of(cache) is ROLES
    query, passage = cache.embed_queries([QUESTION]), cache.embed([QUESTION])
    assert cache.misses == 2 and float(query[0] @ passage[0]) < 0.999  # kept apart
    assert cache.embed_queries([QUESTION]).tobytes() == query.tobytes()
    assert cache.misses == 2
    cache.close()


def test_skills_and_tools_embed_queries_as_queries(
    role_store: SQLiteStore, model: RoleModel, tmp_path: Path
) -> None:
    skill = tmp_path / "skills" / "garden"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: garden\ndescription: Water, prune and feed garden plants.\n---\nSteps.\n"
    )
    index = SkillIndex(role_store, [SkillDir(tmp_path / "skills", "shared")])
    index.index()
    assert index.context_for(QUESTION).skills[0].name == "garden"
    assert model.roles_of(QUESTION) == {"query"}
    tools = [Tool("water_plants", "Water the garden plants."), Tool("send_mail", "Send mail.")]
    router = ToolRouter(tools, role_store)
    assert router.threshold_for("water") == ROLES.route  # unset: the embedder's
    assert ToolRouter(tools, role_store, threshold=0.7).threshold_for("water") == 0.7
    router.route("water the plants now")
    assert model.roles_of("water the plants now") == {"query"}


def test_libraries_and_the_agent_embed_queries_as_queries(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: RoleModel
) -> None:
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    pages = tmp_path / "garden-docs"
    pages.mkdir()
    (pages / "watering.md").write_text(
        "# Watering tomatoes\n\nWater tomato plants deeply twice a week, at the base.\n"
    )
    settings = Settings()
    add_library("garden", str(pages), settings)
    store = sqlite_store(settings.db_path, model)
    index_library("garden", store, settings=settings)
    assert search("when do I water tomatoes", store, settings=settings)[0].page == "watering"
    assert model.roles_of("when do I water tomatoes") == {"query"}
    agent = open_agent(settings, store=store)
    thresholds = agent.thresholds(QUESTION)
    assert (thresholds.docs, thresholds.tool) == (ROLES.docs, ROLES.tool)
    agent.ask(Turn(QUESTION))
    assert model.roles_of(QUESTION) == {"query"}
    agent.close()
    chosen = open_agent(Settings(agent={"docs_threshold": 0.9}), store=store)
    thresholds = chosen.thresholds(QUESTION)
    assert (thresholds.docs, thresholds.tool) == (0.9, ROLES.tool)  # set wins
    chosen.close()
    store.close()
