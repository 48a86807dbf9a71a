"""``heron.skills.search``: the re-rank formula against hand-computed values, then for real."""

from __future__ import annotations

from pathlib import Path

import pytest

from heron.embed import MiniLMEmbedder
from heron.errors import InputError
from heron.settings import Settings
from heron.skills import open_skills
from heron.skills.dirs import SkillDir
from heron.skills.index import SkillIndex
from heron.skills.search import (
    SkillHit,
    combine,
    format_context,
    lex_score,
    pool_size,
    relevant,
    rerank,
)
from heron.store import Hit, SQLiteStore
from tests.ci import missing
from tests.conftest import SHARED

SHARED_SKILLS = SHARED / "data" / "skills"


@pytest.mark.parametrize(
    ("query", "name", "description", "tags", "expected"),
    [
        # name 2/2 terms (0.6), description 1/2 (0.2), the query is the name (0.3)
        ("gif maker", "gif-maker", "Make animated GIFs.", (), 1.1),
        # name 1/3 (0.2), description 3/3 (0.4)
        ("create a new skill", "skill-creator", "Create new skills.", (), 0.6),
        # tags count with the description
        ("pdf", "forms", "Fill forms.", ("PDF",), 0.4),
        # '_' separates words; the query sits inside the name, in order
        ("zoho books", "zoho_books-automation", "Accounting.", (), 0.9),
        # the same words out of order get no bonus
        ("books zoho", "zoho_books-automation", "Accounting.", (), 0.6),
        # nothing left after stopwords
        ("the of a", "the-of", "the of a", (), 0.0),
    ],
)
def test_lex_score_reference(
    query: str, name: str, description: str, tags: tuple[str, ...], expected: float
) -> None:
    assert lex_score(query, name, description, tags) == pytest.approx(expected)


def test_combine_and_pool() -> None:
    assert combine(0.5, 1.0) == pytest.approx(0.8)
    assert combine(0.5, 1.0, weight=0) == 0.5
    assert [pool_size(k) for k in (1, 5, 20, 100)] == [3, 15, 60, 100]


def hit(tmp_path: Path, name: str, score: float, description: str, exists: bool = True) -> Hit:
    path = tmp_path / name / "SKILL.md"
    if exists:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    metadata = {"description": description, "path": str(path), "tags": []}
    return Hit(name, score, "", metadata, 0)


def test_rerank_orders_by_combined_score_then_name(tmp_path: Path) -> None:
    hits = [
        hit(tmp_path, "astro-site", 0.60, "Create a new Astro site."),
        hit(tmp_path, "skill-creator", 0.50, "Write SKILL.md files."),
        hit(tmp_path, "b-other", 0.40, "Unrelated."),
        hit(tmp_path, "a-other", 0.40, "Unrelated."),
        hit(tmp_path, "gone-skill", 0.90, "Create a new skill.", exists=False),
    ]
    ranked = rerank("create a new skill", hits, top_k=3)
    # astro: 0.6 + 0.3 * (0.4 * 2/3); skill-creator: 0.5 + 0.3 * (0.6/3 + 0.4/3)
    assert [(h.name, h.rank) for h in ranked] == [
        ("astro-site", 1),
        ("skill-creator", 2),
        ("a-other", 3),
    ]
    assert ranked[0].score == pytest.approx(0.68)
    assert ranked[1].score == pytest.approx(0.6)
    assert (ranked[1].dense_score, ranked[1].lexical_score) == (0.5, pytest.approx(1 / 3))


def result(name: str, score: float) -> SkillHit:
    return SkillHit(name, f"{name} does things.", f"/s/{name}/SKILL.md", (), score, 0.0, score, 1)


def test_relative_cut_and_prompt_format() -> None:
    hits = [result("a", 1.0), result("b", 0.5), result("c", 0.49)]
    assert [h.name for h in relevant(hits, 0.5)] == ["a", "b"]
    assert [h.name for h in relevant(hits, 0.0)] == ["a", "b", "c"]
    assert relevant([], 0.5) == []
    text = format_context(relevant(hits, 0.5))
    assert "- a: a does things. (/s/a/SKILL.md)" in text
    assert "c does things" not in text
    assert format_context([]) == ""


