"""Each process-global workaround in ``heron._compat`` still holds where it is needed.

The import-order checks run in a fresh interpreter: what they guard happens once per
process, and a failure there is a crash (SIGSEGV), not an exception.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from heron import _compat
from heron.settings import Settings


def run_fresh(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``code`` in a new interpreter (this one's), output captured."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_onnxruntime_imports_after_heron_store_opens_an_hnsw_index() -> None:
    # The order the server meets: a store with an HNSW graph first, then the embedder's
    # onnxruntime. With usearch loaded first this process would die with SIGSEGV.
    done = run_fresh(
        """
        import sys
        from heron.store.vectors import HnswIndex
        HnswIndex(4)
        assert "usearch.index" in sys.modules
        import onnxruntime
        onnxruntime.get_available_providers()
        print("imported")
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "imported"


def test_onnxruntime_is_loaded_before_usearch() -> None:
    done = run_fresh(
        """
        import sys
        from heron.store.vectors import HnswIndex
        order = []

        class Recorder:
            def find_spec(self, name, path=None, target=None):
                if name in ("onnxruntime", "usearch"):
                    order.append(name)
                return None

        sys.meta_path.insert(0, Recorder())
        HnswIndex(4)
        print(",".join(order))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "onnxruntime,usearch"


def loaded_llama(env_value: str | None) -> str:
    """``OMP_WAIT_POLICY`` as seen when ``llama_cpp`` is first imported by a local model
    load in a fresh process (``env_value`` set beforehand, or unset)."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if env_value is not None:
        env["OMP_WAIT_POLICY"] = env_value
    done = run_fresh(
        """
        import os, sys
        seen = []

        class Recorder:
            def find_spec(self, name, path=None, target=None):
                if name == "llama_cpp" and not seen:
                    seen.append(os.environ.get("OMP_WAIT_POLICY", "<unset>"))
                return None

        sys.meta_path.insert(0, Recorder())
        from heron.llm import local
        from heron.settings import Settings
        path = local.bundled_model_path(Settings().models_dir)
        local._llama(path, "local", vocab_only=True, verbose=False)
        print(seen[0])
        """,
        env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_omp_wait_policy_is_passive_before_llama_cpp_loads() -> None:
    assert loaded_llama(None) == "PASSIVE"


def test_omp_wait_policy_set_by_the_user_is_kept() -> None:
    assert loaded_llama("ACTIVE") == "ACTIVE"


def test_llama_default_params_patch_turns_off_extra_buffers_and_is_undone() -> None:
    from llama_cpp import llama_cpp as capi

    original = capi.llama_model_default_params
    assert original().use_extra_bufts  # llama.cpp's own default, which faults under AMX
    with _compat.llama_without_amx(capi, amx=True):
        assert capi.llama_model_default_params().use_extra_bufts is False
    assert capi.llama_model_default_params is original


def test_llama_default_params_are_untouched_without_amx() -> None:
    capi = SimpleNamespace(llama_model_default_params=lambda: SimpleNamespace(use_extra_bufts=True))
    original = capi.llama_model_default_params
    with _compat.llama_without_amx(capi, amx=False):
        assert capi.llama_model_default_params is original


def test_amx_is_read_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("flags\t: fpu sse2 avx512f amx_bf16 amx_tile amx_int8\n")
    assert _compat.cpu_has_amx(cpuinfo)
    cpuinfo.write_text("flags\t: fpu sse2 avx2\n")
    assert not _compat.cpu_has_amx(cpuinfo)
    assert not _compat.cpu_has_amx(tmp_path / "missing")


def test_local_model_loads_inside_the_patch(monkeypatch: pytest.MonkeyPatch) -> None:
    from heron.llm import local

    patched: list[bool] = []
    real = _compat.llama_without_amx

    @contextmanager
    def recording(capi: Any) -> Iterator[None]:
        with real(capi, amx=True):
            patched.append(capi.llama_model_default_params().use_extra_bufts is False)
            yield

    monkeypatch.setattr(local, "llama_without_amx", recording)
    vocab = local._llama(
        local.bundled_model_path(Settings().models_dir), "local", vocab_only=True, verbose=False
    )
    vocab.close()
    assert patched == [True]
