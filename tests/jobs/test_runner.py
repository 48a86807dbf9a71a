"""``JobRunner`` on real processes in a real git repository: the checks a prompt picks,
abort that kills the command's process group, timeouts, the allowlist, recovery."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from heron.errors import ConfigError
from heron.jobs import JobInputError, JobRunner, Jobs, open_jobs, plan
from heron.jobs.errors import IllegalTransition
from heron.settings import Settings
from heron.wiring import job_runner
from tests.jobs.conftest import alive, git, wait_for
from tests.llm_servers import KEY, ChatServer
from tests.llm_servers import serve as serve_chat

#: A build that starts a grandchild and waits: abort must kill both.
SLOW_BUILD = "sh -c 'sleep 60 & echo $! > grandchild.pid; wait'"


def run(jobs: Jobs) -> int:
    """Run the queue with the runner the CLI and the server build: its docs step searches
    the libraries and a capable model writes its summary (``heron.wiring.job_runner``)."""
    return asyncio.run(job_runner(jobs, concurrency=2).run_until_idle())


def kinds(jobs: Jobs, job_id: str) -> list[str]:
    return [e.kind for e in jobs.events(job_id)]


def names(prompt: str, criteria: str = "", **commands: str) -> list[str]:
    return [s.name for s in plan(prompt, criteria, **commands).steps]


def test_the_prompt_picks_the_checks() -> None:
    assert names("what changed in the repo this week?", test_command="pytest -q") == [
        "git_status",
        "git_diff",
    ]
    assert names("Is the build broken?", test_command="pytest -q")[-1] == "test"
    assert names("does the index have our memory notes?")[-1] == "store_counts"
    assert names("how is our telemetry?")[-1] == "store_counts"
    assert "search_docs" in names("what do the docs say about pods")
    assert names("is GitHub reachable?")[-1] == "remote"
    assert plan("is GitHub reachable?", remote="upstream").steps[-1].argv == (
        "git",
        "ls-remote",
        "--heads",
        "upstream",
    )
    typed = plan("does it typecheck?", typecheck_command="mypy .", test_command="pytest")
    assert [s.name for s in typed.steps][-1] == "typecheck" and not typed.read_only
    assert plan("run the tests", test_command="pytest -q").steps[-1].argv == ("pytest", "-q")
    assert not plan("run the tests", test_command="pytest -q").read_only
    assert plan("what changed?", test_command="pytest -q").read_only


def test_the_success_criteria_pick_checks_too() -> None:
    # The prompt asks for nothing but the criteria name the tests and the remote.
    found = plan("look at main", "tests pass and the remote is reachable", test_command="pytest")
    assert [s.name for s in found.steps] == ["git_status", "git_diff", "remote", "test"]
    assert [(c.text, c.step) for c in found.criteria] == [
        ("tests pass", "test"),
        ("the remote is reachable", "remote"),
    ]
    # Without the command, or naming nothing a step checks: unverified, and why.
    bare = plan("look at main", "tests pass; the typecheck passes; users are happy")
    assert [(c.step, c.why) for c in bare.criteria] == [
        (None, "no test command is configured (HERON_JOBS_TEST_COMMAND)"),
        (None, "no typecheck command is configured (HERON_JOBS_TYPECHECK_COMMAND)"),
        (None, "no step of a job checks this"),
    ]


def test_a_job_checks_the_workspace_and_records_each_step(jobs: Jobs) -> None:
    job = jobs.create("check whether main builds", "the build passes")
    assert run(jobs) == 1
    done = jobs.get(job.id)
    assert done.state == "completed"
    assert done.result is not None and done.result["ok"] is True
    assert [s["step"] for s in done.result["steps"]] == ["git_status", "git_diff", "test"]
    assert done.result["success_criteria"] == "the build passes"
    events = {(e.kind, e.payload.get("step")): e.payload for e in jobs.events(job.id)}
    assert "## main" in events[("step_finished", "git_status")]["stdout"]
    assert "M app.py" in events[("step_finished", "git_status")]["stdout"]
    assert "app.py | 2 +-" in events[("step_finished", "git_diff")]["stdout"]
    assert events[("step_finished", "test")]["stdout"] == "built\n"
    assert kinds(jobs, job.id)[0] == "created" and kinds(jobs, job.id)[-1] == "completed"


def test_a_failing_build_is_a_finding(jobs: Jobs, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERON_JOBS_TEST_COMMAND", "sh -c 'echo FAILED test_x >&2; exit 1'")
    failing = open_jobs(Settings())
    job = failing.create("is main broken?")
    run(failing)
    done = failing.get(job.id)
    assert done.state == "completed" and done.result is not None
    assert done.result["ok"] is False
    assert done.result["summary"] == (
        "On branch main: 1 file changed (app.py), 1 insertion, 1 deletion. "
        "Tests (sh -c 'echo FAILED test_x >&2; exit 1'): failed, exit code 1."
    )
    assert done.result["summary_by"] == "steps" and "summary_note" not in done.result
    failing.close()


#: A tiny project whose real pytest run has two passing tests and one failing.
PYTEST_PROJECT = {
    "test_ok.py": "def test_one():\n    assert 1\n\n\ndef test_two():\n    assert 2\n",
    "test_bad.py": "def test_three():\n    assert 1 == 2\n",
}


@pytest.fixture
def pytest_workspace(configured: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The workspace with the tiny project committed, ``app.py`` and ``test_bad.py``
    edited, and the real ``pytest`` (this interpreter's) as the job's test command."""
    for name, text in PYTEST_PROJECT.items():
        (configured / name).write_text(text.replace("1 == 2", "1 == 1"))
    git(configured, "add", ".")
    git(configured, "commit", "-q", "-m", "tests")
    (configured / "test_bad.py").write_text(PYTEST_PROJECT["test_bad.py"])
    (configured / "app.py").write_text("print('hello')\nprint('again')\n")
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("HERON_TOOLS_COMMANDS", json.dumps(["git", "pytest"]))
    monkeypatch.setenv("HERON_JOBS_TEST_COMMAND", "pytest -q -p no:cacheprovider")
    return configured


