from __future__ import annotations

import subprocess
import sys

import heron.llm


def test_all_names_exist() -> None:
    for name in heron.llm.__all__:
        assert hasattr(heron.llm, name), name


def test_import_does_not_load_llama_cpp() -> None:
    """The local backend's driver loads only when a local model is called."""
    code = "import sys, heron.llm; print('llama_cpp' in sys.modules, 'llm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
