"""What pyproject.toml cannot say alone: the wheel carries Heron's docs/ as ``heron._docs``.

A wheel built from this tree (``uv build``, ``pip wheel .``) then holds ``heron/_docs/*.md``
and their shipped vectors (``heron/_docs/.heron-vectors/``), so an installed Heron cites its
own docs from a new home's first question with no checkout and no indexing
(``heron.libraries.config.heron_docs`` finds them there). Setuptools' ``package-dir`` maps a
package to a folder elsewhere in the tree, with no copy to keep in step and no build step
of our own; pyproject.toml's ``packages.find`` cannot add a package that no folder of that
name holds, so the package list is made here, the rest of the configuration stays there.
The sdist carries docs/ and this file, so a wheel built from the sdist has them too.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["heron*"]), "heron._docs"],
    package_dir={"heron._docs": "docs"},
)
