"""``heron skills``: index SKILL.md files, check the index, search it, log what was used.

The skills index is imported when a command runs (the rule in ``heron.cli``'s docstring).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from heron.cli.output import (
    QueriesOption,
    console,
    errors,
    print_batch,
    print_json,
    query_batch,
    say,
)
from heron.cli.settings import command_settings

if TYPE_CHECKING:
    from heron.skills import SkillHit

#: ``heron.skills.index.DEFAULT_TOP_K``, written out so that --help need not import the
#: skills index (tests/cli/test_startup.py checks they agree).
DEFAULT_TOP_K = 5

skills_app = typer.Typer(
    help="Index SKILL.md files from every skill directory and find the right one.",
    no_args_is_help=True,
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]
TopK = Annotated[int, typer.Option("--top-k", "-k", help="Skills per query.")]
#: Human output lists this many items of a long list; --json lists them all.
SHOWN = 20


def _listing(title: str, lines: Sequence[str]) -> None:
    if not lines:
        return
    console.print(f"{title} ({len(lines)}):")
    for line in lines[:SHOWN]:
        console.print(f"  {escape(line)}")
    if len(lines) > SHOWN:
        console.print(f"  ... and {len(lines) - SHOWN} more (--json lists all)")


@skills_app.command("status")
def status(as_json: JsonFlag = False) -> None:
    """Show the skill directories, what the scan read and how the index compares.

    What was read, recovered and skipped; the index's records, out of date and orphans.
    Changes nothing.

    Example: heron skills status --json
    """
    from heron.skills import open_skills

    skills = open_skills(command_settings())
    state = skills.status()
    if as_json:
        print_json(state.to_dict())
        return
    scan, index = state.scan, state.index
    console.print("directories, highest precedence first:")
    for d in scan.dirs:
        mark = f"[green]found[/]   {d.files:>5} files" if d.exists else "[dim]missing[/]"
        console.print(f"  {mark}  {escape(str(d.path))} [dim]({escape(d.source)})[/]")
    console.print(
        f"files: {scan.files} scanned, {len(scan.parsed)} parsed ({len(scan.recovered)} "
        f"recovered), {len(scan.failures)} failed, {len(scan.shadowed)} shadowed; "
        f"{len(scan.skills)} skills"
    )
    _listing("diagnostics", [f"{s.path}: {d}" for s in scan.recovered for d in s.diagnostics])
    _listing("failed", [f"{f.path}: {f.reason}" for f in scan.failures])
    _listing(
        "shadowed",
        [f"{s.name}: {s.shadowed} (kept {s.kept})" for s in scan.shadowed],
    )
    _listing("directories not searched", [f"{s.path}: {s.reason}" for s in scan.skipped])
    console.print(
        f"index: {index.records} records; {index.current} current, {len(index.outdated)} "
        f"out of date, {len(index.missing)} not indexed, {len(index.orphans)} orphans, "
        f"{len(index.stale)} stale"
    )
    _listing("orphans (file gone)", [f"{e.name}: {e.path}" for e in index.orphans])
    _listing(
        "stale (file kept, skill not found there)", [f"{e.name}: {e.path}" for e in index.stale]
    )
    if not scan.skills:
        console.print(
            "No skills found: put skill folders (each with a SKILL.md) in a directory above, "
            "or list yours in HERON_SKILLS_DIRS."
        )
    elif index.outdated or index.missing:
        console.print("Bring the index up to date with: heron skills index")
    if index.orphans:
        console.print("Remove the orphans with: heron skills prune --apply")


@skills_app.command("index")
def index(as_json: JsonFlag = False) -> None:
    """Scan the skill directories and index what changed (unchanged skills cost nothing).

    Example: heron skills index
    """
    from heron.cli.progress import progress_bar
    from heron.skills import open_skills

    skills = open_skills(command_settings())
    with progress_bar("indexing skills") as tracker:
        tracker.start("scanning", None)
        report = skills.index(progress=tracker, on_total=lambda n: tracker.start("skills", n))
    if as_json:
        print_json(report.to_dict())
        return
    scan, result = report.scan, report.result
    console.print(
        f"{len(scan.skills)} skills from {scan.files} files: {result.added} added, "
        f"{result.updated} updated, {result.unchanged} unchanged"
        + (f", {len(result.renamed)} renamed" if result.renamed else "")
    )
    if scan.failures or scan.recovered:
        console.print(
            f"{len(scan.failures)} failed, {len(scan.recovered)} recovered; "
            "see: heron skills status"
        )
    if result.orphans:
        console.print(
            f"{len(result.orphans)} orphans (file gone); remove them: heron skills prune --apply"
        )


@skills_app.command("prune")
def prune(
    apply: Annotated[bool, typer.Option("--apply", help="Delete the orphans.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """List the indexed skills whose file is gone; with --apply, delete them.

    Records whose file still exists are always kept.

    Example: heron skills prune --apply
    """
    from heron.skills import open_skills

    result = open_skills(command_settings()).prune(apply=apply)
    if as_json:
        print_json(result.to_dict())
        return
    _listing("orphans", [f"{e.name}: {e.path}" for e in result.orphans])
    if apply:
        console.print(f"deleted {result.deleted}; kept {result.kept}")
    elif result.orphans:
        console.print("dry run: nothing deleted; delete them with: heron skills prune --apply")
    else:
        console.print(f"no orphans; {result.kept} records, all with their file")


def _print_hits(hits: Sequence[SkillHit]) -> None:
    if not hits:
        console.print("no skills found")
    for hit in hits:
        console.print(
            f"{hit.rank:>3}. [bold]{escape(hit.name)}[/] {hit.score:.3f} "
            f"[dim](dense {hit.dense_score:.3f}, lex {hit.lexical_score:.2f})[/]  "
            f"{escape(hit.description[:90])}"
        )


@skills_app.command("search")
def search(
    query: Annotated[str | None, typer.Argument(help="What the task is.")] = None,
    queries: QueriesOption = None,
    top_k: TopK = DEFAULT_TOP_K,
    as_json: JsonFlag = False,
) -> None:
    """Find the skills for a task: dense search re-ranked by word overlap.

    Example: heron skills search "create a new skill" -k 3
    """
    from heron.skills import open_skills

    batch = query_batch(query, queries)
    skills = open_skills(command_settings())
    results = skills.search_many([text for _, text in batch], top_k)
    if queries is not None:
        print_batch(batch, ([h.to_dict() for h in hits] for hits in results))
        return
    hits = results[0]
    if as_json:
        print_json([h.to_dict() for h in hits])
    else:
        _print_hits(hits)


@skills_app.command("context")
def context(
    query: Annotated[str, typer.Argument(help="What the task is.")],
    top_k: TopK = DEFAULT_TOP_K,
    min_rel: Annotated[
        float | None,
        typer.Option(
            help="Keep skills scoring >= MIN_REL x the top; default HERON_SKILLS_MIN_REL."
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Print the skills to put in a prompt for a task, and log the query.

    Example: heron skills context "publish a blog post" --json
    """
    from heron.skills import open_skills

    result = open_skills(command_settings()).context_for(query, top_k=top_k, min_rel=min_rel)
    if as_json:
        print_json(result.to_dict())
        return
    say(result.text, end="")
    errors.print(
        f"query_id {result.query_id}; report the skill used: "
        f"heron skills used {result.query_id} NAME"
    )


