"""The package import graph keeps its layers: a sideways or upward import fails here.

Every module under ``heron/`` is parsed (nothing is imported), and every ``import`` in it
counts: at the top, inside functions, under ``if TYPE_CHECKING:``. Each import is mapped
from the module's subpackage to the imported one, and must go down the table:

    interfaces   cli, server, ops                may import everything below
    wiring       wiring                          the composition root: builds the agent,
                                                 the tools and the job runner out of the
                                                 capabilities, for the interfaces
    agent        agent, tenancy                  the agent over what it is handed;
                                                 tenancy: what a context owns across them
    capabilities libraries, skills, tools, llm,  import none of each other
                 jobs, interventions
    foundation   db, store, embed, core,         import no capability (nor anything above)
                 programs, settings, errors, ...

``heron/ops`` (doctor, watchdog, metrics) sits with the interfaces: like the CLI it looks
at every capability. The page (``heron/server/web``) is a part of the server. A package
may import itself; ``heron/__init__.py`` and ``heron/__main__.py`` start the CLI and are
left out.

A module of Heron is never imported by name (``importlib.import_module("heron.x")``,
``__import__``): such an import is invisible to the table, so it is refused wherever it
stands, as is one whose name is computed and so cannot be checked.

Nor do modules import each other in a circle, inside a layer or a package too: drawn as a
graph of modules (an arrow per import, wherever it stands), the house has no cycle. A
circle hides which module is the lower one; break it by moving the shared name down, or
by handing it in. Drawn package by package, it has none either: the table does not order
the foundation's packages, so there a package that imports another is the higher one,
and nothing the lower one uses may import the higher back (``settings`` uses ``core``,
``core`` uses ``programs``: ``programs`` is handed the setting it needs).

``bench/`` is held to the same: a benchmark may import any module of Heron, but its
modules import each other in no circle (a helper two of them share goes to
``bench/common.py``), and no module of Heron imports ``bench`` or ``tests``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import pytest

HERON = Path(__file__).resolve().parent.parent / "heron"
BENCH = HERON.parent / "bench"
#: The checkout's other packages: they may use Heron, never the other way round.
OUTSIDE = {"bench", "tests"}

INTERFACES = {"cli", "server", "ops"}
WIRING = {"wiring"}
AGENT = {"agent", "tenancy"}
CAPABILITIES = {"libraries", "skills", "tools", "llm", "jobs", "interventions"}
FOUNDATION = {
    "db",
    "store",
    "embed",
    "core",
    "programs",
    "settings",
    "errors",
    "redact",
    "notify",
    "private",
    "yamlsafe",
    "_compat",
    "about",
    "extras",
    "modelfiles",
    "resource",
    "keys",
    "language",
    "translate",
    "discovery",
}
LAYERS = {
    **dict.fromkeys(INTERFACES, 4),
    **dict.fromkeys(WIRING, 3),
    **dict.fromkeys(AGENT, 2),
    **dict.fromkeys(CAPABILITIES, 1),
    **dict.fromkeys(FOUNDATION, 0),
}
#: ``heron`` itself (its ``__version__``) may be imported from anywhere.
ROOT = "heron"
ENTRY_POINTS = {"__init__", "__main__"}
#: Functions that import a module named by a string, out of the table's sight.
DYNAMIC_IMPORTS = {"import_module", "__import__"}


def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def subpackage(parts: tuple[str, ...]) -> str:
    """``("heron", "tools", "router")`` -> ``tools``; a module of ``heron/`` is its own."""
    return parts[1] if len(parts) > 1 else ROOT


def module_parts(path: Path, root: Path = HERON) -> tuple[str, ...]:
    """``heron/tools/router.py`` -> ``("heron", "tools", "router")``; a package's
    ``__init__.py`` is the package."""
    rel = path.relative_to(root.parent).with_suffix("")
    return rel.parts[:-1] if rel.name == "__init__" else rel.parts


@cache
def imported(path: Path, root: Path = HERON) -> tuple[tuple[int, str], ...]:
    """``(line, dotted name)`` of everything ``path`` (a module of the package ``root``)
    imports, wherever it stands; a relative import is resolved against the module's
    package, and ``from root.x import y`` names ``root.x.y`` when ``y`` is a module."""
    tree = parsed(path)
    parts = module_parts(path, root)
    package = parts if path.name == "__init__.py" else parts[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            # from heron.x import y: y is a module of heron.x, or a name in it
            found += [
                (node.lineno, f"{name}.{a.name}" if _is_module(root, name, a.name) else name)
                for a in node.names
            ]
    return tuple(found)


def imports(path: Path, root: Path = HERON) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of every module of ``root``'s own package (``heron``,
    ``bench``) that ``path`` imports."""
    return [(line, name) for line, name in imported(path, root) if name.split(".")[0] == root.name]


