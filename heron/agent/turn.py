"""``Turn``: what one turn of the agent is asked, declared once.

The CLI, the JSON-RPC ``agent.chat`` (``ChatParams.turn``), the SSE chat and the ``/v1``
adapter (``heron.server.doors.openai.turn``) each build one; ``Agent.ask`` and ``Agent.stream``
take it.

>>> Turn("How does Heron pick tools?", library="heron", answer="extractive").library
'heron'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from heron.agent.answer import ANSWER_MODES, AnswerMode
from heron.agent.words import Surface
from heron.core.chat import Message, Sampling
from heron.core.tools import Safety, Tool
from heron.errors import InputError
from heron.jobs.service import MAX_SCOPE

TOOL_CHOICES = ("auto", "none", "required")


@dataclass(frozen=True)
class Turn:
    """One message to answer, and how. With ``message`` alone: a grounded answer in the
    model's default mode, a new session.

    - ``session_id`` continues a conversation (a new one when ``None``; the answer
      carries its id). ``library`` searches that library only; ``model`` is an alias of
      models.yml.
    - ``answer``: ``"extractive"`` (quoted from the passages, no model call) or
      ``"generative"`` (written by the model). ``None``: generative when the client sent
      tools, history ending in tool results, or a ``response_format`` (only a model can
      act on those), else the model's ``answers`` capability.
    - ``instructions``: the client's system messages, joined. They go into the system
      prompt after Heron's grounding rules; an extractive answer ignores them.
    - ``history``: the client's conversation, oldest first: ``user``, ``assistant``
      (with its ``tool_calls``) and ``tool`` messages, no ``system`` ones. Used instead
      of the session's history. When it ends with ``tool`` messages (the client ran the
      tools of a ``finish_reason="tool_calls"`` answer), the turn continues from there:
      ``message`` is then the text of its last ``user`` message, which gets the
      grounding (the passages) where it stands. Otherwise it holds the turns before
      ``message``.
    - ``sampling``: passed to every model call of the turn (a provider that cannot
      honour a field refuses the call naming it); ``sampling.max_tokens`` caps the
      answer (and the length of an extractive one, at about 4 characters a token).
      Penalties left unset get ``PENALTIES`` on calls that write text.
    - ``client_tools``: tools the client runs. When they are sent, the model is offered
      those alone, none of Heron's: the client decides what may happen, and a call of
      Heron's would run here, unasked by it. When the model calls one, the turn ends:
      ``Answer.tool_calls`` holds the calls, unrun, and ``finish_reason`` is
      ``"tool_calls"``.
    - ``tool_choice``: for the first model call: ``"auto"``, ``"none"`` (no tool at all,
      Heron's included), ``"required"`` or a client tool's name. Without client tools,
      ``"auto"`` lets triage force Heron's best tool. ``"required"`` and a name make the
      first call one of the client's tools (the local model is held to them by a
      grammar); a model that answers otherwise is a ``ProviderError``.
    - ``user``: who asks (the API's ``user``), the actor ``on_tool_use`` and
      ``on_search`` are told of; ``""`` for nobody in particular.
    - ``room``: who shares the conversation (a team, a workspace): a job the agent
      delegates (``delegate_job``) records it, and its events reach that room's stream.
      ``None``: ``interventions_room``, the room of what Heron raises itself.
    - ``tool_safety``: the most harmful of Heron's tools offered (``SAFETY_LEVELS``);
      ``None``: ``agent_tool_safety``. ``/v1`` passes ``openai_tool_safety``.
    - ``delegate``: whether ``delegate_job`` is offered whatever ``tool_safety``
      (``heron.tools.ceiling.delegates``: the door and the key decide); ``None``:
      ``agent_delegate``. A server passes its door's answer.
    - ``local_tools``: whether Heron's ``local-only`` tools (``python_exec``) may be
      offered; ``/v1`` passes ``False``: a client's request never runs code here.
    - ``surface``: who reads the messages (``heron.agent.words``): ``"cli"`` (hints name
      commands and flags, ``--model``), ``"api"`` (the request's fields, ``model``) or
      ``"page"`` (what the page offers).

    ``instructions``, ``user`` and ``room`` are kept stripped, ``history`` and ``client_tools`` as
    tuples, whatever sequence the caller gave."""

    message: str
    session_id: str | None = None
    library: str | None = None
    model: str | None = None
    answer: AnswerMode | None = None
    instructions: str = ""
    history: Sequence[Message] | None = None
    sampling: Sampling = field(default_factory=Sampling)
    client_tools: Sequence[Tool] = ()
    tool_choice: str = "auto"
    user: str = ""
    room: str | None = None
    tool_safety: Safety | None = None
    delegate: bool | None = None
    local_tools: bool = True
    surface: Surface = "cli"

    def __post_init__(self) -> None:
        # Frozen: the normal forms are set once, here, so no caller's list is shared.
        set_ = object.__setattr__
        set_(self, "instructions", self.instructions.strip())
        set_(self, "history", None if self.history is None else tuple(self.history))
        set_(self, "client_tools", tuple(self.client_tools))
        set_(self, "user", self.user.strip())
        set_(self, "room", None if self.room is None else self.room.strip())

    @property
    def continues(self) -> bool:
        """The client's history ends with its tools' results: the turn goes on from there."""
        return bool(self.history) and self.history[-1].role == "tool"  # type: ignore[index]

    def validate(self) -> None:
        """Refuse fields that cannot work together (``InputError``), before any work."""
        if self.answer is not None and self.answer not in ANSWER_MODES:
            raise InputError(
                f"Unknown answer mode {self.answer!r}. Choose from: {', '.join(ANSWER_MODES)}."
            )
        if self.sampling.max_tokens is not None and self.sampling.max_tokens < 1:
            raise InputError(f"max_tokens must be at least 1, got {self.sampling.max_tokens}.")
        self._validate_room()
        self._validate_tools()
        self._validate_history()

    def _validate_room(self) -> None:
        # The jobs' rule: a room is a name in a URL (``/jobs/stream?room=R``).
        room = self.room
        if room is not None and (
            not room
            or len(room) > MAX_SCOPE
            or any(c.isspace() or not c.isprintable() for c in room)
        ):
            raise InputError(
                f"room is a name of 1 to {MAX_SCOPE} printable characters without spaces, "
                f"not {room[:40]!r}; leave it out for the default room."
            )

    def _validate_tools(self) -> None:
        names = [t.name for t in self.client_tools]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InputError(f"The tools sent name {', '.join(twice)} more than once.")
        choice = self.tool_choice
        if choice not in TOOL_CHOICES and choice not in names:
            raise InputError(
                f"tool_choice {choice!r} is neither auto, none nor required, nor the name of "
                f"a tool sent (sent: {', '.join(names) or 'none'})."
            )
        if choice == "required" and not names:
            raise InputError("tool_choice 'required' needs tools; send them in 'tools'.")

    def _validate_history(self) -> None:
        called: set[str] = set()
        for i, m in enumerate(self.history or ()):
            if m.role == "system":
                raise InputError(
                    f"history[{i}] is a system message; pass system messages as instructions."
                )
            called |= {c.id for c in m.tool_calls}
            if m.role == "tool" and m.tool_call_id not in called:
                raise InputError(
                    f"history[{i}] is a tool result for call {m.tool_call_id!r}, which no "
                    "earlier assistant message made; send the assistant message with its "
                    "tool_calls before the results."
                )
