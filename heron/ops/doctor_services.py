"""Doctor checks of what Heron talks to or runs: MCP servers, models, skills, jobs.

Each is ``check(ctx) -> Check``, as in ``heron.ops.doctor_checks``.
"""

from __future__ import annotations

import time
from collections import Counter

from heron.db.replicas import NOT_SHARED, open_registry
from heron.errors import HeronError
from heron.ops.doctor_checks import Check, Context, failed, passed, warned

#: A queued job older than this, with nothing running it, means no runner is up.
QUEUED_TOO_LONG = 600.0


def check_mcp(ctx: Context) -> Check:
    from heron.tools import MCPClient, ToolRegistry, load_config
    from heron.tools.toolbox import MCP_CONFIG

    settings = ctx.settings
    path = settings.tools.mcp_config or settings.home / MCP_CONFIG
    if settings.tools.mcp_config is None and not path.exists():
        return Check("mcp", "skip", f"no MCP servers ({path} does not exist)")
    servers = load_config(path, timeout=settings.tools.mcp_timeout)  # ConfigError names the fix
    if ctx.offline:
        names = [s.name for s in servers]
        ctx.mcp_unlisted = bool(names)
        return Check(
            "mcp", "skip", f"{len(names)} servers, not reached (--offline)", data={"servers": names}
        )
    registry = ToolRegistry()
    rows, down = {}, []
    for server in servers:
        started = time.perf_counter()
        (status,) = MCPClient([server]).discover(registry)
        seconds = round(time.perf_counter() - started, 4)
        rows[server.name] = {
            "transport": status.transport,
            "tools": status.tools,
            "seconds": seconds,
            "error": status.error,
        }
        if status.error:
            down.append(f"{server.name}: {status.error}")
    ctx.mcp_registry = registry
    if down:
        return failed(
            "mcp",
            "; ".join(down),
            f"fix or remove the server in {path}, then run: heron tools list",
            servers=rows,
        )
    shown = ", ".join(f"{n} ({r['tools']} tools, {r['seconds']:.2f} s)" for n, r in rows.items())
    return passed("mcp", shown or f"{path} lists no servers", servers=rows)


def check_models(ctx: Context) -> Check:
    from heron.llm import Broker, load_table

    table = load_table(ctx.settings)  # a bad models.yml is a ConfigError naming the line
    aliases = list(table.models)
    if ctx.offline:
        return Check(
            "models",
            "skip",
            f"{len(aliases)} models, not called (--offline)",
            data={"models": aliases},
        )
    broker = Broker(table, ctx.settings)
    with broker:
        answers = {alias: broker.check(alias) for alias in aliases}
    rows = {
        a: {"ok": r["ok"], "seconds": r["seconds"], "error": r.get("error")}
        for a, r in answers.items()
    }
    broken = [f"{a}: {r['error']}" for a, r in answers.items() if not r["ok"]]
    if broken:
        return failed(
            "models",
            "; ".join(broken),
            f"fix the model in {table.source or 'models.yml'} (key, URL), then run: "
            "heron models check",
            models=rows,
        )
    return passed("models", f"{len(rows)} models answer", models=rows)


def check_skills(ctx: Context) -> Check:
    from heron.skills import open_skills

    skills = open_skills(ctx.settings, store=ctx.store)
    with skills:
        status = skills.status()
    scan, index = status.scan, status.index
    data = {
        "dirs": [{"path": str(d.path), "exists": d.exists, "files": d.files} for d in scan.dirs],
        "skills": len(scan.skills),
        "failures": [{"path": str(f.path), "reason": f.reason} for f in scan.failures],
        "diagnostics": {s.name: [str(d) for d in s.diagnostics] for s in scan.recovered},
        "index": index.to_dict(),
    }
    if scan.failures:
        first = scan.failures[0]
        return warned(
            "skills",
            f"{len(scan.failures)} SKILL.md files do not parse (first: {first.path}: "
            f"{first.reason})",
            "fix them; list them with: heron skills status",
            **data,
        )
    pending = len(index.outdated) + len(index.missing) + len(index.orphans)
    if pending:
        return warned(
            "skills",
            f"{len(scan.skills)} skills, {pending} not indexed as they are on disk",
            "run: heron skills index",
            **data,
        )
    dirs = sum(1 for d in scan.dirs if d.exists)
    return passed("skills", f"{len(scan.skills)} skills in {dirs} directories, indexed", **data)


def check_jobs(ctx: Context) -> Check:
    from heron.jobs import jobs_db_path, open_jobs

    if not ctx.settings.postgres_url and not jobs_db_path(ctx.settings).exists():
        return Check("jobs", "skip", "no job store yet (made when the first job is queued)")
    jobs = open_jobs(ctx.settings)
    with jobs:
        listed = jobs.list(limit=1000)
    states = Counter(job.state for job in listed)
    now = time.time()
    stuck = [
        job.id
        for job in listed
        if job.state == "running"
        and now - (job.heartbeat_at or 0) > ctx.settings.jobs.visibility_timeout
    ]
    waiting = [
        job.id for job in listed if job.state == "queued" and now - job.created_at > QUEUED_TOO_LONG
    ]
    workspace = ctx.settings.tools.root
    data = {"states": dict(states), "workspace": str(workspace) if workspace else None}
    if stuck:
        return warned(
            "jobs",
            f"{len(stuck)} running jobs have no live worker ({', '.join(stuck[:3])})",
            "start heron serve (any replica's runner takes them over within "
            f"{ctx.settings.jobs.visibility_timeout * 1.25:g} s)",
            **data,
        )
    if waiting:
        return warned(
            "jobs",
            f"{len(waiting)} jobs queued for over {QUEUED_TOO_LONG / 60:.0f} min",
            "start the runner: heron serve"
            + ("" if workspace else " with HERON_TOOLS_ROOT set to the workspace"),
            **data,
        )
    shown = ", ".join(f"{n} {s}" for s, n in sorted(states.items())) or "no jobs"
    runner = f"workspace {workspace}" if workspace else "no workspace (HERON_TOOLS_ROOT unset)"
    return passed("jobs", f"job store opens: {shown}; {runner}", **data)


def check_replicas(ctx: Context) -> Check:
    """On PostgreSQL: the database, the replicas live on it (their ``heron serve``
    rows, ``heron.db.replicas``) with their versions, and what each keeps to itself."""
    settings = ctx.settings
    if not settings.postgres_url:
        return Check("replicas", "skip", "one machine (SQLite): no other replica shares it")
    try:
        registry = open_registry(settings)
        assert registry is not None
        with registry:
            live = registry.live()
            where = registry.database.what
    except HeronError as exc:
        return failed("replicas", str(exc), "check HERON_DATABASE_URL and that PostgreSQL runs")
    versions = sorted({r["version"] for r in live})
    names = ", ".join(f"{r['name']} ({r['host']}, pid {r['pid']}, {r['version']})" for r in live)
    data = {"database": where, "replicas": live, "versions": versions, "not_shared": NOT_SHARED}
    said = f"{len(live)} live on {where}: {names or 'none serving'}; not shared: " + ", ".join(
        NOT_SHARED
    )
    if len(versions) > 1:
        return warned(
            "replicas",
            said,
            f"upgrade every replica to one Heron version (now: {', '.join(versions)})",
            **data,
        )
    return passed("replicas", said, **data)
