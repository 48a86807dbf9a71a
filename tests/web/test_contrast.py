"""The page's colours meet WCAG AA contrast (4.5:1 for text) in every pair it uses."""

from __future__ import annotations

import re

from heron.web.pages import STATIC

#: (text, background) pairs the stylesheet puts together.
PAIRS = [("fg", "bg"), ("muted", "bg"), ("accent", "bg"), ("ok", "bg"), ("bad", "bg"),
         ("warn", "bg"), ("fg", "soft"), ("muted", "soft"), ("accent", "soft"),
         ("#fff", "accent"), ("#fff", "#767676")]  # fmt: skip


def luminance(hex_colour: str) -> float:
    value = hex_colour.lstrip("#")
    if len(value) == 3:
        value = "".join(c * 2 for c in value)
    channels = [int(value[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_every_text_colour_pair_meets_aa() -> None:
    css = (STATIC / "heron.css").read_text()
    palette = dict(re.findall(r"--([a-z]+):\s*(#[0-9a-fA-F]{3,6})", css))
    assert {"fg", "bg", "muted", "accent", "ok", "bad", "warn", "soft"} <= set(palette)
    for text, background in PAIRS:
        fg, bg = (palette.get(c, c) for c in (text, background))
        light, dark = sorted((luminance(fg), luminance(bg)), reverse=True)
        ratio = (light + 0.05) / (dark + 0.05)
        assert ratio >= 4.5, (text, background, round(ratio, 2))
    assert ":focus-visible { outline: 3px solid" in css  # focus is visible
