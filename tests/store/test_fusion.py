from __future__ import annotations

import numpy as np
import pytest

from heron.store.analysis import bm25
from heron.store.fusion import (
    ALPHA,
    FEEDBACK_ALPHA,
    ROCCHIO_BETA,
    Fused,
    fuse,
    fuse_with_feedback,
    reciprocal_rank_fusion,
    rocchio,
)


def keys(results: list[Fused]) -> list[int]:
    return [f.key for f in results]


def arr(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float64)


def ints(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


EMPTY_KEYS = ints()
EMPTY_SCORES = arr()


# --- fuse -----------------------------------------------------------------------------------


def test_tuned_defaults():
    assert (ALPHA, FEEDBACK_ALPHA, ROCCHIO_BETA) == (0.5, 0.75, 0.3)


def test_ranks_and_component_scores():
    out = fuse(ints(10, 20, 30), arr(0.9, 0.5, 0.1), ints(30, 40), arr(8.0, 2.0), top_k=10)
    by_key = {f.key: f for f in out}
    assert set(by_key) == {10, 20, 30, 40}
    assert (by_key[10].dense_rank, by_key[10].lexical_rank) == (1, None)
    assert (by_key[30].dense_rank, by_key[30].lexical_rank) == (3, 1)
    assert (by_key[40].dense_rank, by_key[40].lexical_rank) == (None, 2)
    assert by_key[30].dense_score == pytest.approx(0.1)
    assert by_key[30].lexical_score == pytest.approx(8.0)
    assert by_key[10].lexical_score is None  # not scored on that side, no fill given
    assert by_key[40].dense_score is None
    assert all(isinstance(f.key, int) and isinstance(f.score, float) for f in out)


def test_zscore_arithmetic():
    # Each side's scores over the union {1, 2} are (1, 0) and (0, 1): z-scores (1, -1), (-1, 1).
    out = fuse(ints(1, 2), arr(1.0, 0.0), ints(2, 1), arr(1.0, 0.0), top_k=2, alpha=0.75)
    assert keys(out) == [1, 2]
    assert [f.score for f in out] == pytest.approx([0.5, -0.5])
    assert out[0].lexical_rank == 2 and out[1].lexical_rank == 1


def test_ties_break_on_smaller_key():
    out = fuse(ints(7, 3), arr(1.0, 0.0), ints(3, 7), arr(1.0, 0.0), top_k=2, alpha=0.5)
    assert [f.score for f in out] == pytest.approx([0.0, 0.0])
    assert keys(out) == [3, 7]


def test_invariant_to_affine_rescaling_of_a_side():
    dense_keys, dense_scores = ints(1, 2, 3, 4), arr(0.8, 0.6, 0.3, 0.2)
    lexical_keys, lexical_scores = ints(3, 2, 5), arr(12.0, 7.0, 1.0)
    fills = {"dense_fill": {5: 0.1}, "lexical_fill": {1: 0.0, 4: 2.0}}
    base = fuse(dense_keys, dense_scores, lexical_keys, lexical_scores, top_k=5, **fills)
    scaled = fuse(
        dense_keys,
        dense_scores * 3 - 1,
        lexical_keys,
        lexical_scores / 10,
        top_k=5,
        dense_fill={5: 0.1 * 3 - 1},
        lexical_fill={1: 0.0, 4: 0.2},
    )
    assert keys(base) == keys(scaled)
    assert [f.score for f in base] == pytest.approx([f.score for f in scaled])


def test_alpha_extremes_follow_one_side():
    args = (ints(1, 2, 3), arr(0.9, 0.5, 0.1), ints(3, 2, 1), arr(9.0, 5.0, 1.0))
    assert keys(fuse(*args, top_k=3, alpha=1.0)) == [1, 2, 3]
    assert keys(fuse(*args, top_k=3, alpha=0.0)) == [3, 2, 1]


def test_fills_score_one_sided_candidates():
    # 1 is only in the dense list and 2 only in the lexical one; the fills score them exactly.
    out = fuse(
        ints(1, 3),
        arr(0.9, 0.2),
        ints(2, 3),
        arr(6.0, 1.0),
        top_k=3,
        dense_fill={2: 0.8},
        lexical_fill={1: 5.0},
    )
    by_key = {f.key: f for f in out}
    assert by_key[1].lexical_score == 5.0 and by_key[1].lexical_rank is None
    assert by_key[2].dense_score == pytest.approx(0.8) and by_key[2].dense_rank is None
    assert keys(out)[-1] == 3  # worst on both sides once everyone is scored


def test_fill_matters_for_one_sided_candidates():
    # Without a fill, 1 gets the lexical side's lowest score; its true BM25 lifts it above 2.
    args = (ints(2, 1, 5, 6), arr(0.6, 0.59, 0.1, 0.05), ints(2, 3, 5, 6), arr(3.0, 2.0, 1.0, 0.5))
    assert keys(fuse(*args, top_k=3))[0] == 2
    assert keys(fuse(*args, top_k=3, lexical_fill={1: 10.0}))[0] == 1


def test_fill_ignored_for_listed_keys():
    args = (ints(1, 2), arr(0.9, 0.1), ints(1, 2), arr(1.0, 2.0))
    plain = fuse(*args, top_k=2)
    filled = fuse(*args, top_k=2, dense_fill={1: -5.0}, lexical_fill={2: -5.0})
    assert plain == filled


def test_zero_lexical_fill_is_a_score():
    out = fuse(ints(1, 2), arr(0.9, 0.8), ints(2), arr(3.0), top_k=2, lexical_fill={1: 0.0})
    assert {f.key: f.lexical_score for f in out} == {1: 0.0, 2: 3.0}


def test_one_side_empty_ranks_by_the_other():
    out = fuse(ints(5, 6, 7), arr(0.9, 0.5, 0.1), EMPTY_KEYS, EMPTY_SCORES, top_k=3)
    assert keys(out) == [5, 6, 7]
    assert all(f.lexical_score is None and f.lexical_rank is None for f in out)
    out = fuse(EMPTY_KEYS, EMPTY_SCORES, ints(9, 8), arr(4.0, 3.0), top_k=3)
    assert keys(out) == [9, 8]
    assert [f.lexical_rank for f in out] == [1, 2]


def test_constant_side_gives_no_nan():
    out = fuse(ints(1, 2), arr(0.5, 0.5), ints(1, 2), arr(3.0, 1.0), top_k=2)
    assert keys(out) == [1, 2]
    assert all(np.isfinite(f.score) for f in out)
    single = fuse(ints(4), arr(0.3), EMPTY_KEYS, EMPTY_SCORES, top_k=1)
    assert keys(single) == [4] and single[0].score == 0.0


def test_empty_inputs():
    assert fuse(EMPTY_KEYS, EMPTY_SCORES, EMPTY_KEYS, EMPTY_SCORES, top_k=5) == []
    assert reciprocal_rank_fusion(EMPTY_KEYS, EMPTY_SCORES, EMPTY_KEYS, EMPTY_SCORES, top_k=5) == []


def test_top_k():
    args = (ints(1, 2, 3), arr(0.9, 0.5, 0.1), ints(4, 5), arr(9.0, 5.0))
    assert len(fuse(*args, top_k=2)) == 2
    assert len(fuse(*args, top_k=50)) == 5
    assert fuse(*args, top_k=0) == []
    assert keys(fuse(*args, top_k=2)) == keys(fuse(*args, top_k=5))[:2]


def test_accepts_lists_and_float32():
    out = fuse([3, 1], np.array([0.7, 0.2], np.float32), [1], [2.5], top_k=2)
    # 3 has no lexical score: imputed with the side's minimum, the lexical side is constant.
    assert keys(out) == [3, 1]
    assert out[0].lexical_score is None and out[1].lexical_score == 2.5


def test_rejects_bad_input():
    with pytest.raises(ValueError, match="dense"):
        fuse(ints(1, 2), arr(0.5), EMPTY_KEYS, EMPTY_SCORES, top_k=1)
    with pytest.raises(ValueError, match="duplicate"):
        fuse(EMPTY_KEYS, EMPTY_SCORES, ints(1, 1), arr(2.0, 1.0), top_k=1)


# --- reciprocal rank fusion -----------------------------------------------------------------


def test_rrf_scores_and_order():
    out = reciprocal_rank_fusion(ints(1, 2), arr(0.9, 0.8), ints(2, 3), arr(5.0, 4.0), top_k=3)
    assert keys(out) == [2, 1, 3]
    assert [f.score for f in out] == pytest.approx([1 / 62 + 1 / 61, 1 / 61, 1 / 62])
    assert (out[0].dense_rank, out[0].lexical_rank) == (2, 1)
    assert (out[0].dense_score, out[0].lexical_score) == pytest.approx((0.8, 5.0))
    assert out[2].dense_score is None and out[2].dense_rank is None


def test_rrf_ties_and_k():
    out = reciprocal_rank_fusion(ints(8), arr(0.1), ints(4), arr(1.0), top_k=2, k=1)
    assert keys(out) == [4, 8]
    assert [f.score for f in out] == pytest.approx([0.5, 0.5])


# --- rocchio --------------------------------------------------------------------------------


def test_rocchio_moves_towards_feedback_and_stays_unit():
    q = arr(1.0, 0.0)
    moved = rocchio(q, arr(0.0, 1.0)[None], beta=1.0)
    assert moved == pytest.approx([np.sqrt(0.5), np.sqrt(0.5)])
    assert np.linalg.norm(rocchio(q, arr(0.0, 1.0, 0.6, 0.8).reshape(2, 2))) == pytest.approx(1)
    assert rocchio(q, arr(0.0, 1.0)[None], beta=0.0) == pytest.approx(q)
    assert rocchio(arr(2.0, 0.0), np.empty((0, 2))) == pytest.approx(q)
    assert rocchio(q, arr(0.0, 1.0)).dtype == np.float32  # one vector may be given flat


# --- fuse_with_feedback ---------------------------------------------------------------------

VECS = {
    1: arr(1.0, 0.0, 0.0),
    2: arr(0.8, 0.6, 0.0),
    3: arr(0.0, 1.0, 0.0),
    4: arr(0.6, 0.0, 0.8),
    5: arr(0.0, 0.0, 1.0),
}
QUERY = arr(0.9, 0.1, np.sqrt(1 - 0.82))


def test_feedback_without_feedback_equals_fuse_with_exact_cosines():
    dense_keys = ints(1, 4, 2)
    lexical_keys, lexical_scores = ints(3, 1, 5), arr(7.0, 5.0, 1.0)
    lexical_fill = {4: 2.0, 2: 0.0}
    cos = {k: float(v @ QUERY) for k, v in VECS.items()}
    plain = fuse(
        dense_keys,
        arr(*[cos[k] for k in dense_keys]),
        lexical_keys,
        lexical_scores,
        top_k=5,
        dense_fill=cos,
        lexical_fill=lexical_fill,
    )
    same = fuse_with_feedback(
        QUERY,
        VECS,
        dense_keys,
        lexical_keys,
        lexical_scores,
        top_k=5,
        lexical_fill=lexical_fill,
        beta=0.0,
        feedback_alpha=ALPHA,
    )
    assert keys(same) == keys(plain)
    assert [f.score for f in same] == pytest.approx([f.score for f in plain], abs=1e-6)
    for f in same:  # the original query's cosine and the rank in the given dense list
        assert f.dense_score == pytest.approx(cos[f.key], abs=1e-6)
        assert f.dense_rank == {1: 1, 4: 2, 2: 3}.get(f.key)


def test_feedback_pulls_in_neighbours_of_the_top_result():
    # Key 1 wins the first pass; with a strong pull towards it, 2 (close to 1) overtakes 4.
    dense_keys = ints(1, 4, 2)
    args = (QUERY, VECS, dense_keys, ints(1, 2, 4), arr(9.0, 1.0, 1.0))
    before = fuse_with_feedback(*args, top_k=3, beta=0.0, feedback_alpha=0.9)
    after = fuse_with_feedback(*args, top_k=3, beta=5.0, feedback_alpha=0.9)
    assert keys(before) == [1, 4, 2]
    assert keys(after) == [1, 2, 4]


def test_feedback_edge_cases():
    assert fuse_with_feedback(QUERY, VECS, EMPTY_KEYS, EMPTY_KEYS, EMPTY_SCORES, top_k=3) == []
    with pytest.raises(KeyError):
        fuse_with_feedback(QUERY, VECS, ints(1, 99), EMPTY_KEYS, EMPTY_SCORES, top_k=3)
    assert len(fuse_with_feedback(QUERY, VECS, ints(1, 2, 3), ints(5), arr(1.0), top_k=2)) == 2


def test_golden_bm25_on_its_own_set_and_with_query_term_weights() -> None:
    documents = [["pod", "run"], ["servic"], ["pod", "pod", "servic"]]
    # idf = ln(1 + 1.5 / 2.5) = ln 1.6; mean length 2; k1 1.2, b 0.75:
    # ln 1.6 * 2.2 / (1 + 1.2) and ln 1.6 * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 1.5)).
    assert np.allclose(bm25(["pod"], documents), [0.47, 0.0, 0.5666], atol=1e-4)
    # A weight scales its term's part, as a term repeated in the query would.
    weighted = bm25(["pod", "servic"], documents, {"pod": 0.5})
    plain = bm25(["pod", "servic"], documents)
    assert np.allclose(weighted, plain - 0.5 * bm25(["pod"], documents))
