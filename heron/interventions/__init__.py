"""Interventions: the least intrusive notice that fits a detected condition, from a
deterministic template, never nagging (a room's cooldown, one per active condition), with
every intervention, its deliveries and its outcome stored.

See docs/interventions.md. ``open_interventions()`` gives the ``Interventions`` facade.
"""

from __future__ import annotations

from heron.interventions.base import InterventionStore
from heron.interventions.detectors import (
    Activity,
    LibraryHealth,
    SearchRecord,
    job_changed,
    library_health,
    search_misses,
    watchdog_incident,
)
from heron.interventions.model import (
    OUTCOMES,
    SEVERITIES,
    STATUSES,
    Action,
    Condition,
    Delivery,
    Intervention,
    KindStats,
    Rendered,
    Resolution,
)
from heron.interventions.policy import Policy, load_policy
from heron.interventions.service import Interventions, interventions_db_path, open_interventions
from heron.interventions.sql import INTERVENTIONS, SQLInterventionStore
from heron.interventions.templates import Templates, load_templates
from heron.interventions.voice import EspeakVoice, SpeechVoice, VoiceError

__all__ = [
    "INTERVENTIONS",
    "OUTCOMES",
    "SEVERITIES",
    "STATUSES",
    "Action",
    "Activity",
    "Condition",
    "Delivery",
    "EspeakVoice",
    "Intervention",
    "InterventionStore",
    "Interventions",
    "KindStats",
    "LibraryHealth",
    "Policy",
    "Rendered",
    "Resolution",
    "SQLInterventionStore",
    "SearchRecord",
    "SpeechVoice",
    "Templates",
    "VoiceError",
    "interventions_db_path",
    "job_changed",
    "library_health",
    "load_policy",
    "load_templates",
    "open_interventions",
    "search_misses",
    "watchdog_incident",
]
