"""``python -m bench [NAME ...]``: run benchmarks and write their tables to .bench/results.md.

Names: scifact, embed, cache, vectors, latency, skills, tools, libraries (or books), agent,
answers, jobs, server, parity, pgvector, pgjobs, e5, e5-fusion, multilingual, interventions,
web, ops, heldout-tools, heldout-libraries, heldout-skills (sets from public packages, never
tuned on), realuse (three libraries at once, follow-ups, extractive answers), cooldown (a
hung primary model with and without cooldowns).
No name runs them all (several hours on 2 cores: the 1M-record graphs of SQLite and pgvector, the
Kubernetes index and the local model's answers dominate).
"""

from __future__ import annotations

import sys
from datetime import date

from bench import (
    agent,
    answers,
    cache_calls,
    cooldown,
    e5,
    e5_fusion,
    embed_throughput,
    heldout_libraries,
    heldout_skills,
    heldout_tools,
    interventions,
    jobs,
    libraries,
    multilingual,
    ops,
    parity,
    pgjobs,
    pgvector,
    realuse,
    scifact,
    search_latency,
    security,
    server,
    skills,
    tools,
    vector_index,
    web,
)
from bench.common import WORK, machine

BENCHMARKS = {
    "scifact": scifact.run,
    "embed": embed_throughput.run,
    "cache": cache_calls.run,
    "vectors": vector_index.run,
    "latency": search_latency.run,
    "skills": skills.run,
    "tools": tools.run,
    "libraries": libraries.run,
    "books": libraries.run,  # the old name
    "agent": agent.run,
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
    "web": web.run,
    "ops": ops.run,
    "heldout-tools": heldout_tools.run,
    "heldout-libraries": heldout_libraries.run,
    "heldout-skills": heldout_skills.run,
    "realuse": realuse.run,
    "security": security.run,
    "cooldown": cooldown.run,
}


def main(names: list[str]) -> None:
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        sys.exit(f"Unknown benchmark {unknown[0]!r}. Choose from: {', '.join(BENCHMARKS)}.")
    WORK.mkdir(exist_ok=True)
    header = f"## {date.today()}, {machine()}\n\n"
    print(header, flush=True)
    with open(WORK / "results.md", "a", encoding="utf-8") as out:
        out.write(header)
        for name in names or list(BENCHMARKS):
            out.write(f"`python -m bench {name}`\n\n{BENCHMARKS[name]()}\n")
            out.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
