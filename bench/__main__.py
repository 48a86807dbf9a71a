"""``python -m bench [NAME ...]``: run benchmarks and write their tables to .bench/results.md.

Names: scifact, embed, embed-speed, cache, vectors, latency, skills, tools, libraries, enrich,
agent, agent-routing, answers, jobs, server, parity, pgvector, pgjobs, e5, e5-fusion, multilingual,
interventions, interventions-storm, web, ops, heldout-tools, heldout-libraries,
heldout-skills (sets from public packages, never tuned on), realuse (three libraries at
once, follow-ups, extractive answers), cooldown (a hung primary model with and without
cooldowns), broker (one model's deployments under each routing strategy, the
response cache, a budget in money under parallel calls), security (the worst requests
of at most 64 KB), mcp-door (a client reaching
150 tools through Heron alone), documents (three public manuals as PDF, HTML, Word and
Markdown), languages (a Portuguese manual with and without per-language analysis), replicas
(200 mixed requests through one heron serve and two on one PostgreSQL; a replica killed
mid-job), uploads (one file added beside a whole heron index; POST /upload end to end),
speed (commands from the shell with and without a running heron serve, a new home's first
answer about Heron, 200 Kubernetes pages indexed under minilm and the default profile).
No name runs them all (several hours on 2 cores: the 1M-record graphs of SQLite and pgvector, the
Kubernetes index and the local model's answers dominate).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import date
from functools import partial

from bench import (
    agent,
    agent_routing,
    answers,
    broker,
    cache_calls,
    cooldown,
    documents,
    e5,
    e5_fusion,
    embed_speed,
    embed_throughput,
    enrich,
    heldout_libraries,
    heldout_skills,
    heldout_tools,
    interventions,
    interventions_storm,
    jobs,
    languages,
    libraries,
    mcp_door,
    multilingual,
    ops,
    parity,
    people,
    pgjobs,
    pgvector,
    realuse,
    replicas,
    scifact,
    search_latency,
    security,
    server,
    skills,
    speed,
    sqlite_parity,
    tools,
    uploads,
    vector_index,
    web,
)
from bench.common import WORK, machine

BENCHMARKS = {
    "scifact": scifact.run,
    "embed": embed_throughput.run,
    "embed-speed": embed_speed.run,
    "cache": cache_calls.run,
    "vectors": vector_index.run,
    "latency": search_latency.run,
    "skills": skills.run,
    "tools": tools.run,
    "libraries": libraries.run,
    "enrich": enrich.run,
    "agent": agent.run,
    "agent-routing": agent_routing.run,
    "answers": answers.run,
    "jobs": jobs.run,
    "server": server.run,
    "parity": parity.run,
    "pgvector": pgvector.run,
    "pgjobs": pgjobs.run,
    "e5": e5.run,
    "e5-fusion": e5_fusion.run,
    "multilingual": multilingual.run,
    "interventions": interventions.run,
    "interventions-storm": interventions_storm.run,
    "web": web.run,
    "ops": ops.run,
    "heldout-tools": heldout_tools.run,
    "heldout-libraries": heldout_libraries.run,
    "heldout-skills": heldout_skills.run,
    "realuse": realuse.run,
    "people": people.run,
    "security": security.run,
    "cooldown": cooldown.run,
    "broker": broker.run,
    "mcp-door": mcp_door.run,
    "documents": documents.run,
    "languages": languages.run,
    "replicas": replicas.run,
    "uploads": uploads.run,
    "speed": speed.run,
    "sqlite-parity": sqlite_parity.run,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run; none: all")
    parser.add_argument(
        "--base",
        action="append",
        metavar="COMMIT",
        help="sqlite-parity: a commit (or a folder holding a tree) to time beside this "
        "checkout; repeat it for several, in the order of the table's columns",
    )
    parser.add_argument(
        "--head",
        metavar="COMMIT",
        help="sqlite-parity: the tree of the last column (default: this checkout as it is)",
    )
    args = parser.parse_args(argv)
    names: list[str] = args.names
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"Unknown benchmark {unknown[0]!r}. Choose from: {', '.join(BENCHMARKS)}.")
    benchmarks: dict[str, Callable[[], str]] = dict(BENCHMARKS)
    if args.base or args.head:
        if names != ["sqlite-parity"]:
            parser.error(
                "--base and --head are sqlite-parity's: python -m bench sqlite-parity --base COMMIT"
            )
        bases = args.base or [sqlite_parity.BEFORE_ISSUE_47]
        benchmarks["sqlite-parity"] = partial(sqlite_parity.run, bases, args.head)
    WORK.mkdir(exist_ok=True)
    header = f"## {date.today()}, {machine()}\n\n"
    print(header, flush=True)
    with open(WORK / "results.md", "a", encoding="utf-8") as out:
        out.write(header)
        for name in names or list(BENCHMARKS):
            out.write(f"`python -m bench {name}`\n\n{benchmarks[name]()}\n")
            out.flush()


if __name__ == "__main__":
    main()