@pytest.fixture
def shared_skills(store: SQLiteStore) -> SkillIndex:
    folders = [
        "anthropic/theme-factory",
        "anthropic/canvas-design",
        "composio/meeting-insights-analyzer",
        "composio/composio-skills/googleslides-automation",
        "composio/composio-skills/beamer-automation",
        "composio/composio-skills/zoominfo-automation",
        "composio/composio-skills/dialmycalls-automation",
    ]
    if not SHARED_SKILLS.is_dir():
        missing(f"no shared skills at {SHARED_SKILLS}", "set HERON_SHARED to the shared data")
    skills = SkillIndex(store, [SkillDir(SHARED_SKILLS / f, "shared") for f in folders])
    skills.index()
    return skills


@pytest.mark.parametrize(
    ("query", "dense_first", "heron_first", "rank"),
    [
        # dense prefers the skill named after a word of the query; the words fix it
        ("give my slides a theme", "googleslides-automation", "theme-factory", 1),
        # The words lift the analyzer from dense's third to second; first under the fp32
        # MiniLM graph, it is 0.018 short of zoominfo under the int8 one (issue 48: the
        # one concrete query docs/benchmarks.md "Skills" records lost at @1).
        (
            "find filler words in my zoom meeting transcript",
            "zoominfo-automation",
            "meeting-insights-analyzer",
            2,
        ),
    ],
)
def test_word_rerank_fixes_what_dense_misses(
    shared_skills: SkillIndex, query: str, dense_first: str, heron_first: str, rank: int
) -> None:
    dense = shared_skills.store.search("skills", query, mode="dense", top_k=3)
    assert dense[0].id == dense_first
    found = shared_skills.search(query, top_k=3)
    assert [h.name for h in found].index(heron_first) + 1 == rank
    assert [r.id for r in dense].index(heron_first) + 1 > rank  # the words lifted it
    hit = found[rank - 1]
    assert hit.description and "SKILL.md" not in hit.description
    fields = {"name", "description", "path", "tags", "dense_score", "lexical_score", "score"}
    assert fields <= set(hit.to_dict())


def test_context_for_cuts_and_logs(shared_skills: SkillIndex, tmp_path: Path) -> None:
    shared_skills.usage_path = tmp_path / "skills.db"
    context = shared_skills.context_for("give my slides a theme", top_k=5, min_rel=0.9)
    assert [h.name for h in context.skills][:1] == ["theme-factory"]
    assert all(h.score >= 0.9 * context.skills[0].score for h in context.skills)
    assert context.text.startswith("## Skills that may apply")
    assert shared_skills.record_use(context.query_id or 0, "theme-factory") == 1
    assert len(shared_skills.context_for("give my slides a theme", min_rel=0).skills) == 5


def test_empty_query_is_refused(shared_skills: SkillIndex) -> None:
    with pytest.raises(InputError, match="empty"):
        shared_skills.search("  ")


def test_open_skills_reads_the_environment(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: MiniLMEmbedder
) -> None:
    mine = tmp_path / "mine" / "pdf"
    mine.mkdir(parents=True)
    (mine / "SKILL.md").write_text("---\nname: pdf-tools\ndescription: Fill PDF forms.\n---\n")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    monkeypatch.setenv("HERON_SKILLS_DIRS", str(tmp_path / "mine"))
    monkeypatch.setenv("HERON_SKILLS_MIN_REL", "0.8")
    skills = open_skills(Settings(), embedder=embedder)
    assert [d.source for d in skills.dirs] == ["HERON_SKILLS_DIRS", "heron", "hermes", "claude"]
    assert skills.min_rel == 0.8 and skills.usage_path == home / "skills.db"
    assert skills.index().result.added == 1
    assert skills.context_for("fill in a pdf form").skills[0].name == "pdf-tools"
    skills.close()
