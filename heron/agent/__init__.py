"""The agent: triage, retrieval, tool routing, model calls and tool runs, one grounded
answer with citations. See docs/agent.md. ``heron.agent.wiring`` is where the
capabilities are wired together (``open_agent``, ``open_tools``, ``job_runner``).

>>> from heron.agent import Turn, open_agent                # doctest: +SKIP
>>> agent = open_agent()
>>> answer = agent.ask(Turn("How does Heron pick tools?"))
>>> answer.to_dict()["citations"][0]["page"]
'tools'
"""

from __future__ import annotations

from heron.agent.agent import MAX_MESSAGE_BYTES, Agent
from heron.agent.answer import (
    ANSWER_MODES,
    AgentEvent,
    Answer,
    AnswerMode,
    Citation,
    Citations,
    ClientToolCalls,
    Final,
    Token,
    ToolUse,
    ToolUsed,
)
from heron.agent.execute import run_calls
from heron.agent.extractive import Extract, Limits, compose
from heron.agent.guard import RepetitionGuard, repeats
from heron.agent.sessions import Sessions, open_sessions
from heron.agent.triage import Triage, triage
from heron.agent.turn import Turn
from heron.agent.wiring import job_runner, open_agent, open_tools

__all__ = [
    "ANSWER_MODES",
    "MAX_MESSAGE_BYTES",
    "Agent",
    "AgentEvent",
    "Answer",
    "AnswerMode",
    "Citation",
    "Citations",
    "ClientToolCalls",
    "Extract",
    "Final",
    "Limits",
    "RepetitionGuard",
    "Sessions",
    "Token",
    "ToolUse",
    "ToolUsed",
    "Triage",
    "Turn",
    "compose",
    "job_runner",
    "open_agent",
    "open_sessions",
    "open_tools",
    "repeats",
    "run_calls",
    "triage",
]
