"""The condition language: parsed by its own tokenizer, evaluated against what a check saw."""

from __future__ import annotations

import pytest

from heron.ops.watchdog import Condition, ConditionError

SEEN = {
    "STATUS": 200,
    "RESPONSE_TIME": 42.5,
    "CONNECTED": True,
    "BODY": {"ready": True, "status": "UP", "checks": [{"ok": True}, {"ok": False}], "n": 1},
}


@pytest.mark.parametrize(
    ("text", "holds"),
    [
        ("[STATUS] == 200", True),
        ("[STATUS] != 200", False),
        ("[RESPONSE_TIME] < 500", True),
        ("[RESPONSE_TIME] >= 42.5", True),
        ("[BODY].ready == true", True),
        ("[BODY].checks[0].ok == true", True),
        ("[BODY].checks[1].ok == true", False),
        ("[BODY].checks[-1].ok == false", True),
        ("[BODY].checks[5].ok == true", False),  # no such element: fails, does not raise
        ("len([BODY].checks) > 0", True),
        ("len([BODY].checks) == 2", True),
        ("[CONNECTED] == true", True),
        ("[BODY].status == UP", True),  # a bare word is a string
        ("[BODY].status == 'UP'", True),
        ('[BODY].status == "DOWN"', False),
        ("[STATUS] == '200'", True),  # as in Gatus, a number and its text are equal
        ("[BODY].n == true", False),  # but a bool is never a number
        ("[BODY].missing == null", False),  # missing is not null
        ("[BODY].status < 5", False),  # ordering compares numbers only
    ],
)
def test_conditions_evaluate(text: str, holds: bool) -> None:
    assert Condition.parse(text).evaluate(SEEN)[0] is holds


def test_the_detail_shows_the_value_found() -> None:
    ok, detail = Condition.parse("[BODY].checks[1].ok == true").evaluate(SEEN)
    assert (ok, detail) == (False, "[BODY].checks[1].ok (false) == true")
    assert "missing" in Condition.parse("[BODY].x.y == 1").evaluate(SEEN)[1]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "it is empty"),
        ("[STATUS] = 200", "unexpected '= 200' at column 10"),
        ("[STATUS] ==", "it ends early; expected a value"),
        ("[STATUS] 200", "expected an operator but found '200'"),
        ("[STAUTS] == 200", "unknown placeholder [STAUTS]"),
        ("[BODY].a[x] == 1", "expected a number but found 'x'"),
        ("[BODY].a[1.5] == 1", "an index is a whole number"),
        ("len([BODY] > 1", "expected ) but found '>'"),
        ("[STATUS] == 200 and true", "unexpected 'and' after the condition"),
        ("__import__('os') == 1", "expected an operator but found '('"),
        ("[STATUS] == $HOME", "unexpected '$HOME'"),
    ],
)
def test_a_malformed_condition_is_a_clear_error(text: str, said: str) -> None:
    with pytest.raises(ConditionError) as caught:
        Condition.parse(text)
    message = str(caught.value)
    assert said in message and repr(text) in message
    assert "e.g. '[STATUS] == 200'" in message  # and how to write one
