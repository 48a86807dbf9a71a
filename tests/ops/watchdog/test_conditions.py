"""The condition language: parsed by its own tokenizer, evaluated against what a check saw."""

from __future__ import annotations

import pytest

from heron.ops.watchdog import Condition, ConditionError

SEEN = {
    "STATUS": 200,
    "RESPONSE_TIME": 42.5,
    "CONNECTED": True,
    "CERTIFICATE_EXPIRATION": 36 * 3600 * 1000,  # 36 hours, in milliseconds as in Gatus
    "BODY": {"ready": True, "status": "UP", "checks": [{"ok": True}, {"ok": False}], "n": 1,
             "name": "john-doe", "errors": [], "uptime": "90s", "ip": "192.168.1.7"},
}  # fmt: skip


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
        # Gatus's functions, as its README documents them.
        ("[STATUS] == any(200, 429)", True),
        ("[STATUS] == any(201, 429)", False),
        ("[STATUS] != any(500, 503)", True),
        ("[BODY].status == any(UP, DEGRADED)", True),
        ("[STATUS] == pat(2*)", True),
        ("[STATUS] == pat(4*)", False),
        ("[BODY].name == pat(john*)", True),
        ("[BODY].name == pat(*doe)", True),
        ("[BODY].name == pat(jane*)", False),
        ("[BODY].ip == pat(192.168.*.*)", True),
        ("[BODY].name == pat(john-?oe)", True),
        ("[BODY] == pat(*john-doe*)", True),  # the whole body as text
        ("pat(2*) == [STATUS]", True),  # either side
        ("has([BODY].errors) == true", True),
        ("has([BODY].nothing) == false", True),
        ("has([BODY].checks[1].ok) == true", True),
        ("len([BODY].name) == 8", True),
        ("len([BODY].errors) == 0", True),
        # Durations: literals and what the check saw, in milliseconds.
        ("[RESPONSE_TIME] < 1s", True),
        ("[RESPONSE_TIME] < 40ms", False),
        ("[RESPONSE_TIME] < 1m30s", True),
        ("[CERTIFICATE_EXPIRATION] > 48h", False),
        ("[CERTIFICATE_EXPIRATION] > 1d", True),
        ("[CERTIFICATE_EXPIRATION] > 35h59m", True),
        ("[BODY].uptime > 1m", True),
        ("[BODY].uptime < 1m", False),
        ("[BODY].uptime == 90s", True),  # equality compares as written
    ],
)
def test_conditions_evaluate(text: str, holds: bool) -> None:
    assert Condition.parse(text).evaluate(SEEN)[0] is holds


def test_a_certificate_s_time_left_is_shown_as_a_duration() -> None:
    detail = Condition.parse("[CERTIFICATE_EXPIRATION] > 48h").evaluate(SEEN)[1]
    assert detail == "[CERTIFICATE_EXPIRATION] (36h) > 48h"


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
        ("[STATUS] < pat(2*)", "pat() and any() go with == or !="),
        ("[STATUS] == pat(2*", "pat( is not closed by ')'"),
        ("pat(a) == any(b)", "pat() or any() on both sides"),
        ("len(has([BODY])) == 1", "len() takes a placeholder or a value"),
    ],
)
def test_a_malformed_condition_is_a_clear_error(text: str, said: str) -> None:
    with pytest.raises(ConditionError) as caught:
        Condition.parse(text)
    message = str(caught.value)
    assert said in message and repr(text) in message
    assert "e.g. '[STATUS] == 200'" in message  # and how to write one