def imports_by_name(path: Path) -> list[tuple[int, str]]:
    """``(line, name)`` of every ``import_module(...)`` or ``__import__(...)`` call in
    ``path`` that names a module of Heron or of the checkout (``bench``, ``tests``), or
    whose name is not a string literal (``?``)."""
    tree = parsed(path)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if called not in DYNAMIC_IMPORTS:
            continue
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            found.append((node.lineno, "?"))
        elif first.value.split(".")[0] in {ROOT, *OUTSIDE}:
            found.append((node.lineno, first.value))
    return found


@cache
def _is_module(root: Path, package: str, name: str) -> bool:
    """``package.name`` is a module of the package ``root`` (``package`` dotted, from
    ``root``'s name: ``heron.tools``)."""
    parts = package.split(".")
    if parts[0] != root.name:
        return False
    folder = root.joinpath(*parts[1:])
    return (folder / name).is_dir() or (folder / f"{name}.py").is_file()


def refused(source: str, target: str) -> str | None:
    """Why ``source`` may not import ``target`` (subpackage names), or ``None``."""
    if source == target or target == ROOT:
        return None
    if source not in LAYERS or target not in LAYERS:
        unknown = source if source not in LAYERS else target
        return f"heron/{unknown} is in no layer of tests/test_imports.py; add it to the table"
    if LAYERS[target] > LAYERS[source]:
        return "imports upward; hand it down as an object or a callable instead"
    if LAYERS[source] == LAYERS[target] == LAYERS["jobs"]:
        return "a capability imports another; wire them in heron/wiring/ instead"
    return None  # interfaces use one another, foundation modules build on one another


def modules() -> list[Path]:
    paths = sorted(HERON.rglob("*.py"))
    return [p for p in paths if not (p.parent == HERON and p.stem in ENTRY_POINTS)]


def bench_modules() -> list[Path]:
    return sorted(BENCH.rglob("*.py"))


def violations() -> list[str]:
    found = []
    for path in modules():
        source = subpackage(module_parts(path))
        for line, name in imports(path):
            target = subpackage(tuple(name.split(".")))
            why = refused(source, target)
            if why is not None:
                rel = path.relative_to(HERON.parent)
                found.append(f"{rel}:{line}: import {name} ({source} -> {target}): {why}")
    return found


def graph(paths: Iterable[Path], root: Path = HERON) -> dict[str, set[str]]:
    """Each module's dotted name -> the modules of ``paths`` it imports (itself left out)."""
    names = {".".join(module_parts(p, root)): p for p in paths}
    return {
        name: {target for _, target in imports(path, root) if target in names} - {name}
        for name, path in names.items()
    }


def package_graph(paths: Iterable[Path]) -> dict[str, set[str]]:
    """Each subpackage of Heron -> the other subpackages its modules import."""
    edges: dict[str, set[str]] = {}
    for path in paths:
        source = subpackage(module_parts(path))
        targets = {subpackage(tuple(name.split("."))) for _, name in imports(path)}
        edges.setdefault(source, set()).update(targets - {source, ROOT})
    for targets in list(edges.values()):
        for target in targets:
            edges.setdefault(target, set())
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The circles of ``edges``: each strongly connected set of two or more modules,
    sorted (Tarjan's algorithm, iterative, so no depth can exhaust the stack)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = stack[stack.index(node) :]
                    del stack[stack.index(node) :]
                    if len(group) > 1:
                        found.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(sorted(edges[child]))))
            elif child in stack:
                low[node] = min(low[node], index[child])
    return sorted(found)


def test_the_import_graph_keeps_its_layers() -> None:
    problems = violations()
    assert not problems, "\n" + "\n".join(problems)


def test_no_module_of_heron_is_imported_by_name() -> None:
    found = [
        f"{path.relative_to(HERON.parent)}:{line}: imports {name!r} by name; write an import "
        "statement (the layer table checks it), or hand the object down from the wiring"
        for path in modules()
        for line, name in imports_by_name(path)
    ]
    assert not found, "\n" + "\n".join(found)


def circles(edges: dict[str, set[str]]) -> list[str]:
    """Each circle of ``edges`` as one line: its members, then the arrows between them."""
    return [
        " <-> ".join(group)
        + ": "
        + "; ".join(f"{a} -> {b}" for a in group for b in sorted(edges[a]) if b in group)
        for group in cycles(edges)
    ]


