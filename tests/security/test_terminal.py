"""Text from data never drives a terminal: a notice, a page title or a tool's result may
hold ESC sequences (``\\x1bc`` resets the terminal, ``\\x1b]52;`` writes the clipboard);
every CLI printer shows them escaped (``heron.cli.output.shown``)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.text import Text

from heron.cli.app import app
from heron.cli.output import HeronConsole, print_json, say, shown, table
from heron.interventions import open_interventions
from heron.settings import Settings

#: A full reset, a clipboard write, CSI in its one-byte C1 form, a carriage return that
#: would overwrite the line, and a right-to-left override that reorders what is shown.
ATTACK = "\x1bc\x1b]52;c;ZXZpbA==\x07\x9b2J\rfake\u202eevil"
CONTROLS = ["\x1b", "\x07", "\x9b", "\r", "\u202e"]


def test_interventions_list_shows_escapes_not_controls(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    service = open_interventions(Settings())
    try:
        service.raise_("notice", "n1", "team", "warning", {"message": f"deploy {ATTACK} done"})
        service.wait()
    finally:
        service.close()
    with pytest.raises(SystemExit) as done:  # the real command, in process
        app(["interventions", "list"], prog_name="heron")
    printed = capsys.readouterr().out
    assert done.value.code == 0
    assert "deploy" in printed and "done" in printed
    for control in CONTROLS:
        assert control not in printed
    assert "\\x1bc" in printed and "\\x9b2J" in printed and "\\u202e" in printed


@pytest.mark.parametrize("terminal", [False, True])
def test_every_console_path_escapes_controls(terminal: bool) -> None:
    out = io.StringIO()
    console = HeronConsole(file=out, force_terminal=terminal, color_system="standard")
    console.print(f"[bold]title[/] {ATTACK}")  # markup around data
    console.print(Text(ATTACK, style="red"))  # a Text made elsewhere
    grid = table("cell")
    grid.add_row(ATTACK)
    console.print(grid)
    console.print_json(data={"text": ATTACK})  # rich's own JSON view
    written = out.getvalue()
    for control in CONTROLS[1:]:
        assert control not in written
    # On a terminal rich's own styles are ESC sequences; none of data's is left.
    styles_only = written.replace("\x1b[", "")
    assert "\x1bc" not in written and "\x1b]" not in written and "\x1b" not in styles_only
    assert written.count("\\x1bc") == 3 and "\\u001bc" in written  # JSON's own escape


def test_plain_prints_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    say(ATTACK)
    print_json({"text": ATTACK})
    out = capsys.readouterr().out
    for control in CONTROLS:
        assert control not in out
    line = out.splitlines()[-1]
    assert json.loads(line) == {"text": ATTACK}  # valid JSON, the text intact
    assert shown("a\tb\nc") == "a\tb\nc"  # layout stays
