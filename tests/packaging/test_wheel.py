"""The release as a user gets it: sdist and wheel built from this tree, the wheel
installed alone (the core, no extra) into a fresh venv from wheels only, with no
compiler on the PATH, then ``heron --version`` and ``heron doctor --offline`` run there,
and a new home's ``heron ask "What is Heron?"`` cites the docs the wheel carries.

uv builds and installs (it caches what it downloads: after the first run this needs
no network); the install runs under constraints.txt, as scripts/setup does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

import pytest

from heron import __version__
from heron.extras import EXTRAS
from heron.libraries.shipped import FOLDER
from heron.settings import Settings
from tests.ci import missing
from tests.packaging.conftest import ROOT


def run(*args: str | Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=timeout, env=env
    )
    assert done.returncode == 0, f"{args}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def uv() -> str:
    """The uv program itself: ``python -m uv`` would put its packages into this test's own
    interpreter, whatever ``--python`` names."""
    fix = "install the dev extra: scripts/setup (pip install -e '.[dev]')"
    try:
        from uv import find_uv_bin  # the dev extra's: missing, these tests say so
    except ImportError:
        missing("uv, which builds and installs the wheel, is not installed", fix)
    try:
        return find_uv_bin()
    except FileNotFoundError:
        missing("the uv package is installed without its program", fix)


@pytest.fixture(scope="module")
def wheel(uv: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    run(uv, "build", "--quiet", "--out-dir", dist, ROOT)
    (found,) = dist.glob("heron-*.whl")
    return found


@dataclass(frozen=True)
class Core:
    """The wheel installed alone (no extra) into a fresh venv, once for the module."""

    venv: Path
    seconds: float  # the install's wall time
    env: dict[str, str]  # the venv's own programs alone on the PATH


@pytest.fixture(scope="module")
def core(uv: str, wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Core:
    venv = tmp_path_factory.mktemp("core") / "venv"
    run(uv, "venv", "--quiet", "--python", sys.executable, venv)
    # The venv's own programs alone on the PATH: no compiler for a source build to find.
    env = {**os.environ, "PATH": str(venv / "bin")}
    started = time.perf_counter()
    constraints = ROOT / "constraints.txt"
    pip = (uv, "pip", "install", "--quiet", "--python", venv / "bin" / "python", "--no-build")
    run(*pip, "-c", constraints, wheel, env=env)
    return Core(venv, time.perf_counter() - started, env)


def test_the_wheel_carries_its_metadata_license_and_type_marker(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(info).decode())
    assert "heron/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    # package data rides along: the page's templates, scripts, stylesheet and catalogues
    web = "heron/server/web"
    assert {f"{web}/templates/base.html", f"{web}/static/heron.css"} <= set(names)
    assert {f"{web}/static/chat.js", f"{web}/messages/en.json"} <= set(names)
    assert metadata["License-Expression"] == "Apache-2.0"
    assert set(metadata.get_all("Provides-Extra")) == {*EXTRAS, "all", "dev"}
    assert "Typing :: Typed" in metadata.get_all("Classifier")


def test_the_wheel_and_the_sdist_carry_heron_docs_with_their_vectors(wheel: Path) -> None:
    """setup.py maps docs/ to the package ``heron._docs``: every page and every file of
    its shipped vectors, byte for byte, in the wheel there and in the sdist as docs/."""
    docs = ROOT / "docs"
    carried = sorted([*docs.glob("*.md"), *(docs / FOLDER).iterdir()])
    assert (docs / FOLDER / "manifest.json") in carried and len(carried) > 4
    with zipfile.ZipFile(wheel) as archive:
        for path in carried:
            name = f"heron/_docs/{path.relative_to(docs).as_posix()}"
            assert archive.read(name) == path.read_bytes(), name
    (sdist,) = wheel.parent.glob("heron-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = set(archive.getnames())
    for path in carried:
        assert f"heron-{__version__}/docs/{path.relative_to(docs).as_posix()}" in names, path


def test_a_new_home_of_the_installed_wheel_cites_heron_docs(core: Core, tmp_path: Path) -> None:
    """``pip install heron``, then a new home's first question about Heron: answered from
    the docs inside the installed package, their shipped vectors loaded (a built-in
    library is loaded from them only when every page is current, nothing embedded), with no
    checkout and no ``heron index``. The core's embedder is MiniLM (no e5 extra) and its
    answer extractive (no local model)."""
    env = {
        **core.env,
        "HERON_HOME": str(tmp_path / "home"),
        "HERON_MODELS_DIR": str(Settings().models_dir),  # the tokenizer scripts/setup fetched
    }
    env.pop("HERON_CONFIG", None)
    answer = json.loads(
        run(core.venv / "bin" / "heron", "ask", "What is Heron?", "--json", env=env)
    )
    # -I: the installed package, not the checkout a bare -c would put first from the cwd.
    package = run(core.venv / "bin" / "python", "-I", "-c", "import heron; print(heron.__file__)")
    docs = Path(package.strip()).parent / "_docs"
    # None: the docs did not load from their vectors, which are stale once docs/ or the
    # index changes (tests/libraries/test_shipped_vectors.py names the fix).
    assert answer["citations"], f"no citation: run scripts/ship-vectors? {answer}"
    for citation in answer["citations"]:
        assert citation["library"] == "heron", citation
        assert Path(citation["url_or_path"]).parent == docs, citation
    assert "self-hosted" in answer["answer"], answer


def test_the_core_installs_from_wheels_and_runs(uv: str, core: Core, tmp_path: Path) -> None:
    venv, env = core.venv, core.env
    assert core.seconds < 60, f"the core took {core.seconds:.0f} s to install"
    installed = run(uv, "pip", "freeze", "--python", venv / "bin" / "python").lower()
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


def test_the_lowest_allowed_versions_install_and_run(uv: str, wheel: Path, tmp_path: Path) -> None:
    """The CI step for the floors: every requirement of the core at the lowest version
    pyproject.toml allows (uv's lowest-direct: what those pull in resolves to its newest),
    from wheels only, then the wheel over them and a smoke run of the main job: a
    library added, indexed, searched and answered from. scripts/lowest goes further (the
    e5 and postgres extras, and those libraries' own tests)."""
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    run(uv, "venv", "--quiet", "--python", sys.executable, venv)
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}"}
    pip = (uv, "pip", "install", "--quiet", "--python", python, "--no-build")
    run(*pip, "--resolution", "lowest-direct", "-r", ROOT / "pyproject.toml", env=env)
    run(*pip, "--no-deps", wheel, env=env)
    installed = run(uv, "pip", "freeze", "--python", python).lower()
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


def test_the_web_extra_installs_what_fetch_url_imports(
    uv: str, wheel: Path, tmp_path: Path
) -> None:
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
    run(uv, "venv", "--quiet", "--python", sys.executable, venv)
    env = {**os.environ, "PATH": str(venv / "bin")}
    constraints = ROOT / "constraints.txt"
    pip = (uv, "pip", "install", "--quiet", "--python", python, "--no-build", "-c", constraints)
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


def test_the_docs_extra_installs_what_the_readers_import(
    uv: str, wheel: Path, tmp_path: Path
) -> None:
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
    run(uv, "venv", "--quiet", "--python", sys.executable, venv)
    env = {**os.environ, "PATH": str(venv / "bin")}
    constraints = ROOT / "constraints.txt"
    pip = (uv, "pip", "install", "--quiet", "--python", python, "--no-build", "-c", constraints)
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
