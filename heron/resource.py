"""What Heron opens, it closes: ``Resource`` is the one base of everything that holds
something (a database, a pool, a model, a server process, a worker thread).

``with open_agent() as agent:`` closes the agent at the block's end; ``close()`` is
idempotent, so an owner that closes early and a ``with`` that closes again agree.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Self


class Resource(ABC):
    """What Heron opens: ``with`` closes it at the block's end (``close()`` is idempotent)."""

    @abstractmethod
    def close(self) -> None:
        """Release what it holds; a second call does nothing."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
