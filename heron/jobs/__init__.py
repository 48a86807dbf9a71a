"""Durable delegated work: jobs that check a workspace in the background, record every
step as an event, park before risky work until a person confirms, and can be aborted.

See docs/jobs.md. ``open_jobs()`` gives the ``Jobs`` facade; ``JobRunner`` runs them.
"""

from __future__ import annotations

from heron.jobs.base import JobStore
from heron.jobs.errors import IllegalTransition, JobError, JobInputError, JobNotFound
from heron.jobs.model import RISK_LEVELS, STATES, TERMINAL, Job, JobEvent, Risk, State
from heron.jobs.runner import JobRunner
from heron.jobs.service import Jobs, jobs_db_path, open_jobs
from heron.jobs.sql import JOBS, SQLJobStore
from heron.jobs.steps import Step, plan

__all__ = [
    "JOBS",
    "RISK_LEVELS",
    "STATES",
    "TERMINAL",
    "IllegalTransition",
    "Job",
    "JobError",
    "JobEvent",
    "JobInputError",
    "JobNotFound",
    "JobRunner",
    "JobStore",
    "Jobs",
    "Risk",
    "SQLJobStore",
    "State",
    "Step",
    "jobs_db_path",
    "open_jobs",
    "plan",
]
