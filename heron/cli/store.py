"""``heron store``: load records, search them, drop namespaces.

The store is imported when a command runs (the rule in ``heron.cli``'s docstring)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from heron.cli.output import (
    QueriesOption,
    console,
    print_batch,
    print_json,
    query_batch,
    working,
)
from heron.cli.settings import command_settings
from heron.errors import InputError

if TYPE_CHECKING:
    from heron.store import Hit

#: ``heron.store.SEARCH_MODES``, written out so that --help need not import the store
#: (tests/cli/test_startup.py checks they agree).
SEARCH_MODES = ("dense", "lexical", "hybrid")

store_app = typer.Typer(help="Load and search namespaced records.", no_args_is_help=True)


@store_app.command("load")
def load(
    namespace: Annotated[str, typer.Argument(help="Namespace to load into, e.g. docs.")],
    file: Annotated[Path, typer.Argument(help='JSONL: {"id", "text", "metadata"} per line.')],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Load records into a namespace. Loading the same file again changes nothing.

    Example: heron store load scifact corpus.jsonl
    """
    from heron.cli.progress import progress_bar
    from heron.store import open_store
    from heron.store.jsonl import read_records

    records = list(read_records(file))  # a bad line fails the load before anything is written
    store = open_store(command_settings())
    with progress_bar(f"loading {namespace}", len(records)) as advance:
        result = store.upsert(namespace, records, progress=advance)
    summary = {"namespace": namespace, **vars(result), "records": store.count(namespace)}
    if as_json:
        print_json(summary)
    else:
        console.print(
            f"{namespace}: {result.added} added, {result.updated} updated, "
            f"{result.unchanged} unchanged; {summary['records']} records"
        )


def _parse_filters(pairs: list[str]) -> dict[str, Any]:
    filters: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise InputError(f"Filter {pair!r} must look like FIELD=VALUE, e.g. collection=tasks.")
        filters[name] = value
    return filters


def _hit_json(hit: Hit, with_text: bool) -> dict[str, Any]:
    data = hit.to_dict()
    if not with_text:
        data.pop("text")
    return data


@store_app.command("search")
def search(
    namespace: Annotated[str, typer.Argument(help="Namespace to search.")],
    query: Annotated[str | None, typer.Argument(help="The query text.")] = None,
    queries: QueriesOption = None,
    mode: Annotated[str, typer.Option(help=f"One of: {', '.join(SEARCH_MODES)}.")] = "hybrid",
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="Results per query.")] = 10,
    where: Annotated[
        list[str] | None, typer.Option("--filter", help="FIELD=VALUE on metadata; repeatable.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Search a namespace by meaning (dense), words (lexical) or both (hybrid).

    Example: heron store search scifact "vitamin D and bone density" --mode hybrid -k 5
    """
    from heron.store import open_store

    batch = query_batch(query, queries)
    store = open_store(command_settings())
    filters = _parse_filters(where or [])
    results = store.search_many(
        namespace, [text for _, text in batch], mode=mode, top_k=top_k, filters=filters
    )
    if queries is not None:
        print_batch(batch, ([_hit_json(h, False) for h in hits] for hits in results))
        return
    hits = results[0]
    if as_json:
        print_json([_hit_json(h, True) for h in hits])
        return
    for hit in hits:
        title = hit.metadata.get("title") or hit.text[:70].replace("\n", " ")
        console.print(f"{hit.rank:>3}. [bold]{hit.id}[/] {hit.score:.4f}  {title}")


@store_app.command("drop")
def drop(namespace: Annotated[str, typer.Argument(help="Namespace to delete.")]) -> None:
    """Delete a namespace and everything in it (for example to re-index with another model).

    Example: heron store drop scifact
    """
    from heron.store import open_store

    open_store(command_settings()).drop(namespace)
    console.print(f"dropped {namespace}")


@store_app.command("parity")
def parity_command(
    namespace: Annotated[str, typer.Argument(help="Namespace both stores hold.")],
    query: Annotated[str | None, typer.Argument(help="The query text.")] = None,
    queries: QueriesOption = None,
    sqlite: Annotated[
        Path | None, typer.Option(help="SQLite store; default: HERON_HOME's heron.db.")
    ] = None,
    postgres: Annotated[
        str | None, typer.Option(help="postgresql:// URL; default: HERON_DATABASE_URL.")
    ] = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="Results compared per query.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Run the same queries on the SQLite and the PostgreSQL store; print overlap@k per mode.

    Example: heron store parity scifact --queries claims.jsonl
    """
    from heron.cli.settings import command_settings
    from heron.embed import load_embedder
    from heron.store import open_store
    from heron.store.parity import parity

    batch = query_batch(query, queries)
    settings = command_settings()
    url = postgres or settings.postgres_url
    if not url:
        raise InputError(
            "No PostgreSQL store to compare with: set HERON_DATABASE_URL=postgresql://... "
            "or pass --postgres URL."
        )
    # Each side is opened as Heron opens its store, by settings that name its database.
    on_postgres = settings.model_copy(update={"database_url": url})
    if on_postgres.postgres_url is None:
        raise InputError("--postgres takes a postgresql://USER:PASSWORD@HOST:PORT/DB URL.")
    file = sqlite or settings.home / "heron.db"
    on_sqlite = settings.model_copy(update={"database_url": f"sqlite:///{file}"})
    with (
        load_embedder(settings) as embedder,
        open_store(on_sqlite, embedder) as one,
        open_store(on_postgres, embedder) as other,
        working(f"running {len(batch)} queries on both stores"),
    ):
        report = parity(one, other, namespace, [text for _, text in batch], top_k=top_k)
    if as_json:
        print_json(report.to_dict())
        return
    console.print(f"{namespace}: {report.queries} queries, SQLite vs PostgreSQL {other.where}")
    for mode, overlap in report.overlap.items():
        console.print(
            f"  {mode:<8} overlap@{top_k} {overlap:.3f}   same order {report.same_order[mode]:.3f}"
        )
