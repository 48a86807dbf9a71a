"""The agent: triage, retrieval, tool routing, model calls and tool runs, one grounded
answer with citations. See docs/agent.md. ``heron.wiring`` opens one on the parts the
settings describe (``open_agent``).

>>> from heron.agent import Turn                            # doctest: +SKIP
>>> from heron.settings import Settings
>>> from heron.wiring import open_agent
>>> agent = open_agent(Settings())
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
    "open_sessions",
    "repeats",
    "run_calls",
    "triage",
]
