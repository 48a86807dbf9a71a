"""Re-embedding unchanged text: count the model calls on a second load of the same records."""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.common import SCIFACT, read_jsonl, table, timed
from heron.embed import CachedEmbedder, MiniLMEmbedder
from heron.settings import Settings
from heron.store import Record
from tests.conftest import sqlite_store


def run(n: int = 500) -> str:
    docs = read_jsonl(SCIFACT / "corpus.jsonl")[:n]
    records = [Record(d["_id"], f"{d['title']} {d['text']}", {"title": d["title"]}) for d in docs]
    model = MiniLMEmbedder(Settings().models_dir)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cached = CachedEmbedder(model, Path(tmp) / "cache.db")
        store = sqlite_store(Path(tmp) / "a.db", cached)
        for label, target in [
            ("first load", store),
            ("same records again", store),
            ("fresh store, same cache", sqlite_store(Path(tmp) / "b.db", cached)),
        ]:
            calls, misses = model.calls, cached.misses
            _, seconds = timed(lambda target=target: target.upsert("docs", records))
            rows.append((label, model.calls - calls, cached.misses - misses, seconds))
    return table(
        f"Model calls when loading {n} SciFact abstracts",
        ["load", "model batches", "texts embedded", "seconds"],
        rows,
    )


if __name__ == "__main__":
    run()
