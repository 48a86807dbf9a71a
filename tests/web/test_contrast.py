"""The page's colours meet WCAG AA contrast (4.5:1 for text) in every pair it uses, in
the light palette and in the dark one (``prefers-color-scheme: dark``)."""

from __future__ import annotations

import re

import pytest

from heron.server.web.pages import STATIC

#: (text, background) pairs the stylesheet puts together.
PAIRS = [("fg", "bg"), ("muted", "bg"), ("accent", "bg"), ("ok", "bg"), ("bad", "bg"),
         ("warn", "bg"), ("fg", "soft"), ("muted", "soft"), ("accent", "soft"), ("bad", "soft"),
         ("onaccent", "accent"), ("bg", "bad"), ("fg", "okbg"), ("fg", "badbg"), ("fg", "warnbg"),
         ("muted", "badbg"), ("muted", "warnbg"), ("bad", "badbg"), ("warn", "warnbg"),
         ("accent", "warnbg"), ("accent", "badbg")]  # fmt: skip
NAMES = {"fg", "bg", "muted", "accent", "onaccent", "ok", "bad", "warn", "soft", "okbg", "badbg",
         "warnbg"}  # fmt: skip


def luminance(hex_colour: str) -> float:
    value = hex_colour.lstrip("#")
    if len(value) == 3:
        value = "".join(c * 2 for c in value)
    channels = [int(value[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def palettes() -> dict[str, dict[str, str]]:
    css = (STATIC / "heron.css").read_text()
    light, dark = css.split("@media (prefers-color-scheme: dark)", 1)
    dark = dark.split("}", 1)[0]
    colour = r"--([a-z]+):\s*(#[0-9a-fA-F]{3,6})"
    return {"light": dict(re.findall(colour, light)), "dark": dict(re.findall(colour, dark))}


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_text_colour_pair_meets_aa(scheme: str) -> None:
    palette = palettes()[scheme]
    assert set(palette) >= NAMES, NAMES - set(palette)
    for text, background in PAIRS:
        light, dark = sorted(
            (luminance(palette[text]), luminance(palette[background])), reverse=True
        )
        ratio = (light + 0.05) / (dark + 0.05)
        assert ratio >= 4.5, (scheme, text, background, round(ratio, 2))


def test_focus_is_visible() -> None:
    assert ":focus-visible { outline: 3px solid" in (STATIC / "heron.css").read_text()
