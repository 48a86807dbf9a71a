"""The word bonus in units of the embedder's cosine spread (``heron.skills.search``):
golden values by hand, then for real through the e5 engine's own cosines."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from heron.embed import E5, MINILM, Calibration, E5Embedder
from heron.skills import SkillDir, SkillIndex
from heron.skills.search import LEX_WEIGHT, bonus_weight, rerank
from tests.conftest import sqlite_store
from tests.skills.test_search import hit


def test_bonus_weight_golden_values() -> None:
    assert bonus_weight(MINILM) == LEX_WEIGHT == 0.3  # exactly: MiniLM's figures do not move
    assert bonus_weight(MINILM, 0.1) == 0.1
    assert bonus_weight(E5) == pytest.approx(0.3 * 0.061 / 0.295)  # 0.062
    half = Calibration(0.5, 0.5, 0.5, 0.5, 0.5, 0.5, spread=0.1475)  # half MiniLM's spread
    assert bonus_weight(half, 1.0) == pytest.approx(0.5)
    # A calibration that gives no spread is on MiniLM's scale.
    assert bonus_weight(Calibration(0.1, 0.1, 0.1, 0.1, 0.1, 0.1)) == 0.3


def test_a_gap_that_decides_on_e5_is_kept(tmp_path: Path) -> None:
    """e5 cosines: 0.890 against 0.835 is a clear gap on its scale (almost one spread), so
    a strong word match (lex 0.8) settles it only on MiniLM's scale."""
    hits = [
        hit(tmp_path, "alpha-tool", 0.890, "Unrelated."),
        # name 2/3 (0.4), description 3/3 (0.4), no whole-name bonus: lex 0.8
        hit(tmp_path, "release-notes", 0.835, "Write release notes."),
    ]
    on_minilm = rerank("write release notes", hits, top_k=2)
    assert [h.name for h in on_minilm] == ["release-notes", "alpha-tool"]
    assert on_minilm[0].score == 0.835 + 0.3 * on_minilm[0].lexical_score
    assert on_minilm[0].score == pytest.approx(1.075)
    on_e5 = rerank("write release notes", hits, top_k=2, calibration=E5)
    assert [h.name for h in on_e5] == ["alpha-tool", "release-notes"]
    assert on_e5[1].lexical_score == pytest.approx(0.8)
    assert on_e5[1].score == pytest.approx(0.835 + 0.8 * 0.3 * 0.061 / 0.295)  # 0.88463
    assert on_e5[0].score == 0.890


def test_search_reads_the_spread_of_the_stores_embedder(tmp_path: Path) -> None:
    """Through ``SkillIndex`` on the e5 engine: every score is the cosine plus e5's bonus."""
    for name, description in [
        ("release-notes", "Write release notes from the git commits since a tag."),
        ("weather", "Current weather and forecasts for a city."),
        ("trello", "Manage Trello boards, lists and cards."),
    ]:
        folder = tmp_path / "skills" / name
        folder.mkdir(parents=True)
        text = f"---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n"
        (folder / "SKILL.md").write_text(text)
    model = E5Embedder(threads=1)
    with closing(model), sqlite_store(tmp_path / "heron.db", model) as store:
        skills = SkillIndex(store, [SkillDir(tmp_path / "skills", "test")])
        skills.index()
        found = skills.search("write the release notes for v2", top_k=3)
        skills.close()
    assert found[0].name == "release-notes"
    assert found[0].lexical_score > 0
    for h in found:
        assert h.score == pytest.approx(h.dense_score + bonus_weight(E5) * h.lexical_score)
