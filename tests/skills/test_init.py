"""``heron.skills`` exports what ``__all__`` lists."""

from __future__ import annotations

import heron.skills


def test_all_names_exist() -> None:
    for name in heron.skills.__all__:
        assert hasattr(heron.skills, name), name
    assert sorted(heron.skills.__all__) == sorted(set(heron.skills.__all__))
