"""Turn a folder of Markdown pages into Heron records, one per page section.

Usage: python examples/markdown_to_jsonl.py DOCS_DIR OUT.jsonl

A small stand-alone example of the record format (``{"id", "text", "metadata"}``);
Heron's library indexer does this properly (front matter, shortcodes, chunk sizes).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HEADING = re.compile(r"^#{1,3} +(.+)$", re.MULTILINE)
FRONT_TITLE = re.compile(r"^title: *(.+)$", re.MULTILINE)
NOISE = re.compile(r"\{\{[<%].*?[%>]\}\}|<!--.*?-->", re.DOTALL)


def sections(page: Path, root: Path) -> list[dict]:
    text = page.read_text(encoding="utf-8", errors="replace")
    title_match = FRONT_TITLE.search(text[:2000])
    title = title_match.group(1).strip("\"' ") if title_match else page.stem
    if text.startswith("---"):
        text = text.split("---", 2)[-1]
    text = NOISE.sub(" ", text)
    page_id = page.relative_to(root).with_suffix("").as_posix()
    parts = HEADING.split(text)
    out, heading = [], title
    for i, part in enumerate(parts):
        if i % 2:
            heading = part.strip()
            continue
        body = " ".join(part.split())
        if len(body) > 80:
            out.append(
                {
                    "id": f"{page_id}#{len(out)}",
                    "text": f"{title} > {heading}\n{body[:2000]}",
                    "metadata": {
                        "title": title,
                        "page": page_id,
                        "collection": page_id.split("/")[0],
                    },
                }
            )
    return out


def main(docs: Path, out: Path) -> None:
    with open(out, "w", encoding="utf-8") as handle:
        for page in sorted(docs.rglob("*.md")):
            for record in sections(page, docs):
                handle.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
