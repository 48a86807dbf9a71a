from __future__ import annotations

import heron.books


def test_all_names_exist() -> None:
    for name in heron.books.__all__:
        assert hasattr(heron.books, name), name
