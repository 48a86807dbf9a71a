"""What allowlisted programs may be given and the environment they run in, shared by the
workspace tools (``heron.tools``), jobs (``heron.jobs``) and library syncs
(``heron.libraries``). See docs/tools.md, "Program policy".
"""

from __future__ import annotations

from heron.programs.env import (
    WORKSPACE_PROTOCOLS,
    check_git_config,
    git_environment,
    program_environment,
)
from heron.programs.policy import (
    Policy,
    PolicyFile,
    ProgramRefused,
    load_policy,
)
from heron.programs.rules import Option, Program

__all__ = [
    "WORKSPACE_PROTOCOLS",
    "Option",
    "Policy",
    "PolicyFile",
    "Program",
    "ProgramRefused",
    "check_git_config",
    "git_environment",
    "load_policy",
    "program_environment",
]