@skills_app.command("used")
def used(
    query_id: Annotated[int, typer.Argument(help="The query_id that context printed.")],
    name: Annotated[str, typer.Argument(help="The skill that was used.")],
    as_json: JsonFlag = False,
) -> None:
    """Report which skill was used after a query, for the hit rates of heron skills stats.

    Example: heron skills used 12 skill-creator
    """
    from heron.skills import open_skills

    rank = open_skills(command_settings()).record_use(query_id, name)
    if as_json:
        print_json({"query_id": query_id, "name": name, "rank": rank})
    else:
        where = f"rank {rank}" if rank else "not among the skills returned"
        console.print(f"recorded {escape(name)} for query {query_id} ({where})")


@skills_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    as_json: JsonFlag = False,
) -> None:
    """Show one skill as the parser reads it: fields, diagnostics and body.

    Example: heron skills show skill-creator
    """
    from heron.skills import open_skills

    skill = open_skills(command_settings()).show(name)
    if as_json:
        print_json(skill.to_dict())
        return
    console.print(f"[bold]{escape(skill.name)}[/]  {escape(str(skill.path))}")
    console.print(escape(skill.description))
    if skill.tags:
        console.print(f"tags: {escape(', '.join(skill.tags))}")
    for diagnostic in skill.diagnostics:
        console.print(f"[yellow]{escape(str(diagnostic))}[/]")
    console.print()
    console.print(skill.body, markup=False, highlight=False)


@skills_app.command("stats")
def stats(as_json: JsonFlag = False) -> None:
    """Show the hit rate of logged skill queries, vague and concrete apart.

    Example: heron skills stats --json
    """
    from heron.skills import open_skills

    rows = open_skills(command_settings()).stats()
    if as_json:
        print_json([row.to_dict() for row in rows])
        return
    for row in rows:
        rates = (
            f"hit rate {row.hit_rate:.0%}, first {row.top_rate:.0%}"
            if row.reported
            else "no uses reported"
        )
        console.print(f"{row.kind:>8}: {row.queries} queries, {row.reported} reported; {rates}")
