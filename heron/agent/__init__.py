"""The agent: triage, retrieval, tool routing, model calls and tool runs, one grounded
answer with citations. See docs/agent.md.

>>> from heron.agent import open_agent                      # doctest: +SKIP
>>> agent = open_agent()
>>> answer = agent.ask("How does Heron pick tools?")
>>> answer.to_dict()["citations"][0]["page"]
'tools'
"""

from __future__ import annotations

from heron.agent.agent import MAX_MESSAGE_BYTES, Agent, open_agent
from heron.agent.answer import (
    AgentEvent,
    Answer,
    Citation,
    Citations,
    Final,
    Token,
    ToolUse,
    ToolUsed,
)
from heron.agent.execute import run_calls
from heron.agent.sessions import Sessions
from heron.agent.triage import Triage, triage

__all__ = [
    "MAX_MESSAGE_BYTES",
    "Agent",
    "AgentEvent",
    "Answer",
    "Citation",
    "Citations",
    "Final",
    "Sessions",
    "Token",
    "ToolUse",
    "ToolUsed",
    "Triage",
    "open_agent",
    "run_calls",
    "triage",
]
