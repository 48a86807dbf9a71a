"""``heron jobs``: create, list, show, watch, confirm, deny and abort jobs, and run workers.

The job store and the runner are imported when a command runs (the rule in
``heron.cli``'s docstring)."""

from __future__ import annotations

import getpass
import signal
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from heron.cli.output import console, print_json
from heron.cli.settings import command_settings

if TYPE_CHECKING:
    from heron.jobs import Job, JobEvent

#: ``heron.jobs.RISK_LEVELS`` and ``STATES``, written out so that --help need not import
#: the job store (tests/cli/test_startup.py checks they agree).
RISK_LEVELS = ("read_only", "write", "deploy_allowed")
STATES = ("queued", "running", "waiting_for_confirmation", "completed", "aborted", "failed")

jobs_app = typer.Typer(
    help="Delegated work: background jobs that check the workspace, step by step.",
    no_args_is_help=True,
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]
JobId = Annotated[str, typer.Argument(help="The job's id (see: heron jobs list).")]
By = Annotated[str | None, typer.Option("--by", help="Who decides; default: your user name.")]


def _show(job: Job) -> None:
    data = job.to_dict()
    console.print(f"[bold]{job.id}[/] {job.state}  ({job.risk_level})")
    keys = ("prompt", "success_criteria", "created_by", "session_id", "room")
    for key in (*keys, "created_at", "started_at", "finished_at"):
        if data[key]:
            console.print(f"  {key}: {escape(str(data[key]))}")
    if job.confirmed_by:
        console.print(f"  confirmed by {escape(job.confirmed_by)} at {data['confirmed_at']}")
    if job.result:
        console.print(f"  result: {escape(job.result.get('summary', ''))}")
        if job.result.get("summary_by"):
            console.print(f"  summary by: {escape(str(job.result['summary_by']))}")
        if job.result.get("summary_note"):
            console.print(f"  [dim]note: {escape(str(job.result['summary_note']))}[/]")
        verdict = {True: "ok", False: "NOT met", None: "unverified"}
        for criterion in job.result.get("criteria", []):
            why = f" ({criterion['why']})" if criterion.get("why") else ""
            line = f"{verdict[criterion['ok']]}: {criterion['criterion']}{why}"
            console.print(f"  criterion {escape(line)}")
        if isinstance(job.result.get("workspace"), list):
            changed = ", ".join(job.result["workspace"])
            console.print(f"  [red]the workspace changed:[/] {escape(changed)}")


def _event_line(event: JobEvent) -> str:
    payload = event.payload
    detail = payload.get("step") or payload.get("to") or ""
    extra = {k: payload[k] for k in ("exit_code", "error", "by", "reason", "pid") if k in payload}
    tail = " ".join(f"{k}={v}" for k, v in extra.items())
    return escape(f"{event.seq:>4} {event.to_dict()['time']} {event.kind} {detail} {tail}".rstrip())


def _act(action: str, job_id: str, by: str | None, as_json: bool) -> None:
    from heron.jobs import open_jobs

    jobs = open_jobs(command_settings())
    with jobs:
        job = getattr(jobs, action)(job_id, by or getpass.getuser())
    if as_json:
        print_json(job.to_dict())
    else:
        _show(job)


@jobs_app.command("create")
def create(
    prompt: Annotated[str, typer.Argument(help="What to check.")],
    success_criteria: Annotated[str, typer.Option(help="What a good outcome looks like.")] = "",
    risk_level: Annotated[
        str, typer.Option(help=f"One of: {', '.join(RISK_LEVELS)}.")
    ] = "read_only",
    confirm: Annotated[
        bool | None,
        typer.Option("--confirm/--no-confirm", help="Wait for confirmation before acting."),
    ] = None,
    room: Annotated[
        str, typer.Option(help="The room that shares it; default: HERON_INTERVENTIONS_ROOM.")
    ] = "",
    session: Annotated[str, typer.Option(help="The conversation it belongs to.")] = "",
    as_json: JsonFlag = False,
) -> None:
    """Queue a job; a worker (heron serve, or heron jobs run) runs it.

    Example: heron jobs create "is main broken?" --success-criteria "tests pass"
    """
    from heron.jobs import open_jobs

    jobs = open_jobs(command_settings())
    with jobs:
        job = jobs.create(
            prompt,
            success_criteria,
            risk_level,
            confirm,
            by=getpass.getuser(),
            session_id=session,
            room=room,
        )
    if as_json:
        print_json(job.to_dict())
    else:
        _show(job)


