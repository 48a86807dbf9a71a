"""Held-out skill search: skills from a public npm package, requests never tuned on.

Data: the 34 ``SKILL.md`` skills of the npm package ``@elizaos/skills`` 2.0.0-beta.1
(``bench.packages.npm``; messaging, notes, music, cameras, cloud apps, agent plumbing...),
and ``bench/data/heldout_skills.jsonl``: 68 requests, one vague and one concrete per
skill, each with its gold skill (``skill``) and, where two skills are close, a ``note`` on
why the gold one is right. They were written by hand from each skill's description and
body, before any search was run on these skills: the vague one as a confused user would
ask (no skill name, few of its words: "do I need an umbrella tomorrow"), the concrete one
as a user who knows the tool types it ("get the 3-day forecast for Berlin from wttr.in").
Where two skills of the package overlap (imsg and bluebubbles both send iMessages,
apple-reminders and things-mac both keep tasks), the request asks for what only the gold
one does. Neither the set nor Heron was changed after its figures were seen.

Distractors: the 11 Anthropic skills of ``shared/data/skills/anthropic`` other than
``skill-creator``, which is an equally right answer to a "make a skill" request (the
package's own ``skill-creator`` comes first in precedence and shadows it). The Composio
skills are left out: ``github-automation``, ``slack-automation``, ``notion-automation``...
would be equally right answers for a third of the requests.

Rankings: ``dense only`` (the store's dense order), the word re-rank as it was before the
lexical bonus followed the profile's cosine spread (``cosine + 0.3 * lex`` on every
model), and ``heron.skills`` as it is (``SkillIndex.search_many``). Both profiles, each
with its own index; queries embedded in their role.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from bench.common import SHARED, read_jsonl, table
from bench.e5 import e5_cache, minilm_cache
from bench.packages import npm
from bench.skills import hit_rates
from heron.embed import Embedder, embed_queries
from heron.embed.calibration import MINILM
from heron.settings import Settings
from heron.skills import SkillDir, SkillIndex
from heron.skills.index import DEFAULT_TOP_K
from heron.skills.search import pool_size, rerank
from tests.conftest import sqlite_store

PACKAGE = ("@elizaos/skills", "2.0.0-beta.1")
QUERIES = Path(__file__).with_name("data") / "heldout_skills.jsonl"
DISTRACTORS = SHARED / "data" / "skills" / "anthropic"
NAMESPACE = "heldout-skills"


def queries() -> list[dict[str, Any]]:
    """The requests in ``bench.skills.hit_rates``' shape (``text``, ``kind``, ``gold``)."""
    rows = read_jsonl(QUERIES)
    return [{**row, "text": row["query"], "gold": [row["skill"]]} for row in rows]


def rankings(index: SkillIndex, embedder: Embedder, texts: list[str]) -> dict[str, list]:
    """Skill names in order for each text: dense, the old re-rank, ``heron.skills``."""
    store = index.store
    vectors = embed_queries(embedder, texts)
    pools = [
        store.search(NAMESPACE, t, mode="dense", top_k=pool_size(DEFAULT_TOP_K), vector=v)
        for t, v in zip(texts, vectors, strict=True)
    ]
    return {
        "dense only": [[h.id for h in pool] for pool in pools],
        "dense + word re-rank, cosine + 0.3 lex (before)": [
            [h.name for h in rerank(t, pool, DEFAULT_TOP_K, calibration=MINILM)]
            for t, pool in zip(texts, pools, strict=True)
        ],
        "heron.skills: dense + word re-rank (spread units)": [
            [h.name for h in hits] for hits in index.search_many(texts)
        ],
    }


def run() -> str:
    items = queries()
    texts = [q["text"] for q in items]
    dirs = [SkillDir(npm(*PACKAGE) / "skills", "heldout"), SkillDir(DISTRACTORS, "distractors")]
    vague = sum(q["kind"] == "vague" for q in items)
    rows, count = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, embedder in {"MiniLM": minilm_cache(Settings()), "e5": e5_cache()}.items():
            store = sqlite_store(Path(tmp) / f"{name}.db", embedder)
            index = SkillIndex(store, dirs, namespace=NAMESPACE)
            report = index.index()
            missing = {q["skill"] for q in items} - {s.name for s in report.scan.skills}
            if missing:
                raise SystemExit(f"Gold skills not in the index: {sorted(missing)}")
            count = store.count(NAMESPACE)
            for label, ranked in rankings(index, embedder, texts).items():
                rows.append((name, label, *hit_rates(items, ranked)))
            index.close()
            store.close()
            embedder.close()
    return table(
        f"Held-out skill requests ({len(items)}: {vague} vague, {len(items) - vague} concrete) "
        f"over {count} skills ({PACKAGE[0]} {PACKAGE[1]}, Anthropic's as distractors): Hit@k",
        ["model", "ranking", "vague @1", "vague @3", "concrete @1", "concrete @3", "all @1",
         "all @3"],
        rows,
    )  # fmt: skip


if __name__ == "__main__":
    run()
