"""Finding the skill for a request: dense search, then a deterministic word-overlap re-rank.

Dense search alone gets concrete requests right and misses vague ones ("create a new
skill" brought back a web-framework skill), and fusing it with BM25 (the store's hybrid
mode) makes vague requests worse still: short templated skills named after apps whose
names are everyday words ("better-stack", "more-trees") win BM25 for everyday requests.
So the dense ranking stays the base and words only re-order its candidates:

1. Dense search fetches a pool of ``min(3 * top_k, 60)`` candidates (``top_k`` when larger).
2. Each gets ``lexical_score`` (``lex`` below) from the analysed terms
   (``heron.store.analysis``) of the query ``Q``, the skill's name ``N`` and its
   description plus tags ``D``::

       lex = 0.6 * |Q & N| / |Q| + 0.4 * |Q & D| / |Q| + (0.3 if Q's terms appear in N, in order)

   so ``0 <= lex <= 1.3``.
3. ``score = dense_score + LEX_WEIGHT * spread / 0.295 * lex`` with ``dense_score`` the
   cosine similarity, ``LEX_WEIGHT = 0.3`` and ``spread`` the embedder's
   (``heron.embed.calibration``: the gap between on- and off-topic requests' best skill
   cosines, 0.295 for MiniLM, 0.061 for e5). With MiniLM that is ``cosine + 0.3 * lex``:
   a full name match is worth about as much as the cosine gap between a good and a
   mediocre candidate (0.2 to 0.4), so words settle close calls and never lift a
   candidate dense search did not find. e5 packs the same gaps into a fifth of the range
   (everything scores 0.8 to 0.9), where a bare 0.3 would let words override the model,
   so the bonus shrinks with the spread (``bonus_weight``). Ties go to the name, A to Z.

Results whose file has gone since indexing are dropped (``heron skills prune`` removes
them for good). ``context_for`` keeps the skills with ``score >= min_rel * top score``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from heron.embed.calibration import MINILM, Calibration, calibration_of
from heron.store import Hit, Store
from heron.store.analysis import analyze

LEX_WEIGHT = 0.3
NAME_WEIGHT = 0.6
TEXT_WEIGHT = 0.4
WHOLE_NAME_BONUS = 0.3
MAX_POOL = 60


@dataclass(frozen=True)
class SkillHit:
    """One skill found for a query, with the parts of its score.

    ``dense_score`` is the cosine similarity and ``lexical_score`` the word overlap
    (``lex_score``), named as on store and tool hits.
    """

    name: str
    description: str
    path: str
    tags: tuple[str, ...]
    dense_score: float
    lexical_score: float
    score: float
    rank: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.name,
            "name": self.name,
            "rank": self.rank,
            "score": self.score,
            "dense_score": self.dense_score,
            "lexical_score": self.lexical_score,
            "description": self.description,
            "path": self.path,
            "tags": list(self.tags),
        }


def pool_size(top_k: int) -> int:
    """How many dense candidates a search for ``top_k`` results re-ranks."""
    return max(top_k, min(3 * top_k, MAX_POOL))


@lru_cache(maxsize=8192)
def terms(text: str) -> tuple[str, ...]:
    """Analysed terms in order; ``_`` splits words too, as in ``zoho_books``."""
    return tuple(analyze(text.replace("_", " ")))


def _contains(seq: tuple[str, ...], part: tuple[str, ...]) -> bool:
    n = len(part)
    return any(seq[i : i + n] == part for i in range(len(seq) - n + 1))


def lex_score(query: str, name: str, description: str, tags: Sequence[str] = ()) -> float:
    """Word overlap of a query with a skill, the formula in the module docstring.

    >>> round(lex_score("create a new skill", "skill-creator", "Create new skills."), 3)
    0.6
    """
    query_terms = terms(query)
    wanted = set(query_terms)
    if not wanted:
        return 0.0
    name_terms = terms(name)
    text_terms = set(terms(description)) | {t for tag in tags for t in terms(tag)}
    score = NAME_WEIGHT * len(wanted & set(name_terms)) / len(wanted)
    score += TEXT_WEIGHT * len(wanted & text_terms) / len(wanted)
    if _contains(name_terms, query_terms):
        score += WHOLE_NAME_BONUS
    return score


def bonus_weight(calibration: Calibration = MINILM, weight: float = LEX_WEIGHT) -> float:
    """The word overlap's weight on ``calibration``'s cosine scale: ``weight`` is on
    MiniLM's, where it was chosen, and shrinks or grows with the model's ``spread``.

    >>> from heron.embed.calibration import E5
    >>> bonus_weight(MINILM), round(bonus_weight(E5), 3)
    (0.3, 0.062)
    """
    return weight * (calibration.spread / MINILM.spread)  # exactly weight for MiniLM


def combine(dense_score: float, lexical_score: float, weight: float = LEX_WEIGHT) -> float:
    """The final score: the cosine similarity plus ``weight`` (a ``bonus_weight``) times
    the word overlap."""
    return dense_score + weight * lexical_score


def rerank(
    query: str,
    hits: Sequence[Hit],
    top_k: int,
    weight: float = LEX_WEIGHT,
    calibration: Calibration = MINILM,
) -> list[SkillHit]:
    """Re-order dense hits by ``combine``; drop hits whose file is gone; keep ``top_k``.

    ``calibration``: that of the embedder the hits' cosines come from. ``weight`` (on
    MiniLM's scale) is there for the benchmark's sensitivity sweep; keep the default.
    """
    weight = bonus_weight(calibration, weight)
    scored = []
    for hit in hits:
        meta = hit.metadata
        tags = tuple(meta.get("tags") or ())
        lex = lex_score(query, hit.id, meta.get("description", ""), tags)
        scored.append((combine(hit.score, lex, weight), hit.id, hit, lex, tags))
    scored.sort(key=lambda item: (-item[0], item[1]))
    results: list[SkillHit] = []
    for score, name, hit, lex, tags in scored:
        path = str(hit.metadata.get("path", ""))
        if not os.path.isfile(path):
            continue
        description = str(hit.metadata.get("description", ""))
        results.append(
            SkillHit(name, description, path, tags, hit.score, lex, score, len(results) + 1)
        )
        if len(results) == top_k:
            break
    return results


def search_skills(
    store: Store, namespace: str, queries: Sequence[str], top_k: int
) -> list[list[SkillHit]]:
    """The ``top_k`` skills for each query; the queries are embedded in one batch."""
    pools = store.search_many(namespace, list(queries), mode="dense", top_k=pool_size(top_k))
    return [
        rerank(q, hits, top_k, calibration=calibration_of(store.embedder, q))
        for q, hits in zip(queries, pools, strict=True)
    ]


def relevant(hits: Sequence[SkillHit], min_rel: float) -> list[SkillHit]:
    """The hits scoring at least ``min_rel`` times the top score."""
    if not hits:
        return []
    floor = min_rel * hits[0].score
    return [h for h in hits if h.score >= floor]


def format_context(hits: Sequence[SkillHit]) -> str:
    """Skills as a prompt block: name, description and where to read the procedure.

    ``## Skills that may apply`` followed by one ``- name: description (path)`` line each,
    or the empty string when there are none.
    """
    if not hits:
        return ""
    lines = ["## Skills that may apply", "Read a skill's file before following it.", ""]
    lines += [f"- {h.name}: {h.description} ({h.path})" for h in hits]
    return "\n".join(lines) + "\n"
