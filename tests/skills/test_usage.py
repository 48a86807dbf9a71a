"""``heron.skills.usage``: the query log, the use reports and the vague/concrete rule."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from heron.errors import NotFound
from heron.skills.index import SkillIndex
from heron.skills.usage import UsageLog, query_kind
from heron.store import SQLiteStore


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("create a new skill", "vague"),
        ("help me make something nice", "vague"),
        ("clean up my files", "vague"),
        ("publish a blog post", "concrete"),
        ("create an invoice in quickbooks", "concrete"),
        ("upgrade to v2.1", "concrete"),  # a version is specific on its own
        ("open report.pdf", "concrete"),
        ("", "vague"),
        ("criar skill nova", "vague"),  # the seed's own example
        ("me ajuda a fazer uma ferramenta nova", "vague"),
        ("publicar um post no blog", "concrete"),
        ("configurar a VPN da empresa", "concrete"),
        ("crear una skill nueva", "vague"),
        ("publicar una entrada en el blog", "concrete"),
    ],
)
def test_query_kind(query: str, kind: str) -> None:
    assert query_kind(query) == kind


def test_hit_rates_per_kind(tmp_path: Path) -> None:
    log = UsageLog(tmp_path / "skills.db")
    first = log.record_query("create a new skill", ["skill-creator", "skill-share"])
    second = log.record_query("make a gif", ["gif-maker"])
    third = log.record_query("publish a blog post on hashnode", ["blog", "hashnode"])
    log.record_query("rename invoices for taxes", ["invoices"])  # never reported
    assert log.record_use(first, "skill-creator") == 1
    assert log.record_use(first, "skill-share") == 2  # a second use: the best rank counts
    assert log.record_use(second, "something-else") is None
    assert log.record_use(third, "hashnode") == 2
    log.close()

    vague, concrete = UsageLog(tmp_path / "skills.db").stats()  # and it persisted
    assert (vague.kind, vague.queries, vague.reported, vague.hits, vague.top) == (
        "vague",
        2,
        2,
        1,
        1,
    )
    assert (vague.hit_rate, vague.top_rate) == (0.5, 0.5)
    assert (concrete.queries, concrete.reported, concrete.hits, concrete.top) == (2, 1, 1, 0)
    assert concrete.to_dict()["hit_rate"] == 1.0


def test_reporting_an_unknown_query_says_where_the_id_comes_from(tmp_path: Path) -> None:
    log = UsageLog(tmp_path / "skills.db")
    with pytest.raises(NotFound, match="Use the query_id that context_for returned"):
        log.record_use(7, "x")


def test_stats_before_any_query_create_nothing(tmp_path: Path, store: SQLiteStore) -> None:
    skills = SkillIndex(store, [], usage_path=tmp_path / "skills.db")
    assert [(s.kind, s.queries, s.hit_rate) for s in skills.stats()] == [
        ("vague", 0, None),
        ("concrete", 0, None),
    ]
    assert not (tmp_path / "skills.db").exists()


def test_the_log_is_shared_safely_between_threads(tmp_path) -> None:
    log = UsageLog(tmp_path / "skills.db")
    with ThreadPoolExecutor(4) as pool:
        ids = list(pool.map(lambda i: log.record_query(f"publish post {i}", ["blog"]), range(40)))
    assert len(set(ids)) == 40
    assert sum(s.queries for s in log.stats()) == 40
    log.close()


def test_a_skill_offered_and_not_used_is_a_miss(tmp_path: Path) -> None:
    log = UsageLog(tmp_path / "skills.db")
    missed = log.record_query("publish a blog post", ["blog-post", "newsletter"])
    hit = log.record_query("publish the newsletter today", ["newsletter"])
    log.record_miss(missed)
    log.record_use(hit, "newsletter")
    (concrete,) = [s for s in log.stats() if s.kind == "concrete"]
    assert (concrete.queries, concrete.reported, concrete.hits, concrete.top) == (2, 2, 1, 1)
    assert concrete.hit_rate == 0.5
    log.close()
