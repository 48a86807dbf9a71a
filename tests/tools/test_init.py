from __future__ import annotations

import heron.tools


def test_all_names_exist() -> None:
    for name in heron.tools.__all__:
        assert hasattr(heron.tools, name), name
