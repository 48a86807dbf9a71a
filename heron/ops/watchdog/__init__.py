"""The watchdog: checks over Heron and what it runs on, targeted remedies with a budget,
alerts through apprise, a report and a history, and sync-deploy with rollback.

>>> from heron.ops.watchdog import Watchdog, load_config
>>> report = Watchdog(load_config(None, settings), settings).run_once()
... # doctest: +SKIP

See docs/operations.md, "Watchdog".
"""

from __future__ import annotations

from heron.ops.watchdog.conditions import Condition, ConditionError
from heron.ops.watchdog.config import (
    WatchdogConfig,
    config_path,
    default_config,
    load_config,
    parse_config,
    parse_duration,
)
from heron.ops.watchdog.report import history_path, latest_path, read_latest
from heron.ops.watchdog.runner import Watchdog, watch

__all__ = [
    "Condition",
    "ConditionError",
    "Watchdog",
    "WatchdogConfig",
    "config_path",
    "default_config",
    "history_path",
    "latest_path",
    "load_config",
    "parse_config",
    "parse_duration",
    "read_latest",
    "watch",
]
