"""Errors of ``heron.jobs``.

JobError (HeronError)
 ├── IllegalTransition  a state change the job's state machine forbids
 ├── JobInputError      (also InputError) a bad prompt, risk level or id
 └── JobNotFound        (also NotFound) no job with that id
"""

from __future__ import annotations

from heron.errors import HeronError, InputError, NotFound


class JobError(HeronError):
    pass


class IllegalTransition(JobError, InputError):
    pass


class JobInputError(JobError, InputError):
    pass


class JobNotFound(JobError, NotFound):
    pass
