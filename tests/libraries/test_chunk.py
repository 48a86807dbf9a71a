from __future__ import annotations

import pytest

from heron.embed import MiniLMEmbedder
from heron.libraries.chunk import ChunkPolicy, chunk_page, policy_for, token_counter
from heron.libraries.markdown import slug
from heron.libraries.parse import parse_page

PAGE = (
    """---
title: Volumes
---
Intro paragraph about volumes.

## Types of volumes

### configMap

A ConfigMap injects configuration.

### emptyDir {#empty-dir}

An emptyDir starts empty.

## Long section

"""
    + "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(8))
    + """

```yaml
apiVersion: v1
kind: Pod
```
"""
)


@pytest.fixture(scope="module")
def count(embedder: MiniLMEmbedder):
    return token_counter(embedder)


def test_policy_follows_the_embedder(embedder: MiniLMEmbedder) -> None:
    assert policy_for(embedder, None, None) == ChunkPolicy(256, 0)
    assert policy_for(object(), None, None) == ChunkPolicy(512, 64)
    assert policy_for(embedder, 128, 16) == ChunkPolicy(128, 16)


def test_chunks_follow_headings_with_path_anchor_and_lines(count) -> None:
    chunks = chunk_page(parse_page(PAGE, "concepts/volumes"), ChunkPolicy(256), count)
    first, types = chunks[0], chunks[1]
    assert first.headings == () and first.text.startswith("Volumes\nIntro paragraph")
    assert first.line_start == 1 and first.line_end == 4
    # Small subsections join their parent's chunk, whose heading and anchor it keeps.
    assert types.headings == ("Types of volumes",) and types.anchor == "types-of-volumes"
    assert "configMap" in types.body and "An emptyDir starts empty." in types.body
    assert (types.line_start, types.line_end) == (6, 14)
    assert types.text.startswith("Volumes > Types of volumes\n")
    long = [c for c in chunks if c.headings == ("Long section",)]
    assert len(long) > 1 and long[0].anchor == "long-section"
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert "apiVersion: v1\nkind: Pod" in long[-1].body  # a code fence stays whole


def test_every_chunk_fits_the_cap(count) -> None:
    text = "# T\n\n" + "\n\n".join("sentence " * 200 for _ in range(3)) + "\n" + "x" * 5000
    for cap in (64, 256):
        chunks = chunk_page(parse_page(text, "p"), ChunkPolicy(cap), count)
        sizes = count([c.text for c in chunks])
        assert max(sizes[:-1]) <= cap - 2  # room for [CLS] and [SEP]


def test_overlap_repeats_the_tail_of_the_previous_chunk(count) -> None:
    text = "## S\n\n" + "\n\n".join(f"para{i} " + "word " * 20 for i in range(12))
    chunks = chunk_page(parse_page(text, "p"), ChunkPolicy(128, 32), count)
    assert len(chunks) > 2
    last_para = chunks[0].body.split("\n\n")[-1]
    assert chunks[1].body.startswith(last_para)


def test_custom_anchor_and_slug() -> None:
    assert slug("Types of volumes!") == "types-of-volumes"
    page = parse_page("## emptyDir {#empty-dir}\nText\n", "p")
    chunk = chunk_page(page, ChunkPolicy(256), lambda t: [len(x) // 4 for x in t])[0]
    assert (chunk.anchor, chunk.headings) == ("empty-dir", ("emptyDir",))


def test_page_with_only_front_matter_gives_one_chunk(count) -> None:
    page = parse_page("---\ntitle: Glossary\ndescription: Terms.\n---\n", "g")
    (chunk,) = chunk_page(page, ChunkPolicy(256), count)
    assert chunk.text == "Glossary\nTerms."


def test_dense_text_drops_urls_and_long_code() -> None:
    body = "See [the docs](https://example.com/very/long/url).\n\n```\n" + "line\n" * 20 + "```"
    (chunk,) = chunk_page(parse_page(body, "p"), ChunkPolicy(512), lambda t: [1] * len(t))
    assert "https://" in chunk.text and "https://" not in chunk.dense_text
    assert chunk.dense_text.count("line") == 8


def test_setext_headings_start_sections(count) -> None:
    text = (
        "---\ntitle: Guide\n---\nInstall\n=======\n\nRun the installer.\n\n"
        "Configure\n---------\n\nEdit the file.\n"
    )
    page = parse_page(text, "guide")
    (chunk,) = chunk_page(page, ChunkPolicy(256), count)
    assert (chunk.headings, chunk.anchor, chunk.line_start, chunk.line_end) == (
        ("Install",),
        "install",
        4,
        12,
    )
    assert chunk.body == "Run the installer.\n\nConfigure\n\nEdit the file."  # no underlines
    # With room for one block a chunk, the subsection stands alone, from its heading.
    alone = chunk_page(page, ChunkPolicy(12), lambda t: [4] * len(t))[-1]
    assert (alone.headings, alone.anchor, alone.line_start) == (
        ("Install", "Configure"),
        "configure",
        9,
    )


def test_a_comment_in_a_long_fence_is_no_heading(count) -> None:
    text = "# Page\n\n## Shell\n\n````md\n```sh\n# install it\n\napt install x\n```\n````\n"
    (chunk,) = chunk_page(parse_page(text, "p"), ChunkPolicy(256), count)
    assert chunk.headings == ("Shell",) and (chunk.line_start, chunk.line_end) == (3, 11)
    assert "# install it\n\napt install x" in chunk.body  # the blank line inside stays


def test_duplicate_headings_get_unique_anchors(count) -> None:
    text = "".join(f"## {name}\n\n" + "word " * 200 + "\n\n" for name in ["Example"] * 3)
    chunks = chunk_page(parse_page(text, "p"), ChunkPolicy(256), count)
    assert sorted({c.anchor for c in chunks}) == ["example", "example-1", "example-2"]


def test_title_from_a_setext_heading_not_from_code() -> None:
    assert parse_page("```\n# comment\n```\nGuide\n=====\n", "p").title == "Guide"
