"""Making the records a library ships beside its pages (``heron.libraries.shipped``).

``ship_vectors`` indexes the library as ``heron index`` does, in a home of its own, and
writes what the index holds: each page's state and its records with their vectors, so the
file holds exactly what the next index of the same pages under the same model would make.
``scripts/ship-vectors`` runs it for Heron's own docs under each bundled profile.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from heron.embed import Embedder
from heron.errors import InputError
from heron.libraries.config import get_library
from heron.libraries.index import index_library, page_of
from heron.libraries.shipped import FOLDER, file_name, write_shipped
from heron.libraries.state import page_states
from heron.settings import Settings
from heron.store import Record, open_store


def ship_vectors(name: str, settings: Settings, embedder: Embedder) -> Path:
    """Write the records of library ``name`` (a folder) under ``embedder`` beside its
    pages; return the file. ``settings``: a home where ``name`` is configured and not
    indexed yet (a temporary one). ``embedder`` is not closed."""
    library = get_library(name, settings)
    root = Path(library.source)
    if not root.is_dir():
        raise InputError(f"Library {name!r} is not a folder ({library.source}); nothing to ship.")
    # This model's file is set aside first: the index would take its records as they are.
    (root / FOLDER / file_name(embedder.model_id)).unlink(missing_ok=True)
    with open_store(settings, embedder) as store:
        report = index_library(name, store, settings=settings)
        if report.error:
            raise InputError(f"Cannot index {name!r}: {report.error}")
        records: dict[str, list[Record]] = defaultdict(list)
        for record_id in store.ids(name):
            records[page_of(record_id)].append(store.get(name, record_id))
        states = page_states(store, name)
    pages = {page: (state, records[page]) for page, state in states.items()}
    return write_shipped(root, embedder.model_id, pages)
