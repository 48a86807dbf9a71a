"""The release as a user gets it: sdist and wheel built from this tree, the wheel
installed alone (the core, no extra) into a fresh venv from wheels only, with no
compiler on the PATH, then ``heron --version`` and ``heron doctor --offline`` run there.

uv builds and installs (it caches what it downloads: after the first run this needs
no network); the install runs under constraints.txt, as scripts/setup does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from uv import find_uv_bin

from heron import __version__
from heron.extras import EXTRAS
from heron.settings import Settings
from tests.packaging.conftest import ROOT

#: The uv program itself: ``python -m uv`` would put its packages into this test's own
#: interpreter, whatever ``--python`` names.
UV = find_uv_bin()


def run(*args: str | Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=timeout, env=env
    )
    assert done.returncode == 0, f"{args}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    run(UV, "build", "--quiet", "--out-dir", dist, ROOT)
    (found,) = dist.glob("heron-*.whl")
    return found


def test_the_wheel_carries_its_metadata_license_and_type_marker(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(info).decode())
    assert "heron/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "heron/web/templates/base.html" in names  # package data rides along
    assert metadata["License-Expression"] == "Apache-2.0"
    assert set(metadata.get_all("Provides-Extra")) == {*EXTRAS, "all", "dev"}
    assert "Typing :: Typed" in metadata.get_all("Classifier")


def test_the_core_installs_from_wheels_and_runs(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    run(UV, "venv", "--quiet", "--python", sys.executable, venv)
    # The venv's own programs alone on the PATH: no compiler for a source build to find.
    env = {**os.environ, "PATH": str(venv / "bin")}
    started = time.perf_counter()
    constraints = ROOT / "constraints.txt"
    pip = (UV, "pip", "install", "--quiet", "--python", python, "--no-build", "-c", constraints)
    run(*pip, wheel, env=env)
    seconds = time.perf_counter() - started
    assert seconds < 60, f"the core took {seconds:.0f} s to install"
    installed = run(UV, "pip", "freeze", "--python", python).lower()
    for extra in EXTRAS.values():
        for package in extra.packages:
            assert f"\n{package}==" not in f"\n{installed}", f"{package} came with the core"

    home = {**env, "HERON_HOME": str(tmp_path / "home"), "HERON_MODELS_DIR": str(tmp_path / "m")}
    assert run(venv / "bin" / "heron", "--version", env=home).startswith(f"heron {__version__} ")
    done = subprocess.run(
        [venv / "bin" / "heron", "doctor", "--offline", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=home,
    )
    report = json.loads(done.stdout)  # a report, not a traceback, though much is missing
    checks = {c["name"]: c for c in report["checks"]}
    assert done.returncode == 1 and not report["ok"]
    assert checks["extras"]["fix"] == "pip install 'heron[local]'"  # the default model
    assert not any(c["detail"].startswith("unexpected") for c in checks.values()), checks


def test_the_lowest_allowed_versions_install_and_run(wheel: Path, tmp_path: Path) -> None:
    """The CI step for the floors: every requirement of the core at the lowest version
    pyproject.toml allows (uv's lowest-direct: what those pull in resolves to its newest),
    from wheels only, then the wheel over them and a smoke run of the main job: a
    library added, indexed, searched and answered from. scripts/lowest goes further (the
    e5 and postgres extras, and those libraries' own tests)."""
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    run(UV, "venv", "--quiet", "--python", sys.executable, venv)
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}"}
    pip = (UV, "pip", "install", "--quiet", "--python", python, "--no-build")
    run(*pip, "--resolution", "lowest-direct", "-r", ROOT / "pyproject.toml", env=env)
    run(*pip, "--no-deps", wheel, env=env)
    installed = run(UV, "pip", "freeze", "--python", python).lower()
    assert "\napprise==2.0.0\n" in f"\n{installed}"  # the floors, not the newest
    assert "\nstarlette==1.7.0\n" in f"\n{installed}"

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "vpn.md").write_text("# VPN\n\nThe VPN password rotates every 90 days.\n")
    (docs / "lunch.md").write_text("# Lunch\n\nThe canteen opens at noon on weekdays.\n")
    home = {
        **env,
        "HERON_HOME": str(tmp_path / "home"),
        "HERON_MODELS_DIR": str(Settings().models_dir),  # the tokenizer scripts/setup fetched
    }
    heron = venv / "bin" / "heron"
    assert run(heron, "--version", env=home).startswith(f"heron {__version__} ")
    run(heron, "library", "add", "notes", docs, env=home)
    run(heron, "index", "notes", "--json", env=home)
    found = json.loads(
        run(heron, "search", "How often does the VPN password rotate?", "--json", env=home)
    )
    assert found[0]["page"] == "vpn", found
    answer = json.loads(
        run(
            heron,
            "ask",
            "When does the canteen open?",
            "--answer",
            "extractive",
            "--json",
            env=home,
        )
    )
    assert "noon" in answer["answer"], answer
    assert answer["citations"][0]["page"] == "lunch", answer


