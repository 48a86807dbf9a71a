"""``within(seconds, attack)``: run an attack in a forked child with a deadline, so code
that hangs on it (a YAML bomb, a FIFO, a regex in quadratic time) fails the test instead
of hanging the suite."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from typing import Any


def within(seconds: float, attack: Callable[[], Any]) -> tuple[Any, float]:
    """``attack()``'s result and how long it took in the child; ``AssertionError`` when it
    is still running after ``seconds`` (the child is killed). An exception the attack
    raised is raised here."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def child() -> None:
        started = time.perf_counter()
        try:
            send.send((attack(), time.perf_counter() - started))
        except BaseException as exc:  # the test fails with it, not with a timeout
            send.send((RuntimeError(f"{type(exc).__name__}: {exc}"), 0.0))

    process = context.Process(target=child, daemon=True)
    process.start()
    try:
        if not receive.poll(seconds):
            raise AssertionError(f"still running after {seconds} s")
        result, elapsed = receive.recv()
        if isinstance(result, BaseException):
            raise result
        return result, elapsed
    finally:
        process.kill()
        process.join()
