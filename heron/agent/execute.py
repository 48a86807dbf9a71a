"""Running the model's tool calls: in parallel, each with a deadline, never raising.

Every failure becomes the call's result, which the model reads and can act on: a name
that was not offered, arguments the tool refuses, a tool that raises, a result JSON
cannot carry, a tool that does not answer in time. Calls run on a ``ToolExecutor``: at
most ``workers`` threads, owned by whoever made it (the agent) and joined by its
``close()``. Python cannot stop a thread, so a call past its deadline is answered with a
timeout and left to finish on its worker; a call still waiting for a busy worker at the
deadline is cancelled and never runs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from heron.agent.answer import ToolUse
from heron.core.caller import Caller, calling
from heron.core.chat import ToolCall
from heron.core.tools import Tool
from heron.errors import HeronError, InputError
from heron.resource import Resource
from heron.tools.registry import ToolRegistry

#: A tool result reaches the model cut to this many characters (the answer keeps it whole).
MAX_RESULT_CHARS = 8000
#: Tool calls that run at once per agent; more wait for a worker (within their deadline).
TOOL_WORKERS = 8

Outcome = tuple[Any, str | None, bool, float]


class ToolExecutor(Resource):
    """At most ``workers`` tool calls at once, on threads named ``heron-tool-*``.

    ``close()`` cancels the calls not started and waits for the running ones (a call past
    its deadline included): no thread outlives it. Every tool kind Heron ships ends on its
    own (commands at their timeout, MCP calls at ``HERON_MCP_TIMEOUT``), which bounds that
    wait. ``close()`` twice does nothing; ``run_calls`` after it raises ``RuntimeError``.
    """

    def __init__(self, workers: int = TOOL_WORKERS) -> None:
        if workers < 1:
            raise ValueError(f"A ToolExecutor needs at least 1 worker, not {workers}.")
        self.workers = workers
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="heron-tool")

    def submit(
        self,
        call: ToolCall,
        offered: Mapping[str, Tool],
        registry: ToolRegistry,
        caller: Caller | None = None,
    ) -> Future:
        return self._pool.submit(_timed, call, offered, registry, caller)

    def close(self, *, join: bool = True) -> None:
        """``join=False`` returns at once: the running calls end on their own."""
        self._pool.shutdown(wait=join, cancel_futures=True)


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


def _timed(
    call: ToolCall, offered: Mapping[str, Tool], registry: ToolRegistry, caller: Caller | None
) -> Outcome:
    start = time.perf_counter()
    with calling(caller):  # set on the worker thread itself: pool threads share no context
        return (*_invoke(call, offered, registry), time.perf_counter() - start)


def run_calls(
    calls: Sequence[ToolCall],
    offered: Mapping[str, Tool],
    registry: ToolRegistry,
    *,
    timeout: float,
    forced: str | None = None,
    executor: ToolExecutor | None = None,
    caller: Caller | None = None,
) -> list[ToolUse]:
    """Run ``calls`` at once on ``executor`` and wait at most ``timeout`` seconds for all
    of them; the uses come back in the order of ``calls``. Without an ``executor``, one
    is made for these calls and let go at the deadline: a call past it then finishes on
    a thread nobody joins. An agent passes its own, which its ``close()`` joins.
    ``caller``: the conversation, current while each call runs (``heron.core.caller``)."""
    if executor is None:
        own = ToolExecutor(max(1, min(len(calls), TOOL_WORKERS)))
        try:
            return run_calls(
                calls,
                offered,
                registry,
                timeout=timeout,
                forced=forced,
                executor=own,
                caller=caller,
            )
        finally:
            own.close(join=False)
    futures = [executor.submit(call, offered, registry, caller) for call in calls]
    wait(futures, timeout=timeout)
    uses = []
    for call, future in zip(calls, futures, strict=True):
        if future.done():
            outcome: Outcome = future.result()
        elif future.cancel():  # it never started: every worker was busy until the deadline
            error = (
                f"{call.name} did not start within {timeout:g} s: all {executor.workers} "
                "tool workers were busy with earlier calls. Try again when they finish."
            )
            outcome = (None, error, False, timeout)
        else:
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
