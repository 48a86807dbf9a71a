"""``heron.skills.parser``: every recovery, on fixtures written by hand."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from heron.skills.parser import (
    MAX_BYTES,
    VALUE_BUDGET,
    SkillFileError,
    _os_reason,
    first_paragraph,
    parse_skill,
    parse_text,
)
from heron.yamlsafe import YAMLRefused

FOLDER = Path("/skills/my-folder/SKILL.md")


def codes(text: str) -> list[str]:
    return [d.code for d in parse_text(text, FOLDER).diagnostics]


def write(tmp_path: Path, content: str | bytes, folder: str = "thing") -> Path:
    path = tmp_path / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def test_a_clean_file_needs_no_recovery() -> None:
    skill = parse_text(
        "---\nname: pdf-tools\ndescription: Fill and merge PDF forms.\nlicense: MIT\n---\n"
        "# PDF tools\n\nSteps.\n",
        FOLDER,
    )
    assert (skill.name, skill.description) == ("pdf-tools", "Fill and merge PDF forms.")
    assert skill.extra == {"license": "MIT"}
    assert skill.body == "# PDF tools\n\nSteps."
    assert skill.diagnostics == ()


def test_front_matter_never_closed() -> None:
    skill = parse_text(
        "---\nname: deploy\ndescription: Ship the site.\n\n# Deploy\n\nRun the script.\n", FOLDER
    )
    assert (skill.name, skill.description) == ("deploy", "Ship the site.")
    assert skill.body.startswith("# Deploy")
    (diagnostic,) = skill.diagnostics
    assert diagnostic.code == "unclosed-front-matter"
    assert "never closed" in diagnostic.message and "lines 2-3" in diagnostic.message


def test_front_matter_closed_only_by_a_rule_in_the_body() -> None:
    skill = parse_text(
        "---\nname: deploy\ndescription: Ship it.\nThen run the script.\n---\nMore.\n", FOLDER
    )
    assert (skill.name, skill.description) == ("deploy", "Ship it.")
    assert skill.body.startswith("Then run the script.")
    assert [d.code for d in skill.diagnostics] == ["unclosed-front-matter"]


@pytest.mark.parametrize(
    ("marker", "expected"),
    [
        (">", "Folded over two lines. A second paragraph."),
        (">-", "Folded over two lines. A second paragraph."),
        ("|", "Folded over two lines. A second paragraph."),
        ("|-", "Folded over two lines. A second paragraph."),
    ],
)
def test_block_scalars_are_unfolded_never_the_marker(marker: str, expected: str) -> None:
    text = (
        f"---\nname: x\ndescription: {marker}\n  Folded over\n  two lines.\n\n"
        "  A second paragraph.\ntags: [a]\n---\n"
    )
    skill = parse_text(text, FOLDER)
    assert skill.description == expected
    assert skill.tags == ("a",) and skill.diagnostics == ()


def test_block_scalar_without_indentation_is_recovered_folded() -> None:
    skill = parse_text("---\nname: x\ndescription: >\nNot indented,\nstill text.\n---\n", FOLDER)
    assert skill.description == "Not indented, still text."
    assert [d.code for d in skill.diagnostics] == ["yaml-error"]


def test_a_bare_marker_is_never_the_description() -> None:
    skill = parse_text("---\nname: x\ndescription: '>'\n---\nThe real text.\n", FOLDER)
    assert skill.description == "The real text."
    assert [d.code for d in skill.diagnostics] == ["missing-description"]


@pytest.mark.parametrize(
    "front",
    [
        "tags:\n  - pdf\n  - Forms\n  - pdf",
        "tags:\n- pdf\n- Forms",
        "tags: [pdf, Forms]",
        "tags: pdf, forms",
        "metadata:\n  hermes:\n    tags: [pdf, forms]",
        "metadata:\n  tags:\n    - pdf\n    - forms",
        "tags: [pdf]\nmetadata:\n  hermes:\n    tags: [FORMS]",
    ],
)
def test_tags_in_every_layout(front: str) -> None:
    skill = parse_text(f"---\nname: x\ndescription: d\n{front}\n---\n", FOLDER)
    assert [t.lower() for t in skill.tags] == ["pdf", "forms"]
    assert skill.diagnostics == ()


def test_tags_of_the_wrong_type_are_reported() -> None:
    assert codes("---\nname: x\ndescription: d\ntags: {a: 1}\n---\n") == ["bad-field"]


def test_unquoted_colon_is_retried_quoted() -> None:
    skill = parse_text(
        "---\nname: triage\ndescription: Use it: when a build fails\nversion: 2\n---\n", FOLDER
    )
    assert skill.description == "Use it: when a build fails"
    assert skill.extra == {"version": 2}
    (diagnostic,) = skill.diagnostics
    assert diagnostic.code == "unquoted-colon" and "line 3" in diagnostic.message


def test_unquoted_colon_across_continuation_lines() -> None:
    skill = parse_text(
        '---\nname: x\ndescription: Note: it "works"\n  over: two lines\ntags: [a]\n---\n', FOLDER
    )
    assert skill.description == 'Note: it "works" over: two lines'
    assert skill.tags == ("a",)
    assert [d.code for d in skill.diagnostics] == ["unquoted-colon"]


def test_a_reserved_character_is_retried_quoted() -> None:
    skill = parse_text("---\nname: x\ndescription: @bot posts the summary\n---\n", FOLDER)
    assert skill.description == "@bot posts the summary"
    assert [d.code for d in skill.diagnostics] == ["quoted-value"]


def test_a_broken_entry_spoils_only_itself() -> None:
    skill = parse_text(
        "---\nname: x\ndescription: Fine.\nrequires: [unclosed\nlicense: MIT\n---\n", FOLDER
    )
    assert (skill.name, skill.description) == ("x", "Fine.")
    assert skill.extra == {"requires": "[unclosed", "license": "MIT"}
    (diagnostic,) = skill.diagnostics
    assert diagnostic.code == "yaml-error" and "'requires'" in diagnostic.message


def test_missing_name_and_description_come_from_folder_and_first_paragraph() -> None:
    skill = parse_text(
        "---\nlicense: MIT\n---\n# Title\n\n<!-- a\ncomment -->\n```\ncode\n```\n\n"
        "The first\nparagraph.\n\nThe second.\n",
        FOLDER,
    )
    assert (skill.name, skill.description) == ("my-folder", "The first paragraph.")
    assert [d.code for d in skill.diagnostics] == ["missing-name", "missing-description"]


def test_no_description_anywhere_is_empty_never_the_path() -> None:
    skill = parse_text("---\nname: lonely\n---\n# Only a heading\n", FOLDER)
    assert skill.description == ""
    assert [d.code for d in skill.diagnostics] == ["no-description"]


def test_no_front_matter_at_all() -> None:
    skill = parse_text("# Tool\n\nDoes a thing.\n", FOLDER)
    assert (skill.name, skill.description) == ("my-folder", "Does a thing.")
    assert codes("# Tool\n\nDoes a thing.\n") == [
        "no-front-matter",
        "missing-name",
        "missing-description",
    ]


def test_front_matter_that_is_not_a_mapping() -> None:
    skill = parse_text("---\n- a\n- b\n---\nBody text.\n", FOLDER)
    assert skill.description == "Body text."
    assert skill.diagnostics[0].code == "not-a-mapping"


def test_odd_field_types_are_read_as_text() -> None:
    skill = parse_text("---\nname: 42\ndescription: [Fill, forms]\n---\n", FOLDER)
    assert (skill.name, skill.description) == ("42", "Fill forms")
    assert codes("---\nname: 42\ndescription: [Fill, forms]\n---\n") == ["bad-field", "bad-field"]


def test_windows_line_endings_and_bom() -> None:
    skill = parse_text("\ufeff---\r\nname: x\r\ndescription: d\r\n---\r\nBody\r\n", FOLDER)
    assert (skill.name, skill.description, skill.body) == ("x", "d", "Body")
    assert skill.diagnostics == ()


def test_blank_lines_before_the_front_matter() -> None:
    skill = parse_text("\n\n---\nname: x\ndescription: Use: now\n---\nBody\n", FOLDER)
    assert (skill.name, skill.description, skill.body) == ("x", "Use: now", "Body")
    assert "line 5" in skill.diagnostics[0].message  # line numbers are the file's


def test_yaml_alias_bomb_is_refused(tmp_path: Path) -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    with pytest.raises(YAMLRefused, match="aliases"):
        parse_text(f"---\nname: x\ndescription: d\n{bomb}---\n", FOLDER)
    reason = failure(write(tmp_path, f"---\nname: x\n{bomb}description: *i\n---\n"))
    assert reason.startswith("front matter refused: YAML aliases")


def test_many_values_are_cut_to_the_budget() -> None:
    values = ", ".join(["x"] * (VALUE_BUDGET + 10))
    skill = parse_text(f"---\nname: x\ndescription: d\nmany: [{values}]\n---\n", FOLDER)
    assert skill.name == "x"
    assert "bad-field" in [d.code for d in skill.diagnostics]
    assert str(VALUE_BUDGET) in str(skill.diagnostics[-1])


def test_first_paragraph_cuts_long_text() -> None:
    found = first_paragraph("word " * 400)
    assert len(found) <= 505 and found.endswith(" ...")


# -- files ----------------------------------------------------------------------------


def test_parse_skill_reads_a_file(tmp_path: Path) -> None:
    path = write(tmp_path, "---\nname: x\ndescription: d\n---\n")
    assert parse_skill(path).path == path


def failure(path: Path) -> str:
    with pytest.raises(SkillFileError) as info:
        parse_skill(path)
    assert str(path) in str(info.value)
    return info.value.reason


def test_binary_file_is_skipped_with_a_reason(tmp_path: Path) -> None:
    reason = failure(write(tmp_path, b"---\nname: x\n\x00\x01\x02binary"))
    assert "binary" in reason and "offset 12" in reason


def test_invalid_utf8_is_skipped_with_the_fix(tmp_path: Path) -> None:
    reason = failure(write(tmp_path, b"---\nname: caf\xe9\n---\n"))
    assert "not valid UTF-8" in reason and "0xe9" in reason and "iconv" in reason


def test_utf16_is_named(tmp_path: Path) -> None:
    reason = failure(write(tmp_path, "---\nname: x\n---\n".encode("utf-16")))
    assert "UTF-16" in reason


def test_empty_file(tmp_path: Path) -> None:
    assert "empty" in failure(write(tmp_path, "\n  \n"))


def test_directory_named_skill_md(tmp_path: Path) -> None:
    path = tmp_path / "x" / "SKILL.md"
    path.mkdir(parents=True)
    assert "is a directory" in failure(path)


def test_broken_symlink(tmp_path: Path) -> None:
    path = tmp_path / "SKILL.md"
    path.symlink_to(tmp_path / "gone.md")
    assert "broken symlink" in failure(path)


def test_symlink_loop(tmp_path: Path) -> None:
    path = tmp_path / "SKILL.md"
    path.symlink_to(path)
    assert "symlink loop" in failure(path)


def test_vanished_file(tmp_path: Path) -> None:
    assert "disappeared" in failure(tmp_path / "SKILL.md")


def test_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path, "---\nname: x\n---\n")
    path.chmod(0)
    code = (
        "import sys; from pathlib import Path; from heron.skills.parser import parse_skill, "
        "SkillFileError\ntry:\n    parse_skill(Path(sys.argv[1]))\n"
        "except SkillFileError as exc:\n    print(exc.reason)"
    )
    # Root reads whatever the mode says: the case runs without that power.
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    try:
        done = subprocess.run(
            [*(prefix if os.geteuid() == 0 else []), sys.executable, "-c", code, str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        path.chmod(0o644)
    assert "permission denied" in done.stdout, done


def test_unreadable_file_reason() -> None:
    # As root chmod 000 does not stop reads (see the test above); the reason is built
    # from the OSError that open() raises for everyone else.
    denied = PermissionError(errno.EACCES, "Permission denied")
    assert "permission denied; make it readable" in _os_reason(Path("/x"), denied)


def test_a_10_mb_file_is_read_from_its_head(tmp_path: Path) -> None:
    # The cut at MAX_BYTES falls inside a two-byte character: it must not fail as bad UTF-8.
    head = "---\nname: big\ndescription: A very long skill.\n---\n"
    filler = "x" * (MAX_BYTES - len(head) - 1) + "é" * (5 * 2**20)
    path = write(tmp_path, head + filler)
    assert path.stat().st_size > 10 * 10**6
    skill = parse_skill(path)
    assert (skill.name, skill.description) == ("big", "A very long skill.")
    assert [d.code for d in skill.diagnostics] == ["truncated"]
    assert "11.0 MiB" in skill.diagnostics[0].message
    assert len(skill.body) < MAX_BYTES