def test_the_web_extra_installs_what_fetch_url_imports(wheel: Path, tmp_path: Path) -> None:
    """``heron[web]`` in a fresh venv reads a page: trafilatura's justext imports
    ``lxml.html.clean``, which lxml 5.2 moved to ``lxml_html_clean``; an install without
    it could not import fetch_url's extractor (found by an attack run). The extra declares
    it, so no resolver leaves it out."""
    with zipfile.ZipFile(wheel) as archive:
        info = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        requires = Parser().parsestr(archive.read(info).decode()).get_all("Requires-Dist")
    assert 'lxml-html-clean>=0.1; extra == "web"' in requires
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    run(UV, "venv", "--quiet", "--python", sys.executable, venv)
    env = {**os.environ, "PATH": str(venv / "bin")}
    constraints = ROOT / "constraints.txt"
    pip = (UV, "pip", "install", "--quiet", "--python", python, "--no-build", "-c", constraints)
    run(*pip, f"heron[web] @ {wheel.as_uri()}", env=env)
    page = "<html><head><title>VPN</title></head><body><nav>Home | Help</nav><article>"
    page += "<h1>VPN</h1>" + "<p>The VPN password rotates every 90 days.</p>" * 5
    page += "</article></body></html>"
    code = (
        "import heron.tools.fetch, heron.extras, sys\n"
        "from heron.tools.extraction import to_markdown\n"
        "assert heron.extras.installed('web')\n"
        f"print(to_markdown({page!r}, 'https://example.org/vpn')[0])\n"
    )
    home = {**env, "HERON_HOME": str(tmp_path / "home")}
    out = run(python, "-c", code, env=home)
    assert "The VPN password rotates every 90 days." in out and "Home | Help" not in out


def test_the_docs_extra_installs_what_the_readers_import(wheel: Path, tmp_path: Path) -> None:
    """``heron[docs]`` in a fresh venv reads a PDF, a Word file, a deck, a workbook and
    an HTML page (made here by their own writers) into the Markdown Heron chunks."""
    from tests.libraries import documents  # the writers are this venv's, not the new one's

    files = tmp_path / "files"
    files.mkdir()
    made = {
        "manual.pdf": documents.pdf([["Install first."], ["2.1 Setup", "Run setup with sudo."]],
                                    outline=[("Setup", 2, 0)]),
        "guide.docx": documents.word(),
        "review.pptx": documents.slides(),
        "servers.xlsx": documents.workbook(),
        "backups.html": documents.HTML.encode(),
    }  # fmt: skip
    for name, data in made.items():
        (files / name).write_bytes(data)
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    run(UV, "venv", "--quiet", "--python", sys.executable, venv)
    env = {**os.environ, "PATH": str(venv / "bin")}
    constraints = ROOT / "constraints.txt"
    pip = (UV, "pip", "install", "--quiet", "--python", python, "--no-build", "-c", constraints)
    run(*pip, f"heron[docs] @ {wheel.as_uri()}", env=env)
    code = (
        "import sys, pathlib, heron.extras\n"
        "from heron.libraries.readers import format_of, read\n"
        "assert heron.extras.installed('docs')\n"
        "for path in sorted(pathlib.Path(sys.argv[1]).iterdir()):\n"
        "    doc = read(path.read_bytes(), format_of(path.name))\n"
        "    print(path.name, doc.pages[-1] if doc.pages else '-', *doc.lines, sep='\\n')\n"
    )
    home = {**env, "HERON_HOME": str(tmp_path / "home")}
    out = run(python, "-c", code, files, env=home).splitlines()
    assert out[out.index("manual.pdf") + 1] == "2"  # its last line is on page 2
    for line in ("# Setup", "## Who to ask", "## Revenue", "| web-0 | backend | eu-west |",
                 "## Restoring a snapshot {#restore}"):  # fmt: skip
        assert line in out, line
