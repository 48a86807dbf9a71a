"""``heron.redact``: planted secrets of each common kind are masked, ordinary text is not."""

from __future__ import annotations

import logging

import pytest

from heron.redact import MASK, RedactingFilter, redact, redact_value

SECRETS = [
    ("OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t"),
    ("key sk-ant-api03-abcdefghijklmnopqrstuvwx used", "sk-ant-api03-abcdefghijklmnopqrstuvwx"),
    (
        "remote: ghp_1234567890abcdefghijABCDEFGHIJ123456",
        "ghp_1234567890abcdefghijABCDEFGHIJ123456",
    ),
    (
        "token github_pat_11ABCDEFG0123456789_abcdefghijkl",
        "github_pat_11ABCDEFG0123456789_abcdefghijkl",
    ),
    ("aws AKIAIOSFODNN7EXAMPLE ok", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCY"),
    ("Authorization: Bearer abc.def-ghi_jkl", "abc.def-ghi_jkl"),
    ("-H 'authorization: Basic dXNlcjpwYXNz'", "dXNlcjpwYXNz"),
    ('{"password": "hunter2", "user": "bob"}', "hunter2"),
    ("DB_PASSWORD=correct-horse", "correct-horse"),
    ("postgres://bob:s3cr3t@db:5432/app", "s3cr3t"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    ),
    ("slack xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij"),
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_planted_secrets_are_masked(text: str, secret: str) -> None:
    clean = redact(text)
    assert secret not in clean
    assert MASK in clean


@pytest.mark.parametrize(
    "text",
    [
        "## main...origin/main [ahead 1]\n M app.py",
        " app.py | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)",
        "FAILED tests/test_auth.py::test_login - AssertionError",
        "Author: Alice <alice@example.com>",
        "see https://example.com/docs/tokens.html",
    ],
)
def test_ordinary_output_is_kept(text: str) -> None:
    assert redact(text) == text


def test_values_under_secret_keys_are_masked_whole() -> None:
    value = {
        "api_key": "anything",
        "X-Api-Key": "abc",
        "headers": {"Authorization": "whatever"},
        "github_token": ["x"],
        "note": "contains sk-abcdefghijklmnopqrstuvwx",
        "tokens_used": 12,
        "empty_password": "",
    }
    assert redact_value(value) == {
        "api_key": MASK,
        "X-Api-Key": MASK,
        "headers": {"Authorization": MASK},
        "github_token": MASK,
        "note": f"contains {MASK}",
        "tokens_used": 12,
        "empty_password": "",
    }


def test_logging_filter(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("heron.test.redact")
    log.addFilter(RedactingFilter())
    with caplog.at_level(logging.INFO, logger="heron.test.redact"):
        log.info("calling with %s", "Authorization: Bearer topsecret123")
    assert "topsecret123" not in caplog.text and MASK in caplog.text
