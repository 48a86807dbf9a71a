"""Operations: diagnose (``doctor``), watch and repair (``watchdog``), back up and restore."""

from __future__ import annotations

from heron.ops.backup import BackupReport, backup, restore
from heron.ops.doctor import CHECKS, Report, doctor
from heron.ops.doctor_checks import Check

__all__ = ["CHECKS", "BackupReport", "Check", "Report", "backup", "doctor", "restore"]
