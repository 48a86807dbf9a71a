"""Attacks on redaction: secrets cut in half by a size limit, secrets of several words,
credentials in URLs, and the places they would be written down (``jobs.db``,
``agent.db``, ``tools.list``, ``heron tools list``, log lines). Each test plants the
secret and then reads the bytes that were written."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from heron.agent import Sessions
from heron.agent.sessions import sessions_file
from heron.core.workspace import MAX_OUTPUT
from heron.jobs import JobRunner, open_jobs
from heron.redact import MASK, RedactingFilter, redact, redact_then_cut, redact_value
from heron.settings import Settings
from tests.security.deadline import within

KEY_LINES = [
    base64.b64encode(hashlib.sha512(bytes([i])).digest()[:48]).decode() for i in range(26)
]  # 26 lines of 64 base64 characters, like a 2048-bit RSA key's body
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(KEY_LINES) + "\n-----END RSA PRIVATE KEY-----\n"
)
PASSPHRASE = "correct horse battery staple"


def leaked_lines(data: bytes) -> list[str]:
    return [line for line in KEY_LINES if line.encode() in data]


def db_bytes(path: Path) -> bytes:
    """A SQLite database and its write-ahead log, as written on disk."""
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))


# -- cut around -----------------------------------------------------------------------


def test_a_key_straddling_the_output_cut_never_reaches_jobs_db(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner keeps the last MAX_OUTPUT bytes of a command's output, and the store
    cuts each event to jobs_event_max_bytes: the key's BEGIN line falls off the first cut
    and its body lands inside what the second keeps."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    head, tail = "build log line\n" * 70, "test passed\n" * (MAX_OUTPUT // 12 - 100)
    output = head + PEM + tail
    cut = len(output.encode()) - MAX_OUTPUT
    assert output.index(PEM) < cut < output.index(PEM) + len(PEM) // 2  # inside the body
    (repo / "out.txt").write_text(output)
    monkeypatch.setenv("HERON_TOOLS_ROOT", str(repo))
    monkeypatch.setenv("HERON_TOOLS_COMMANDS", json.dumps(["git", "cat"]))
    monkeypatch.setenv("HERON_JOBS_TEST_COMMAND", "cat out.txt")
    jobs = open_jobs(Settings())
    try:
        job = jobs.create("run the tests")
        asyncio.run(JobRunner(jobs).run_until_idle())
        done = jobs.get(job.id)
        test_step = next(
            e.payload
            for e in jobs.events(job.id)
            if e.payload.get("step") == "test" and "stdout" in e.payload
        )
        raw = db_bytes(jobs.store.database.path)  # type: ignore[attr-defined]
    finally:
        jobs.close()
    assert done.state == "completed"
    assert "test passed" in test_step["stdout"]  # the output is there, cut ...
    assert MASK in test_step["stdout"]  # ... and what was left of the key is masked
    assert leaked_lines(raw) == []


def test_a_key_cut_at_either_end_is_masked() -> None:
    text = "before\n" + PEM + "after\n"
    begin, end = text.index("-----BEGIN"), text.index("-----END")
    head_cut = text[: end - 10]  # a head kept: BEGIN present, END lost
    tail_cut = text[begin + 20 :]  # a tail kept: BEGIN lost, END present
    for piece in (head_cut, tail_cut):
        assert leaked_lines(redact(piece).encode()) == []
    assert redact(head_cut).startswith("before\n")
    assert redact(tail_cut).endswith("after\n")
    for keep in ("head", "tail"):
        out = redact_then_cut(text.encode(), len(text) // 2, keep=keep)  # type: ignore[arg-type]
        assert leaked_lines(out.encode()) == []


# -- secrets of several words, cookies, flags, URLs, tokens of known shapes -------------

# Bare, with no label before them; built from parts, so no scanner takes this file for a leak.
TOKEN_SHAPES = [
    ("HF_TOKEN is hf_" + "aBcDeFgHiJ" * 3 + "kLmN", "hf_" + "aBcDeFgHiJ" * 3 + "kLmN"),
    ("push with glpat-" + "x1Y2z3_-Ab" * 2, "glpat-" + "x1Y2z3_-Ab" * 2),
    ("runner glrt-" + "t0kEnT0kEn" * 3 + ".01.abc123def", "glrt-" + "t0kEnT0kEn" * 3),
    ("Stripe(sk_live_" + "51Hx" * 6, "sk_live_" + "51Hx" * 6),
    ("restricted rk_live_" + "9zQ" * 8, "rk_live_" + "9zQ" * 8),
    ("npm publish with npm_" + "a1B2c3" * 6, "npm_" + "a1B2c3" * 6),
    ("twine upload -p pypi-AgEIcHlwaS5vcmc" + "Ab-_" * 15, "pypi-AgEIcHlwaS5vcmc" + "Ab-_" * 15),
    ("POST https://hooks.slack.com/services/T0123ABC/B0456DEF/" + "xYz" * 8, "T0123ABC"),
    ("url: https://discord.com/api/webhooks/123456789012/" + "aB_-" * 10, "123456789012"),
    ("https://api.telegram.org/bot123456789:AA" + "hJk" * 11 + "/sendMessage", "123456789:AA"),
]


MASKED_WHOLE = [
    (f'password: "{PASSPHRASE}"', PASSPHRASE),
    ("password = 'a b c d'", "a b c d"),
    ('{"secret": "with some spaces", "user": "bob"}', "with some spaces"),
    ('{\\"password\\": \\"escaped json value\\"}', "escaped json value"),
    ("api key: abc def ghi", "abc def ghi"),
    ("API_KEY: first second", "first second"),
    ("  password: two words\n", "two words"),
    ('password: "unterminated quote runs on', "unterminated quote runs on"),
    ("SESSION_COOKIE=sid=abc123; theme=dark", "sid=abc123; theme=dark"),
    ("export AUTH_COOKIE=zzz-cookie-value", "zzz-cookie-value"),
    ("Cookie: sid=31d4d96e407aad42; lang=en", "sid=31d4d96e407aad42; lang=en"),
    ("Set-Cookie: sid=31d4d96e407aad42; Path=/; Secure", "31d4d96e407aad42"),
    ("X-Api-Key: key-from-header 77", "key-from-header 77"),
    ("curl --password pw-on-the-cli -u bob", "pw-on-the-cli"),
    ("tool --token=tok-on-the-cli --verbose", "tok-on-the-cli"),
    ("tool --api-key key-on-the-cli", "key-on-the-cli"),
    ("git clone https://bob:hunter2-in-url@example.com/repo.git", "hunter2-in-url"),
    ("GET /v1/x?api_key=query-key-1&page=2", "query-key-1"),
    ("GET /v1/x?page=2&token=query-token-2", "query-token-2"),
    ("https://h/cb?access_token=query-token-3#frag", "query-token-3"),
    ("https://blob/x.png?sv=2020&sig=c2lnbmF0dXJl%3D&se=1", "c2lnbmF0dXJl%3D"),
    ("https://s3/x?X-Amz-Signature=abcdef0123456789", "abcdef0123456789"),
    ("https://maps/api?key=AIzaNotQuiteAKey&q=x", "AIzaNotQuiteAKey"),
    ("DB_PASSWORD=correct-horse", "correct-horse"),
    *TOKEN_SHAPES,
]


@pytest.mark.parametrize(
    "text",
    [text for text, _ in MASKED_WHOLE]
    + ["Authorization: Bearer abcdefgh1234", "authorization=Basic dXNlcjpwYXNz", PEM],
)
def test_redacting_twice_changes_nothing(text: str) -> None:
    # Output is redacted where it is cut, then again as an event: a second pass must not
    # eat the label ("Authorization: [REDACTED] [REDACTED]").
    once = redact(text)
    assert redact(once) == once


@pytest.mark.parametrize(("text", "secret"), MASKED_WHOLE)
def test_a_secret_is_masked_whole(text: str, secret: str) -> None:
    clean = redact(text)
    assert MASK in clean
    for part in secret.replace(";", " ").split():  # no word of it survives
        if len(part) > 3 and part not in ("Path=/", "theme=dark"):
            assert part not in clean, (text, clean)


@pytest.mark.parametrize(
    "text",
    [
        "The password policy says passwords must be rotated every 90 days.",
        "passwords must be rotated",
        "Reset your password at https://example.com/account/reset",
        "The secret to good bread is time.",
        "tokenizer = AutoTokenizer.from_pretrained(model_name)",
        "max_tokens: 512",
        "n_tokens = len(tokens)",
        "token = next(tokens)",
        "for token in tokens:",
        "def check(password: str) -> bool:",
        "--token-file /run/secrets/token",
        "export GITHUB_TOKEN=${GITHUB_TOKEN}",
        "api_key_id: 42",
        "see https://example.com/docs/tokens.html?page=2",
        "Author: Alice <alice@example.com>",
        "keyboard: us",
        # token prefixes without a token's body: identifiers, names and prose
        "npm_config_cache=/tmp/npm and npm_package_version",
        "from huggingface_hub import hf_hub_download; hf_hub_download(repo_id=x)",
        "Stripe keys look like sk_live followed by an id; test keys like sk_test.",
        "rk_live keys are restricted",
        "pip install pypi-simple; see the pypi-server docs",
        "glpat tokens are GitLab's personal access tokens",
        "Post to a Slack channel through hooks.slack.com/services with a webhook.",
        "Discord webhooks live under discord.com/api/webhooks/ in the docs.",
        "The Bot API is at https://api.telegram.org/bot<token>/METHOD_NAME",
    ],
)
def test_ordinary_text_and_code_are_left_alone(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "a--" * 100_000,  # a long run of label characters: old patterns were quadratic
        "sk-a" * 75_000,
        "\\npassword:" * 30_000,  # a value after every label, on one long line
        "password: x" + " " * 300_000 + "y",
        "password: x" + "}" * 300_000 + "y",
        "token=" * 50_000,
        "x://a:b" * 40_000,
        "-----BEGIN RSA PRIVATE KEY-----" * 10_000,
    ],
    ids=lambda text: repr(text[:12]),
)
def test_redaction_takes_linear_time_on_hostile_output(text: str) -> None:
    """Command output is attacker-controlled and is redacted whole before any cut: a
    pattern in quadratic time would let a few hundred KB stall a job for minutes."""
    _, elapsed = within(30, lambda: redact(text))
    assert elapsed < 3, f"{len(text):,} characters took {elapsed:.1f} s"


# -- where secrets would be written down -----------------------------------------------


def test_a_password_in_a_chat_is_not_kept_in_the_session_store(tmp_path: Path) -> None:
    """Through the server's ``agent.chat``: the model gets the message as written (it may
    need it), ``agent.db`` keeps it redacted, the answer that echoes it too."""
    from tests.llm_servers import KEY, ONE_MODEL, serve
    from tests.security.served import serve as serve_heron

    message = f'My vault password: "{PASSPHRASE}". Which port does the vault use?'
    with serve() as chat:
        models = tmp_path / "models.yml"
        models.write_text(ONE_MODEL.format(url=chat.url))
        env = {"HERON_MODELS_FILE": str(models), "TEST_OPENAI_KEY": KEY}
        with serve_heron(tmp_path, env) as served:
            answer = served.rpc("agent.chat", {"message": message, "session_id": "s1"})
        sent = json.dumps(chat.posted("/v1/chat/completions"))
    assert "result" in answer, answer
    assert PASSPHRASE in sent  # the turn being answered keeps the original
    stored = db_bytes(tmp_path / "home" / "agent.db")
    assert b"vault password" in stored  # the turn was written ...
    for word in PASSPHRASE.split():
        assert word.encode() not in stored  # ... without the passphrase


def test_sessions_redact_message_answer_and_tool_results(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    sessions = Sessions(sessions_file(path))
    record = {
        "answer": f"echo: password: {PASSPHRASE}",
        "tools": [{"name": "run_command", "result": {"stdout": PEM[:400]}, "error": None}],
    }
    sessions.save("s", "Cookie: sid=31d4d96e407aad42; lang=en", record)
    sessions.close()
    stored = db_bytes(path)
    assert b"31d4d96e407aad42" not in stored and b"battery" not in stored
    assert leaked_lines(stored) == []


def test_tools_list_masks_credentials_of_failing_servers(tmp_path: Path, home: Path) -> None:
    """A server that fails is listed with its command line or URL: their credentials are
    masked in ``heron tools list`` and in ``tools.list`` over JSON-RPC."""
    from tests.run_heron import run_heron
    from tests.security.served import serve

    home.mkdir(parents=True, exist_ok=True)
    servers = {
        "web": {"url": "http://bob:url-pass-123@127.0.0.1:9/mcp?api_key=url-key-456", "timeout": 1},
        "cli": {"command": sys.executable, "args": ["-c", "exit(3)", "--token", "arg-tok-789"]},
    }
    (home / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    planted = ("url-pass-123", "url-key-456", "arg-tok-789")
    done = run_heron("tools", "list", "--json")
    listed = json.loads(done.stdout)
    errors = {s["name"]: s["error"] for s in listed["servers"]}
    assert errors["web"] and errors["cli"]
    assert "127.0.0.1:9" in errors["web"] and MASK in errors["web"]
    for secret in planted:
        assert secret not in done.stdout + done.stderr
    with serve(tmp_path, {"HERON_MCP_CONFIG": str(home / "mcp.json")}) as served:
        answer = served.rpc("tools.list")
    assert answer["result"]["servers"] and not any(s in json.dumps(answer) for s in planted)


def test_log_lines_and_their_tracebacks_are_redacted() -> None:
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    handler = Keep()
    handler.setFormatter(logging.Formatter("%(message)s %(detail)s"))
    handler.addFilter(RedactingFilter())
    log = logging.getLogger("heron.test.security.redact")
    log.addHandler(handler)
    log.propagate = False
    try:
        raise RuntimeError(
            f"connect failed: postgres://app:db-pass-1@db/app password: {PASSPHRASE}"
        )
    except RuntimeError:
        log.exception("calling %s", "with Cookie: sid=cookie-val-2", extra={"detail": "token=xt-3"})
    finally:
        log.removeHandler(handler)
    (line,) = records
    assert "Traceback" in line and "RuntimeError" in line
    for secret in ("db-pass-1", "battery", "cookie-val-2", "xt-3"):
        assert secret not in line


def test_values_under_secret_keys_are_masked_whatever_they_are() -> None:
    value = {"env": {"GITHUB_TOKEN": "anything at all", "SESSION_COOKIE": "x"}, "max_tokens": 512}
    assert redact_value(value) == {
        "env": {"GITHUB_TOKEN": MASK, "SESSION_COOKIE": MASK},
        "max_tokens": 512,
    }


def test_a_webhook_keeps_its_host() -> None:
    url = "https://hooks.slack.com/services/T0123ABC/B0456DEF/" + "xYz" * 8
    assert redact(f"alert sent to {url} ok") == (
        "alert sent to https://hooks.slack.com/services/[REDACTED] ok"
    )
    assert redact("https://api.telegram.org/bot123456789:AA" + "hJk" * 11 + "/getMe") == (
        "https://api.telegram.org/bot[REDACTED]/getMe"
    )


#: Heron's own key shape (``heron keys create``: ``hk_`` and 43 base64url characters),
#: fixed so the test is the same every run; an OpenAI-shaped key travels beside it.
HERON_KEY = "hk_" + base64.urlsafe_b64encode(hashlib.sha256(b"heron").digest()).decode()[:43]
OPENAI_KEY = "sk-proj-" + "Q7wE9rT2yU4iO6pA" * 2


def test_heron_s_own_key_is_masked_bare_and_its_shown_prefix_is_not(home: Path) -> None:
    from heron.keys import SHOWN, open_keys

    with open_keys(Settings()) as keys:  # real keys, so the shape cannot drift from them
        tokens = [keys.create(f"k{i}", ["read"])[1] for i in range(32)]
    for token in [HERON_KEY, *tokens]:
        for text in (token, f"key={token}", f"use {token}.", f"'{token}'", f"({token})"):
            assert token not in redact(text) and MASK in redact(text), text
        assert redact(token[:SHOWN]) == token[:SHOWN]
    # What `heron keys list` shows (hk_ and 8 more) tells keys apart: it is no secret,
    # and neither is an identifier that starts with hk_, however long.
    for text in ("hk_register_every_handler_for_the_whole_app_ok", "hk_" + "a_b-" * 10 + "abc"):
        assert redact(text) == text


def test_heron_s_own_key_is_never_stored_where_text_is(tmp_path: Path) -> None:
    """The issue's attack: an ``hk_`` key pasted in a chat, a job's prompt and a card's
    message, through the real server. Every byte under HERON_HOME afterwards (the session
    store, the jobs, the interventions, the usage logs) is read: neither key is there."""
    from tests.llm_servers import KEY, ONE_MODEL, serve
    from tests.security.served import make_repo
    from tests.security.served import serve as serve_heron

    pasted = f"my keys are {HERON_KEY} and {OPENAI_KEY}; which one opens the vault?"
    repo = make_repo(tmp_path / "repo")
    with serve() as chat:
        models = tmp_path / "models.yml"
        models.write_text(ONE_MODEL.format(url=chat.url))
        env = {
            "HERON_MODELS_FILE": str(models),
            "TEST_OPENAI_KEY": KEY,
            "HERON_TOOLS_ROOT": str(repo),
            "HERON_JOBS_CONCURRENCY": "1",
        }
        with serve_heron(tmp_path, env) as served:
            answers = [
                served.rpc("agent.chat", {"message": pasted, "session_id": "s1"}),
                served.rpc("jobs.create", {"prompt": pasted, "success_criteria": pasted}),
                served.rpc(
                    "interventions.raise",
                    {"kind": "notice", "key": "k1", "room": "r1", "facts": {"message": pasted}},
                ),
            ]
    for answer in answers:
        assert "result" in answer, answer
    files = [p for p in (tmp_path / "home").rglob("*") if p.is_file()]
    stored = b"".join(p.read_bytes() for p in files)
    assert b"which one opens the vault" in stored  # the texts were written ...
    assert OPENAI_KEY.encode() not in stored  # ... the OpenAI key masked, as before ...
    leaked = [str(p.relative_to(tmp_path)) for p in files if HERON_KEY.encode() in p.read_bytes()]
    assert leaked == []  # ... and Heron's own, wherever it was stored