def test_the_import_graph_has_no_cycle() -> None:
    found = circles(graph(modules()))
    assert not found, "\n" + "\n".join(found)


def test_the_packages_import_each_other_in_no_circle() -> None:
    found = circles(package_graph(modules()))
    assert not found, "\n" + "\n".join(found)


def test_the_benchmarks_import_each_other_in_no_circle() -> None:
    found = circles(graph(bench_modules(), BENCH))
    assert not found, "\n" + "\n".join(found)


def test_heron_imports_neither_bench_nor_tests() -> None:
    found = [
        f"{path.relative_to(HERON.parent)}:{line}: import {name}: Heron is installed without "
        "them; move what it needs into heron/"
        for path in modules()
        for line, name in imported(path)
        if name.split(".")[0] in OUTSIDE
    ]
    assert not found, "\n" + "\n".join(found)


def test_no_module_of_bench_is_imported_by_name() -> None:
    found = [
        f"{path.relative_to(BENCH.parent)}:{line}: imports {name!r} by name; write an import "
        "statement, so that the circle test sees it"
        for path in bench_modules()
        for line, name in imports_by_name(path)
    ]
    assert not found, "\n" + "\n".join(found)


def test_a_cycle_is_found_whatever_its_length(tmp_path: Path) -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    package = tmp_path / "heron" / "jobs"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "one.py").write_text("def f():\n    from heron.jobs import two\n")
    (package / "two.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from heron.jobs.one import f\n"
    )
    found = cycles(graph(sorted(tmp_path.rglob("*.py")), tmp_path / "heron"))
    assert found == [["heron.jobs.one", "heron.jobs.two"]]


def test_a_circle_of_benchmarks_or_of_packages_is_found(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "__init__.py").write_text("")
    (bench / "e5.py").write_text("import heron.embed\n\ndef f():\n    from bench import multi\n")
    (bench / "multi.py").write_text("from bench.e5 import f\nfrom heron.settings import S\n")
    found = cycles(graph(sorted(bench.rglob("*.py")), bench))
    assert found == [["bench.e5", "bench.multi"]]
    assert cycles({"settings": {"core"}, "core": {"programs"}, "programs": {"settings"}}) == [
        ["core", "programs", "settings"]
    ]


def test_every_subpackage_is_in_a_layer() -> None:
    names = {subpackage(module_parts(p)) for p in modules()} - {ROOT}
    assert not names - set(LAYERS), f"not in the table: {sorted(names - set(LAYERS))}"


@pytest.mark.parametrize(
    ("source", "target", "allowed"),
    [
        ("cli", "agent", True),
        ("ops", "jobs", True),
        ("agent", "tools", True),
        ("tools", "core", True),
        ("store", "embed", True),
        ("llm", "tools", False),
        ("jobs", "libraries", False),
        ("tools", "skills", False),
        ("store", "libraries", False),
        ("embed", "jobs", False),
        ("core", "tools", False),
        ("libraries", "agent", False),
        ("agent", "server", False),
        ("cli", "wiring", True),
        ("server", "wiring", True),
        ("ops", "wiring", True),
        ("wiring", "agent", True),
        ("wiring", "tools", True),
        ("wiring", "jobs", True),
        ("wiring", "settings", True),
        ("wiring", "server", False),
        ("wiring", "cli", False),
        ("agent", "wiring", False),
        ("tools", "wiring", False),
        ("core", "wiring", False),
    ],
)
def test_the_table_says_which_way_imports_go(source: str, target: str, allowed: bool) -> None:
    assert (refused(source, target) is None) is allowed


def test_a_sideways_import_is_found_with_its_line(tmp_path: Path) -> None:
    module = tmp_path / "heron" / "jobs" / "bad.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "from heron.core.tools import Tool\n\n\ndef f():\n    from heron.llm import Broker\n"
    )
    found = imports(module, tmp_path / "heron")
    assert found == [(1, "heron.core.tools"), (5, "heron.llm")]
    assert [refused("jobs", subpackage(tuple(n.split(".")))) is None for _, n in found] == [
        True,
        False,
    ]


def test_an_import_by_name_is_found_with_its_line(tmp_path: Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text(
        "import importlib\n"
        "importlib.import_module('heron.wiring')\n"
        "__import__('heron.llm')\n"
        "importlib.import_module(name)\n"
        "importlib.import_module('yaml')\n"
    )
    assert imports_by_name(module) == [(2, "heron.wiring"), (3, "heron.llm"), (4, "?")]
