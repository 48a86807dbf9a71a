from __future__ import annotations

import heron.agent


def test_all_names_exist() -> None:
    for name in heron.agent.__all__:
        assert hasattr(heron.agent, name), name