def test_a_job_reports_what_it_found(pytest_workspace: Path) -> None:
    jobs = open_jobs(Settings())
    job = jobs.create("summarise what changed in the repo and whether the tests pass")
    run(jobs)
    done = jobs.get(job.id)
    assert done.state == "completed" and done.result is not None
    summary = done.result["summary"]
    assert summary.startswith(
        "On branch main: 2 files changed (app.py, test_bad.py), 2 insertions, 1 deletion. "
        "Tests: 1 failed, 2 passed in "
    ), summary
    assert done.result["facts"] == summary and done.result["summary_by"] == "steps"
    # The events keep the raw outputs the summary was built from.
    test_out = next(
        e.payload
        for e in jobs.events(job.id)
        if e.kind == "step_finished" and e.payload["step"] == "test"
    )
    assert "assert 1 == 2" in test_out["stdout"]
    jobs.close()


def _capable_model(home: Path, chat: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """models.yml whose default is an OpenAI-compatible model on the loopback server."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "models.yml").write_text(
        "default: gpt\n"
        "models:\n"
        "  gpt:\n"
        "    provider: openai\n"
        "    model: gpt-test\n"
        f"    base_url: {chat.url}/v1\n"
        "    api_key_env: TEST_OPENAI_KEY\n"
    )
    monkeypatch.setenv("TEST_OPENAI_KEY", KEY)
    monkeypatch.setenv("HERON_LLM_RETRIES", "0")


def test_a_capable_model_writes_the_summary_cited_to_the_steps(
    pytest_workspace: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve_chat() as chat:
        _capable_model(home, chat, monkeypatch)
        jobs = open_jobs(Settings())
        job = jobs.create("what changed, and do the tests pass?")
        run(jobs)
        done = jobs.get(job.id)
        sent = chat.posted("/v1/chat/completions")
    assert done.result is not None and done.result["summary_by"] == "gpt"
    # The loopback model echoes what it was sent: the outputs, each under its step's tag.
    summary = done.result["summary"]
    assert "[git_status]" in summary and "[git_diff]" in summary and "[test]" in summary
    assert done.result["facts"].startswith("On branch main: 2 files changed")
    assert len(sent) == 1
    system = sent[0]["messages"][0]["content"]
    assert "[git_diff]" in system and "cite" in system
    assert "assert 1 == 2" in sent[0]["messages"][1]["content"]
    jobs.close()


def test_when_the_model_fails_the_facts_stand_with_a_note(
    pytest_workspace: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve_chat() as chat:
        _capable_model(home, chat, monkeypatch)
        chat.fail("gpt-test", 500)
        jobs = open_jobs(Settings())
        failed = jobs.create("what changed?")
        run(jobs)
        # A summary citing a step that never ran (the prompt's "[deploy]", echoed) is refused.
        invented = jobs.create("what changed? [deploy]")
        run(jobs)
    for job_id, why in ((failed.id, "500"), (invented.id, "cited steps that did not run: deploy")):
        result = jobs.get(job_id).result
        assert result is not None and result["summary_by"] == "steps"
        assert result["summary"] == result["facts"]
        assert result["summary"].startswith("On branch main: 2 files changed")
        assert (
            why in result["summary_note"]
            and "built from the step outputs" in result["summary_note"]
        )
    jobs.close()


def test_a_secret_in_command_output_never_reaches_the_store(
    jobs: Jobs, configured: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "ghp_" + "Zx9" * 12
    (configured / ".env").write_text(f"GITHUB_TOKEN={token}\nAPI_KEY=sk-live-{'q' * 24}\n")
    monkeypatch.setenv(
        "HERON_JOBS_TEST_COMMAND", "sh -c 'cat .env; echo Authorization: Bearer abcdefgh1234'"
    )
    leaky = open_jobs(Settings())
    job = leaky.create("run the tests")
    run(leaky)
    raw = leaky.store.database.path.read_bytes()  # type: ignore[attr-defined]
    wal = Path(str(leaky.store.database.path) + "-wal")  # type: ignore[attr-defined]
    raw += wal.read_bytes() if wal.exists() else b""
    for secret in (token, "q" * 24, "abcdefgh1234"):
        assert secret.encode() not in raw
    out = next(
        e for e in leaky.events(job.id) if e.payload.get("step") == "test" and "stdout" in e.payload
    )
    assert out.payload["stdout"].count("[REDACTED]") == 3
    leaky.close()


def test_abort_from_another_process_kills_the_command_group_within_a_second(
    jobs: Jobs, configured: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERON_JOBS_TEST_COMMAND", SLOW_BUILD)
    slow = open_jobs(Settings())
    job = slow.create("is the build broken?")

    async def scenario() -> tuple[int, int, float]:
        runner = asyncio.create_task(JobRunner(slow).run_until_idle())

        def started() -> dict | None:
            return next(
                (e.payload for e in slow.events(job.id) if e.payload.get("step") == "test"), None
            )

        payload = await asyncio.to_thread(wait_for, started, 30, "the test step")
        pidfile = configured / "grandchild.pid"
        await asyncio.to_thread(wait_for, lambda: pidfile.exists() and pidfile.read_text().strip())
        grandchild = int(pidfile.read_text())
        assert alive(payload["pid"]) and alive(grandchild)
        cli = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "heron", "jobs", "abort", job.id, "--by", "carol", "--json"
        )
        assert await cli.wait() == 0
        aborted_at = time.monotonic()
        while alive(payload["pid"]) or alive(grandchild):
            await asyncio.sleep(0.01)
        gone = time.monotonic() - aborted_at
        await runner
        return payload["pid"], grandchild, gone

    pid, grandchild, gone = asyncio.run(scenario())
    assert gone < 1.0
    assert not alive(pid) and not alive(grandchild)
    done = slow.get(job.id)
    assert done.state == "aborted"
    events = slow.events(job.id)
    aborted = next(e for e in events if e.kind == "aborted")
    assert aborted.payload["by"] == "carol"
    killed = next(e for e in events if e.kind == "step_killed")
    assert killed.payload == {"step": "test", "pid": pid, "because": "aborted"}
    assert events[-1].kind == "step_killed"  # nothing ran after the abort
    slow.close()


def test_a_command_past_its_timeout_is_killed(
    monkeypatch: pytest.MonkeyPatch, configured: Path
) -> None:
    monkeypatch.setenv("HERON_JOBS_TEST_COMMAND", "sleep 30")
    monkeypatch.setenv("HERON_JOBS_COMMAND_TIMEOUT", "0.5")
    jobs = open_jobs(Settings())
    job = jobs.create("run the tests")
    started = time.monotonic()
    run(jobs)
    assert time.monotonic() - started < 10
    failed = next(e for e in jobs.events(job.id) if e.kind == "step_failed")
    assert "did not finish within 0.5 s" in failed.payload["error"]
    assert "HERON_JOBS_COMMAND_TIMEOUT" in failed.payload["error"]
    jobs.close()


def test_commands_off_the_allowlist_do_not_run(
    monkeypatch: pytest.MonkeyPatch, configured: Path
) -> None:
    monkeypatch.setenv("HERON_TOOLS_COMMANDS", '["git"]')
    monkeypatch.setenv("HERON_JOBS_TEST_COMMAND", "sh -c 'touch ran'")
    jobs = open_jobs(Settings())
    job = jobs.create("run the tests")
    run(jobs)
    assert not (configured / "ran").exists()
    failed = next(e for e in jobs.events(job.id) if e.kind == "step_failed")
    assert "'sh' is not allowed. Allowed: git" in failed.payload["error"]
    assert jobs.get(job.id).result["ok"] is False  # type: ignore[index]
    jobs.close()


def test_an_allowed_program_that_is_missing_is_a_failed_step(
    monkeypatch: pytest.MonkeyPatch, configured: Path
) -> None:
    monkeypatch.setenv("HERON_TOOLS_COMMANDS", '["git", "no-such-heron-tool"]')
    monkeypatch.setenv("HERON_JOBS_TEST_COMMAND", "no-such-heron-tool --check")
    jobs = open_jobs(Settings())
    job = jobs.create("run the tests")
    run(jobs)
    failed = next(e for e in jobs.events(job.id) if e.kind == "step_failed")
    assert "Cannot run 'no-such-heron-tool'" in failed.payload["error"]
    assert jobs.get(job.id).state == "completed"
    jobs.close()


def test_bad_input_gets_a_clear_error(
    jobs: Jobs, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(JobInputError, match="Choose from: read_only, write, deploy_allowed"):
        jobs.create("x", risk_level="root")
    with pytest.raises(JobInputError, match="needs a prompt"):
        jobs.create("  ")
    assert jobs.list() == []
    monkeypatch.delenv("HERON_TOOLS_ROOT")
    with pytest.raises(ConfigError, match="set HERON_TOOLS_ROOT"):
        open_jobs(Settings()).create("what changed?")


def test_confirmation_gate_parks_then_resumes_or_ends(jobs: Jobs) -> None:
    gated = jobs.create("deploy the fix", risk_level="deploy_allowed")
    denied = jobs.create("deploy again", risk_level="deploy_allowed")
    assert gated.requires_confirmation
    run(jobs)
    assert jobs.get(gated.id).state == "waiting_for_confirmation"
    assert "step_started" not in kinds(jobs, gated.id)  # it parked before acting
    with pytest.raises(IllegalTransition, match="is queued, not waiting_for_confirmation"):
        jobs.deny(jobs.create("what changed?").id, "dave")
    jobs.confirm(gated.id, "alice")
    jobs.deny(denied.id, "bob")
    with pytest.raises(IllegalTransition, match="is aborted, not waiting_for_confirmation"):
        jobs.confirm(denied.id, "alice")
    run(jobs)
    done = jobs.get(gated.id)
    assert (done.state, done.confirmed_by) == ("completed", "alice")
    assert kinds(jobs, gated.id)[:5] == ["created", "claimed", "waiting", "confirmed", "claimed"]
    assert jobs.get(denied.id).state == "aborted"
    assert jobs.events(denied.id)[-1].payload["by"] == "bob"


def test_docs_and_index_steps_use_the_real_libraries(
    jobs: Jobs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from heron.libraries import add_library, index_library
    from heron.settings import Settings
    from heron.store import open_store

    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pods.md").write_text("# Pods\n\nA Pod runs one or more containers together.\n")
    settings = Settings()
    add_library("k8s", str(docs), settings)
    store = open_store(settings)
    index_library("k8s", store, settings=settings)
    store.close()
    job = jobs.create("what do the docs say about pods, and what is in the index?")
    run(open_jobs(Settings()))
    events = {
        e.payload.get("step"): e.payload for e in jobs.events(job.id) if e.kind == "step_finished"
    }
    assert events["search_docs"]["results"][0]["citation"].startswith("(k8s, pods")
    assert any(ns["records"] > 0 for ns in events["store_counts"]["namespaces"])


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_recovery_requeues_read_only_jobs_and_fails_the_others(jobs: Jobs) -> None:
    read_only = jobs.create("what changed this week?")
    builds = jobs.create("is the build broken?")
    dead = f"{socket.gethostname()}:{_dead_pid()}:gone"
    jobs.store.claim(dead)
    jobs.store.claim(dead)
    live = jobs.create("what changed today?")
    jobs.store.claim(f"{socket.gethostname()}:{__import__('os').getpid()}:alive")
    recovered = JobRunner(jobs).recover()
    assert {j.id for j in recovered} == {read_only.id, builds.id}
    assert jobs.get(read_only.id).state == "queued"
    assert "is gone" in jobs.events(read_only.id)[-1].payload["reason"]
    failed = jobs.get(builds.id)
    assert failed.state == "failed"
    assert "may write" in jobs.events(builds.id)[-1].payload["reason"]
    assert jobs.get(live.id).state == "running"  # its worker (this process) is alive


def test_a_silent_worker_of_another_host_is_taken_over(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker of another replica is judged by its heartbeat alone (issue 47): kept while
    it beats within the visibility timeout, taken over once it is silent longer."""
    monkeypatch.setenv("HERON_JOBS_VISIBILITY_TIMEOUT", "6")
    runner = JobRunner(open_jobs(Settings()))
    assert runner.worker.startswith(f"{socket.gethostname()}:{os.getpid()}:")
    job = jobs.create("what changed this week?")
    jobs.store.claim("replica-far:1:x")
    assert runner.recover() == []  # it beat just now
    beat = time.time() - 7
    with jobs.store.database.connection(write=True) as db:  # type: ignore[attr-defined]
        db.execute("UPDATE jobs SET heartbeat_at = ? WHERE id = ?", (beat, job.id))
    assert [j.id for j in runner.recover()] == [job.id]
    last = jobs.events(job.id)[-1]
    assert last.kind == "requeued" and last.payload["by"] == runner.worker
    assert "replica-far:1:x sent no heartbeat for over 6 s" in last.payload["reason"]


def test_recovery_gives_up_after_max_attempts(jobs: Jobs) -> None:
    from heron.jobs.runner import MAX_ATTEMPTS

    job = jobs.create("what changed?")
    runner = JobRunner(jobs)
    for _ in range(MAX_ATTEMPTS):
        jobs.store.claim(f"{socket.gethostname()}:{_dead_pid()}:gone")
        runner.recover()
    assert jobs.get(job.id).state == "failed"
    assert f"{MAX_ATTEMPTS} attempts" in json.dumps(jobs.events(job.id)[-1].payload)


def test_a_workspace_gone_before_the_job_runs_fails_it(jobs: Jobs, configured: Path) -> None:
    job = jobs.create("what changed?")
    configured.rename(configured.with_name("moved"))
    run(jobs)
    failed = jobs.get(job.id)
    assert failed.state == "failed"
    assert "is not a directory" in jobs.events(job.id)[-1].payload["error"]


def test_a_runner_without_a_workspace_leaves_the_job_to_one_that_has_it(jobs: Jobs) -> None:
    # The CLI (HERON_TOOLS_ROOT set) makes the job; a server started without a workspace
    # must not claim it and fail it: it waits for a worker that can run it.
    job = jobs.create("is main broken?")
    bare = Jobs(jobs.store, Settings(tools={"root": None}))
    assert asyncio.run(JobRunner(bare).run_until_idle()) == 0
    assert jobs.get(job.id).state == "queued" and kinds(jobs, job.id) == ["created"]
    run(jobs)
    assert jobs.get(job.id).state == "completed"


def test_confirm_cannot_requeue_a_running_job(jobs: Jobs) -> None:
    job = jobs.create("what changed?")
    jobs.store.claim("w")
    with pytest.raises(IllegalTransition, match="is running, not waiting_for_confirmation"):
        jobs.confirm(job.id, "mallory")
    assert jobs.get(job.id).state == "running"
