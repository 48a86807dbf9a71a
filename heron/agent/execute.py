"""Running the model's tool calls: in parallel, each with a deadline, never raising.

Every failure becomes the call's result, which the model reads and can act on: a name
that was not offered, arguments the tool refuses, a tool that raises, a result JSON
cannot carry, a tool that does not answer in time. A call that times out is abandoned in
its (daemon) thread: Python cannot stop a thread, and waiting for it would hang the
answer.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from heron.agent.answer import ToolUse
from heron.errors import HeronError, InputError
from heron.llm.types import ToolCall
from heron.tools.model import Tool
from heron.tools.registry import ToolRegistry

#: A tool result reaches the model cut to this many characters (the answer keeps it whole).
MAX_RESULT_CHARS = 8000


def as_json(value: Any) -> str:
    """``value`` as strict JSON text (no NaN, no objects JSON lacks); ``ValueError`` or
    ``TypeError`` otherwise. A string is a text result and is kept as it is."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _invoke(
    call: ToolCall, offered: Mapping[str, Tool], registry: ToolRegistry
) -> tuple[Any, str | None, bool]:
    """``(result, error, refused)`` of one call."""
    if call.error is not None:  # the broker could not decode the name or the arguments
        return None, call.error, True
    if call.name not in offered:
        names = ", ".join(sorted(offered)) or "none"
        error = f"No tool {call.name!r} was offered for this request. Offered: {names}."
        return None, error, True
    try:
        result = registry.call(call.name, dict(call.arguments))
    except HeronError as exc:
        return None, str(exc), isinstance(exc, InputError)
    except Exception as exc:  # a tool's own bug must not end the conversation
        return None, f"{call.name} failed: {type(exc).__name__}: {exc}", False
    try:
        as_json(result)
    except (TypeError, ValueError) as exc:
        return None, f"{call.name} returned a result that is not valid JSON ({exc}).", False
    return result, None, False


def run_calls(
    calls: Sequence[ToolCall],
    offered: Mapping[str, Tool],
    registry: ToolRegistry,
    *,
    timeout: float,
    forced: str | None = None,
) -> list[ToolUse]:
    """Run ``calls`` at once, one thread each, and wait at most ``timeout`` seconds for
    each; the uses come back in the order of ``calls``."""
    outcomes: list[tuple[Any, str | None, bool, float] | None] = [None] * len(calls)

    def work(i: int, call: ToolCall) -> None:
        start = time.perf_counter()
        outcomes[i] = (*_invoke(call, offered, registry), time.perf_counter() - start)

    threads = [
        threading.Thread(target=work, args=(i, c), daemon=True, name=f"heron-tool-{c.name}")
        for i, c in enumerate(calls)
    ]
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    uses = []
    for call, outcome in zip(calls, outcomes, strict=True):
        if outcome is None:
            outcome = (None, f"{call.name} did not answer within {timeout:g} s.", False, timeout)
        result, error, refused, seconds = outcome
        uses.append(
            ToolUse(
                call.id,
                call.name,
                dict(call.arguments),
                error is None,
                result,
                error,
                round(seconds, 4),
                call.name == forced,
                refused,
            )
        )
    return uses


def tool_content(use: ToolUse, limit: int = MAX_RESULT_CHARS) -> str:
    """What the model reads as the result of ``use``: at most ``limit`` characters (and
    ``MAX_RESULT_CHARS``) of it, and how much was cut."""
    text = as_json({"error": use.error}) if use.error is not None else as_json(use.result)
    limit = min(limit, MAX_RESULT_CHARS)
    if len(text) > limit:
        text = text[:limit] + f"\n[... {len(text) - limit} more characters cut]"
    return text