@jobs_app.command("list")
def list_(
    state: Annotated[
        list[str] | None, typer.Option(help=f"Only this state (repeatable): {', '.join(STATES)}.")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 50,
    session: Annotated[
        str | None, typer.Option(help="Only the jobs delegated in this conversation.")
    ] = None,
    room: Annotated[str | None, typer.Option(help="Only this room's jobs.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """List jobs, newest first.

    Example: heron jobs list --state running --room team --json
    """
    from heron.jobs import open_jobs

    jobs = open_jobs(command_settings())
    with jobs:
        found = jobs.list(state or [], limit, session_id=session, room=room)  # type: ignore[arg-type]
    if as_json:
        print_json([job.to_dict() for job in found])
        return
    for job in found:
        console.print(f"{job.id}  {job.state:<24} {escape(job.prompt[:60])}")
    if not found:
        console.print('No jobs yet; queue one with: heron jobs create "is main broken?"')


@jobs_app.command("show")
def show(job_id: JobId, as_json: JsonFlag = False) -> None:
    """Show a job and its events.

    Example: heron jobs show 9f3c2a1b4d5e6f70 --json
    """
    from heron.jobs import open_jobs

    jobs = open_jobs(command_settings())
    with jobs:
        job, events = jobs.get(job_id), jobs.events(job_id)
    if as_json:
        print_json(job.to_dict() | {"events": [e.to_dict() for e in events]})
        return
    _show(job)
    for event in events:
        console.print(_event_line(event))


@jobs_app.command("watch")
def watch(
    job_id: JobId,
    after: Annotated[int, typer.Option(help="Start after this event seq.")] = 0,
    as_json: JsonFlag = False,
) -> None:
    """Print a job's events as they happen, until it has finished.

    Example: heron jobs watch 9f3c2a1b4d5e6f70 --json
    """
    import asyncio  # here: a twentieth of a second no other command pays

    from heron.jobs import open_jobs

    async def follow() -> None:
        async for event in jobs.follow(job_id, after):
            if as_json:
                print_json(event.to_dict())
            else:
                console.print(_event_line(event))

    jobs = open_jobs(command_settings())
    try:
        jobs.get(job_id)
        asyncio.run(follow())
    except KeyboardInterrupt:
        pass
    finally:
        jobs.close()


@jobs_app.command("confirm")
def confirm(job_id: JobId, by: By = None, as_json: JsonFlag = False) -> None:
    """Let a job that waits for confirmation act.

    Example: heron jobs confirm 9f3c2a1b4d5e6f70 --by alice
    """
    _act("confirm", job_id, by, as_json)


@jobs_app.command("deny")
def deny(job_id: JobId, by: By = None, as_json: JsonFlag = False) -> None:
    """End a job that waits for confirmation, without acting.

    Example: heron jobs deny 9f3c2a1b4d5e6f70 --by alice
    """
    _act("deny", job_id, by, as_json)


@jobs_app.command("abort")
def abort(job_id: JobId, by: By = None, as_json: JsonFlag = False) -> None:
    """Stop a job now; the worker running it kills its command within a second.

    Example: heron jobs abort 9f3c2a1b4d5e6f70
    """
    _act("abort", job_id, by, as_json)


@jobs_app.command("run")
def run(
    until_idle: Annotated[
        bool, typer.Option("--until-idle", help="Stop once no job is queued.")
    ] = False,
    concurrency: Annotated[
        int | None, typer.Option(help="Jobs at once; default: jobs_concurrency.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Run a worker outside the server: recover orphaned jobs, then run queued ones.

    It runs until stopped (Ctrl-C, SIGTERM) or, with --until-idle, until the queue is empty.

    Example: heron jobs run --until-idle
    """
    import asyncio  # here: a twentieth of a second no other command pays

    from heron.jobs import open_jobs
    from heron.tenancy import namespaces_seen
    from heron.wiring.jobs import job_runner

    jobs = open_jobs(command_settings())
    # Every context's jobs, each run in its own context (its workspace, its libraries).
    runner = job_runner(jobs, concurrency=concurrency, runner_for=job_runner, seen=namespaces_seen)

    async def main() -> dict[str, Any]:
        recovered = await asyncio.to_thread(runner.recover)
        if until_idle:
            ran = await runner.run_until_idle()
        else:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            await runner.serve(stop, recover=False)
            ran = None
        return {"worker": runner.worker, "recovered": [j.id for j in recovered], "ran": ran}

    with jobs:
        report = asyncio.run(main())
    if as_json:
        print_json(report)
    else:
        console.print(f"worker {report['worker']}: recovered {len(report['recovered'])} jobs")
