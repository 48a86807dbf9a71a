"""Tool calls on a bounded executor: in parallel, every failure a result, none raises."""

from __future__ import annotations

import threading
import time
from typing import Any

from heron.agent import run_calls
from heron.agent.execute import MAX_RESULT_CHARS, ToolExecutor, tool_content
from heron.core.chat import ToolCall
from heron.errors import InputError
from heron.tools import Tool, ToolRegistry

released = threading.Event()


def registry() -> ToolRegistry:
    reg = ToolRegistry()

    def nap(a: dict[str, Any]) -> dict[str, Any]:
        time.sleep(a["seconds"])
        return {"slept": a["seconds"]}

    handlers = {
        "nap": nap,
        "hang": lambda a: released.wait(60),
        "nan": lambda a: {"value": float("nan")},
        "bytes": lambda a: {"value": b"\x00\x01"},
        "text": lambda a: "plain text, not JSON",
        "refuse": lambda a: (_ for _ in ()).throw(InputError("path must be relative")),
        "crash": lambda a: 1 / 0,
        "big": lambda a: "x" * (MAX_RESULT_CHARS + 10),
    }
    for name, handler in handlers.items():
        reg.add(Tool(name, f"test tool {name}"), handler)
    return reg


def call(name: str, i: int = 0, **arguments: Any) -> ToolCall:
    return ToolCall(f"call_{i}", name, arguments)


def run(*calls: ToolCall, timeout: float = 5.0):
    reg = registry()
    offered = {t.name: t for t in reg.tools()}
    return run_calls(calls, offered, reg, timeout=timeout)


def test_independent_calls_run_at_the_same_time_and_keep_their_order() -> None:
    start = time.perf_counter()
    uses = run(
        call("nap", 0, seconds=0.4), call("nap", 1, seconds=0.2), call("nap", 2, seconds=0.4)
    )
    assert time.perf_counter() - start < 0.9  # serial would take 1.0 s
    assert [u.id for u in uses] == ["call_0", "call_1", "call_2"]
    assert [u.result for u in uses] == [{"slept": 0.4}, {"slept": 0.2}, {"slept": 0.4}]
    assert all(u.ok and u.error is None for u in uses)


def test_a_hanging_tool_times_out_without_holding_the_others() -> None:
    start = time.perf_counter()
    hung, quick = run(call("hang", 0), call("nap", 1, seconds=0.01), timeout=0.5)
    assert time.perf_counter() - start < 2
    assert not hung.ok and "did not answer within 0.5 s" in hung.error
    assert quick.ok
    assert '"error"' in tool_content(hung)
    released.set()


def test_results_json_cannot_carry_become_errors() -> None:
    for name in ("nan", "bytes"):
        (use,) = run(call(name))
        assert not use.ok and "not valid JSON" in use.error, use


def test_a_text_result_is_passed_as_it_is() -> None:
    (use,) = run(call("text"))
    assert use.ok and tool_content(use) == "plain text, not JSON"


def test_refusals_crashes_and_unknown_tools_become_tool_results() -> None:
    refused, crashed, unknown = run(call("refuse"), call("crash", 1), call("rm_rf", 2))
    assert refused.error == "path must be relative"
    assert "ZeroDivisionError" in crashed.error
    assert "No tool 'rm_rf' was offered" in unknown.error and "nap" in unknown.error


def test_a_call_the_broker_could_not_decode_is_answered_with_its_error() -> None:
    bad = ToolCall("call_9", "nap", {}, "The arguments are not valid JSON")
    (use,) = run(bad)
    assert not use.ok and use.error == "The arguments are not valid JSON"


def test_long_results_are_cut_for_the_model_but_kept_whole() -> None:
    (use,) = run(call("big"))
    content = tool_content(use)
    assert len(use.result) == MAX_RESULT_CHARS + 10
    assert content.startswith("x" * 100) and content.endswith("[... 10 more characters cut]")


def test_at_most_the_executors_workers_run_at_once() -> None:
    reg, lock = ToolRegistry(), threading.Lock()
    running, most = [0], [0]

    def busy(a: dict[str, Any]) -> str:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.1)
        with lock:
            running[0] -= 1
        return "done"

    reg.add(Tool("busy", "test tool busy"), busy)
    offered = {t.name: t for t in reg.tools()}
    executor = ToolExecutor(2)
    try:
        uses = run_calls(
            [call("busy", i) for i in range(6)], offered, reg, timeout=5, executor=executor
        )
    finally:
        executor.close()
    assert all(u.ok for u in uses) and most[0] == 2


def test_a_call_waiting_for_a_busy_worker_at_the_deadline_never_runs() -> None:
    reg, ran, release = ToolRegistry(), threading.Event(), threading.Event()
    reg.add(Tool("hang", "test tool hang"), lambda a: release.wait(5))
    reg.add(Tool("mark", "test tool mark"), lambda a: ran.set())
    offered = {t.name: t for t in reg.tools()}
    executor = ToolExecutor(1)
    try:
        hung, queued = run_calls(
            [call("hang", 0), call("mark", 1)], offered, reg, timeout=0.3, executor=executor
        )
    finally:
        release.set()
        executor.close()
    assert "did not answer within 0.3 s" in hung.error
    assert "did not start within 0.3 s" in queued.error and "1 tool workers were busy" in (
        queued.error
    )
    assert not ran.is_set()  # cancelled, not run after the answer went out
    assert not [t for t in threading.enumerate() if t.name.startswith("heron-tool")]
