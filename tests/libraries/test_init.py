from __future__ import annotations

import heron.libraries


def test_all_names_exist() -> None:
    for name in heron.libraries.__all__:
        assert hasattr(heron.libraries, name), name
