from __future__ import annotations

from heron.libraries.parse import parse_page, strip_markup


def test_yaml_front_matter_gives_title_description_tags() -> None:
    page = parse_page(
        "---\ntitle: Volumes\ndescription: Storage for Pods.\ntags: [storage, pods]\n---\nBody\n",
        "concepts/volumes",
    )
    assert (page.title, page.description, page.tags) == (
        "Volumes",
        "Storage for Pods.",
        ["storage", "pods"],
    )
    assert page.lines[5] == "Body" and page.lines[:5] == [""] * 5  # line 6 of the file
    assert page.warnings == []


def test_toml_front_matter() -> None:
    page = parse_page('+++\ntitle = "Rollback"\ntags = ["apps"]\n+++\nText\n', "tasks/rollback")
    assert (page.title, page.tags) == ("Rollback", ["apps"])


def test_broken_front_matter_warns_and_keeps_the_body() -> None:
    page = parse_page("---\ntitle: [unclosed\n---\n# Real title\nBody text\n", "a/b")
    assert page.title == "Real title"
    assert "broken front matter" in page.warnings[0]
    assert "Body text" in page.lines


def test_unclosed_front_matter_is_read_as_text() -> None:
    page = parse_page("---\ntitle: x\nno end\n", "my-page")
    assert page.title == "My page" and "never closed" in page.warnings[0]


def test_page_that_is_only_front_matter() -> None:
    page = parse_page("---\ntitle: Only\ndescription: Nothing else.\n---\n", "x")
    assert (page.title, page.description) == ("Only", "Nothing else.")
    assert not any(line.strip() for line in page.lines)


def test_shortcodes_and_comments_stripped_line_numbers_kept() -> None:
    text = (
        '<!-- a\ncomment -->\nSee {{< glossary_tooltip text="Pods" term_id="pod" >}} here.\n'
        '{{< note >}}\nBack up first.\n{{< /note >}}\n## {{% heading "whatsnext" %}}\n'
        '{% include warning.html %}Liquid gone.\n[link]({{< ref "/docs/x" >}})\n'
    )
    out = strip_markup(text).split("\n")
    assert len(out) == len(text.split("\n"))
    assert out[2] == "See Pods here."
    assert out[4] == "Back up first."
    assert out[6] == "## What's next"
    assert out[7] == "Liquid gone."
    assert out[8] == "[link]()"
    assert "comment" not in "".join(out)


def test_content_hash_follows_the_indexed_text_only() -> None:
    a = parse_page("---\ntitle: T\nweight: 1\n---\nBody\n", "p")
    b = parse_page("---\ntitle: T\nweight: 2\n---\nBody\n", "p")  # weight is not indexed
    c = parse_page("---\ntitle: T\nweight: 1\n---\nBody changed\n", "p")
    assert a.content_hash == b.content_hash != c.content_hash
