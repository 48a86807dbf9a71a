from __future__ import annotations

from heron.errors import HeronError
from heron.llm import NoModelAvailable, ProviderDown, RateLimited
from heron.redact import redact


def test_redact_masks_the_key_and_key_shapes() -> None:
    text = "bad key hunter2-secret, also sk-proj-abcdefghijkl and sk-ant-api03-xyzxyzxyz"
    out = redact(text, ["hunter2-secret", None])
    assert "hunter2" not in out and "abcdefghijkl" not in out and "xyzxyz" not in out
    assert out == "bad key [REDACTED], also [REDACTED] and [REDACTED]"


def test_errors_name_the_model_and_are_heron_errors() -> None:
    limited = RateLimited("fast", "rate limited (429)", retry_after=2.0)
    assert isinstance(limited, HeronError) and limited.retryable and limited.retry_after == 2.0
    assert str(limited) == "model 'fast': rate limited (429)"
    both = NoModelAvailable("fast", [limited, ProviderDown("local", "down")])
    assert "model 'fast': rate limited" in str(both) and "model 'local': down" in str(both)
    assert not both.retryable
