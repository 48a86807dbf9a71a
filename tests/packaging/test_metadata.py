"""pyproject.toml tells the truth: extras as ``heron.extras`` names them, every import
declared (deptry), every requirement pinned by constraints.txt within its bounds, the
license and the type marker shipped."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from heron.extras import EXTRAS
from tests.packaging.conftest import ROOT


def requirements(project: dict[str, Any]) -> list[Requirement]:
    extras = project["optional-dependencies"]
    listed = project["dependencies"] + [r for name in extras for r in extras[name]]
    return [r for r in map(Requirement, listed) if canonicalize_name(r.name) != "heron"]


def test_the_extras_are_the_ones_heron_names(project: dict[str, Any]) -> None:
    extras = project["optional-dependencies"]
    assert set(extras) == {*EXTRAS, "all", "dev"}
    for name, extra in EXTRAS.items():
        assert [Requirement(r).name for r in extras[name]] == list(extra.packages), name
    assert Requirement(extras["all"][0]).extras == set(EXTRAS)


def test_the_core_leaves_the_extras_out(project: dict[str, Any]) -> None:
    core = {canonicalize_name(Requirement(r).name) for r in project["dependencies"]}
    for extra in EXTRAS.values():
        assert not core & {canonicalize_name(p) for p in extra.packages}, extra.name


def test_every_import_is_declared_and_every_dependency_used() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deptry", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_constraints_pin_every_requirement_within_its_bounds(project: dict[str, Any]) -> None:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            pinned = Requirement(line)
            pins[canonicalize_name(pinned.name)] = str(pinned.specifier).removeprefix("==")
    for requirement in requirements(project):
        version = pins.get(canonicalize_name(requirement.name))
        assert version, f"{requirement.name} is not in constraints.txt: run scripts/constraints"
        assert requirement.specifier.contains(version), f"{requirement} excludes {version}"


def test_the_license_and_the_type_marker_ship() -> None:
    license_text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert (ROOT / "heron" / "py.typed").is_file()
