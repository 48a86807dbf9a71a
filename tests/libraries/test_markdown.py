from __future__ import annotations

from heron.libraries.markdown import Heading, outline, slug


def test_atx_and_setext_headings_with_their_lines() -> None:
    lines = ["Install", "=======", "", "Text.", "", "Options", "-------", "## Usage ##"]
    assert outline(lines).headings == [
        Heading(1, "Install", "install", 1, 2),
        Heading(2, "Options", "options", 6, 7),
        Heading(2, "Usage", "usage", 8, 8),
    ]


def test_a_hash_inside_a_long_fence_is_code() -> None:
    lines = ["````md", "```sh", "# not a heading", "```", "````", "# Real"]
    found = outline(lines)
    assert [h.text for h in found.headings] == ["Real"]
    assert found.code == [(1, 5)]


def test_duplicate_anchors_are_numbered_as_on_github() -> None:
    lines = ["## Example", "## Example", "## Example-1", "## Example", "## Example!"]
    anchors = [h.anchor for h in outline(lines).headings]
    # github-slugger: a later "Example-1" takes the next free number.
    assert anchors == ["example", "example-1", "example-1-1", "example-2", "example-3"]


def test_anchor_from_the_visible_text_and_custom_ids() -> None:
    lines = ["## Use `kubectl` [here](https://example.com)", "## emptyDir {#empty-dir}"]
    (code, custom) = outline(lines).headings
    assert (code.text, code.anchor) == (
        "Use `kubectl` [here](https://example.com)",
        "use-kubectl-here",
    )
    assert (custom.text, custom.anchor) == ("emptyDir", "empty-dir")


def test_nested_headings_take_an_anchor_but_start_no_section() -> None:
    lines = ["- item", "", "  ## Steps", "", "## Steps"]
    assert [(h.anchor, h.line_start) for h in outline(lines).headings] == [("steps-1", 5)]


def test_slug() -> None:
    assert slug("Types of volumes!") == "types-of-volumes"
    assert slug("What's next") == "whats-next"
