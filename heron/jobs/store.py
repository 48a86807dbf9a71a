"""Where ``JobStore`` was first defined; it lives in ``heron.jobs.base`` now, with its
contract. Kept so that ``from heron.jobs.store import JobStore`` goes on working."""

from __future__ import annotations

from heron.jobs.base import JobStore

__all__ = ["JobStore"]
