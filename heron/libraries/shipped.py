"""Pages that ship chunked and embedded, so indexing them runs no model.

A library may carry, in ``.heron-vectors/`` at its root (a dot folder: never read as
pages), one file per embedding model, ``<model id>.npz``, and ``manifest.json`` naming
each file's SHA-256. A file holds the model id and, for each page, the records the
indexer made of it (id, text, metadata) with their vectors (int8 with a scale per vector:
a quarter of float32's size, cosine to it above 0.9999), under the page's state: the
hash of its content, the index version, the model id, the chunking settings and its
questions (``heron.libraries.index``). A page's records are used as they are only while
its state is the file's, so only while the page and the model are the ones they were
made from; a changed page is chunked and embedded as usual (the other pages are not),
and a file whose hash is not the manifest's, of another model or unreadable is ignored
(and logged).

Heron's own docs ship theirs for each bundled profile (``scripts/ship-vectors``, run by
the release step; a test fails when they are stale), so a new home loads the built-in
``heron`` library without running a model or chunking a page.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from heron.modelfiles import sha256
from heron.store import Record

log = logging.getLogger("heron.libraries")

FOLDER = ".heron-vectors"
MANIFEST = "manifest.json"
SHIP = "scripts/ship-vectors"


def file_name(model_id: str) -> str:
    return f"{model_id}.npz"


@dataclass
class ShippedPages:
    """The records one library ships for one model, by page id: ``(state, records)``."""

    model_id: str
    pages: dict[str, tuple[str, list[Record]]]

    def records(self, page: str, state: str, library: str) -> list[Record] | None:
        """The records of ``page`` in its ``state`` (with their vectors), for the library
        named ``library`` here; ``None`` when the file has none for that state."""
        shipped, records = self.pages.get(page, ("", []))
        if shipped != state:
            return None
        return [replace(r, metadata={**r.metadata, "library": library}) for r in records]


def read_shipped(root: Path, model_id: str, dim: int) -> ShippedPages | None:
    """The pages shipped under ``root`` for ``model_id`` (vectors of ``dim`` dimensions),
    checked against the manifest's SHA-256; ``None`` when there are none or they do not
    match."""
    folder = root / FOLDER
    path = folder / file_name(model_id)
    if not path.is_file():
        return None
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        if sha256(path) != manifest["files"][path.name]:
            log.warning("ignoring %s: its SHA-256 is not the manifest's", path)
            return None
        with np.load(path, allow_pickle=False) as data:
            stored_id = str(data["model_id"])
            pages = json.loads(str(data["pages"]))
            codes, scales = data["codes"], data["scales"]
        rows = sum(len(records) for _, records in pages.values())
        if stored_id != model_id or codes.shape != (rows, dim) or scales.shape != (rows,):
            log.warning("ignoring %s: %s vectors %s, not %s", path, stored_id, codes.shape, dim)
            return None
        vectors = codes.astype(np.float32) * scales.astype(np.float32)[:, None]
        out: dict[str, tuple[str, list[Record]]] = {}
        row = 0
        for page, (state, records) in pages.items():
            out[page] = (state, [])
            for record_id, text, metadata in records:
                out[page][1].append(Record(record_id, text, metadata, vectors[row]))
                row += 1
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("ignoring %s: %s", path, exc)
        return None
    return ShippedPages(model_id, out)


def write_shipped(
    root: Path, model_id: str, pages: Mapping[str, tuple[str, Sequence[Record]]]
) -> Path:
    """Write ``root``'s pages for ``model_id`` (page id -> its state and records, each
    with its vector) and record the file's SHA-256 in the manifest (other models' entries
    kept)."""
    layout: dict[str, tuple[str, list[tuple[str, str, dict]]]] = {}
    vectors: list[np.ndarray] = []
    for page, (state, records) in sorted(pages.items()):
        ordered = sorted(records, key=lambda r: r.id)
        layout[page] = (state, [(r.id, r.text, r.metadata) for r in ordered])
        vectors += [np.asarray(r.vector, dtype=np.float32) for r in ordered]
    matrix = np.array(vectors, dtype=np.float32).reshape(len(vectors), -1)
    scales = np.maximum(np.abs(matrix).max(axis=1), 1e-12) / 127
    codes = np.round(matrix / scales[:, None]).astype(np.int8)
    folder = root / FOLDER
    folder.mkdir(exist_ok=True)
    path = folder / file_name(model_id)
    with path.open("wb") as out:
        np.savez_compressed(
            out,
            model_id=np.array(model_id),
            pages=np.array(json.dumps(layout, ensure_ascii=False)),
            codes=codes,
            scales=scales.astype(np.float32),
        )
    manifest_path = folder / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        manifest = {"files": {}}
    manifest["files"][path.name] = sha256(path)
    manifest["regenerate"] = f"python {SHIP}"
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return path
