"""Sentence splitting of Markdown passages: golden cases, one rule each."""

from __future__ import annotations

import pytest

from heron.agent.sentences import sentences, split


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("One thing. Another thing.", ["One thing.", "Another thing."]),
        # Abbreviations and initials do not end a sentence.
        (
            "Use a probe, e.g. HTTP or TCP. Then wait, i.e. Kubernetes retries.",
            ["Use a probe, e.g. HTTP or TCP.", "Then wait, i.e. Kubernetes retries."],
        ),
        ("Written by J. Smith in 2020. It stands.", ["Written by J. Smith in 2020.", "It stands."]),
        # Version numbers, file names and URLs: no space after their dots.
        (
            "Upgrade to v1.28.2 first. Read kube-apiserver.yaml and docs.example.com next.",
            ["Upgrade to v1.28.2 first.", "Read kube-apiserver.yaml and docs.example.com next."],
        ),
        # A version at the end of a sentence still ends it.
        (
            "It shipped in 1.28. The next one is 1.29.",
            ["It shipped in 1.28.", "The next one is 1.29."],
        ),
        # Never inside inline code.
        (
            "Run `kubectl get pods. Then` as written. Done!",
            ["Run `kubectl get pods. Then` as written.", "Done!"],
        ),
        # A lowercase word after a period is the same sentence ("see fig. below").
        ("See the note. below it.", ["See the note. below it."]),
        ('He said "stop." Then left? Yes.', ['He said "stop."', "Then left?", "Yes."]),
    ],
)
def test_split(text: str, expected: list[str]) -> None:
    assert split(text) == expected


def test_markdown_structure_gives_prose_only_in_reading_order() -> None:
    passage = (
        "# Pods\n\n"
        "_Pods_ are the smallest **deployable** units, see [the docs](https://k8s.io/pods).\n"
        "A Pod holds one or more containers.\n\n"
        "- Each Pod gets its own IP address.\n"
        "- Containers in a Pod share `localhost`.\n\n"
        "| field | meaning |\n|---|---|\n| spec | the desired state of the Pod |\n\n"
        "```yaml\napiVersion: v1\nkind: Pod. Not a sentence.\n```\n\n"
        '<div class="note">An HTML block is not prose either.</div>\n\n'
        "> A note in a quote is prose.\n\n"
        "The following fields are supported:\n\n"
        "1. Numbered items lose their numbers too.\n"
    )
    found = sentences(passage)
    assert [s.text for s in found] == [
        "Pods are the smallest deployable units, see the docs.",
        "A Pod holds one or more containers.",
        "Each Pod gets its own IP address.",
        "Containers in a Pod share `localhost`.",
        "field: spec; meaning: the desired state of the Pod.",
        "A note in a quote is prose.",
        "The following fields are supported: Numbered items lose their numbers too.",
    ]
    assert [s.position for s in found] == list(range(7))
    # paragraphs, list items and the table row; the list joined its introduction's block
    assert [s.block for s in found] == [1, 1, 2, 3, 4, 5, 6]
    assert [s.row for s in found] == [False] * 4 + [True, False, False]


def test_a_table_row_reads_with_its_column_names() -> None:
    passage = (
        "| Severity | Acknowledge within | Notes |\n|---|---|---|\n"
        "| SEV1 | 5 minutes | |\n| sev3 | next **working** day | [page](x) |\n\n"
        "| cut | from its header |\n"  # a chunk that starts mid-table: not a table
    )
    assert [(s.text, s.row) for s in sentences(passage)] == [
        ("Severity: SEV1; Acknowledge within: 5 minutes.", True),
        ("Severity: sev3; Acknowledge within: next working day; Notes: page.", True),
    ]


def test_a_short_list_joins_the_sentence_that_introduces_it() -> None:
    short = "You may work abroad as long as:\n\n1. the country is approved;\n2. HR knows.\n"
    assert [s.text for s in sentences(short)] == [
        "You may work abroad as long as: the country is approved; HR knows."
    ]
    # A long or nested list is not one statement: its introduction is left out.
    entries = "".join(f"- Entry number {n} is here.\n" for n in range(6))
    nested = "- One.\n  - Inner.\n"
    for body in (entries, nested):
        found = [s.text for s in sentences(f"Supported:\n\n{body}")]
        assert found and not any(t.startswith("Supported") for t in found)


def test_a_sentence_introducing_a_one_line_command_keeps_it() -> None:
    passage = (
        "To list the Pods, run:\n\n```shell\nkubectl get pods\n```\n\n"
        "To apply a manifest, run:\n\n```yaml\nkind: Pod\nmetadata: {}\n```\n"
    )
    assert [s.text for s in sentences(passage)] == ["To list the Pods, run: `kubectl get pods`"]


def test_text_with_no_prose_gives_no_sentences() -> None:
    assert sentences("## Only a heading\n\n```\ncode\n```\n") == ()
    assert sentences("") == ()
    # A chunk cut in the middle of a table has rows and no header: still a table.
    rows = "| `GIT_TERMINAL_PROMPT` | `0` | git never asks. |\n| `HOME` | empty | No config. |\n"
    assert sentences(rows) == ()
