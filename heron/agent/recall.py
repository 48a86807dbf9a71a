"""What a conversation remembers besides its turns: the results of the jobs it delegated.

A job the agent hands on (``delegate_job``) ends after the turn that started it; its
verdict then joins that conversation's history as the tool result of that call, placed
after the turn that delegated it, so a later turn ("what did the check find?") is
answered from what the job found. ``Recall`` is handed to the agent by the wiring
(``heron.agent.wiring.job_results``): the agent knows no job store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from heron.core.chat import Message


@dataclass(frozen=True)
class Recalled:
    """Messages that joined a conversation at ``at`` (Unix seconds): they follow the
    first turn saved at or after it (the turn that started what they report)."""

    at: float
    messages: tuple[Message, ...]


#: ``recall(session_id)``: what joined that conversation, oldest first.
Recall = Callable[[str], list[Recalled]]


def interleave(
    exchanges: Sequence[tuple[float, Sequence[Message]]], recalled: Sequence[Recalled]
) -> list[Message]:
    """The turns' messages (each exchange: the time it was saved, its messages) with each
    ``Recalled`` after the first exchange saved at or after its time (the turn it
    happened in), oldest first; those later than every exchange (the turn being
    answered started them, or none is replayed) at the end.

    >>> user, reply, note = Message("user", "q"), Message("assistant", "a"), Message("tool", "r")
    >>> [m.role for m in interleave([(5.0, [user, reply])], [Recalled(4.0, (note,))])]
    ['user', 'assistant', 'tool']
    """
    pending = sorted(recalled, key=lambda r: r.at)
    messages: list[Message] = []
    for saved, turn in exchanges:
        messages += turn
        while pending and pending[0].at <= saved:
            messages += pending.pop(0).messages
    for rest in pending:
        messages += rest.messages
    return messages
