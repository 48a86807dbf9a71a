"""Re-rankers: the default features, and the remote client against a loopback server
speaking the TEI and Cohere/Infinity ``/rerank`` wire formats, errors included."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from heron.errors import ConfigError, ModelError, RemoteModelError
from heron.libraries import FeatureReranker, Reranker, load_reranker
from heron.libraries.rerank_remote import RemoteReranker
from heron.settings import LibrarySettings
from heron.store import Hit


def hit(text: str, score: float, title: str = "") -> Hit:
    return Hit(text, score, text, {"title": title, "heading": ""}, 1)


class _Rerank(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/rerank" or body.get("model") == "fail":
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"boom")
            return
        texts = body.get("texts") or body["documents"]
        # Relevance: the number of query words in the text.
        words = set(body["query"].split())
        scores = [len(words & set(t.split())) for t in texts]
        if "texts" in body:  # TEI: a list, best first
            answer = [{"index": i, "score": s} for i, s in enumerate(scores)]
            answer.sort(key=lambda x: -x["score"])
        else:  # Cohere / Infinity
            answer = {"results": [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Rerank)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_feature_reranker_rewards_covering_every_term() -> None:
    hits = [hit("pod pod pod pod", 1.0), hit("pod restart policy", 0.9, title="Restart policy")]
    scores = FeatureReranker().rerank("pod restart policy", hits)
    assert scores.dtype == np.float32 and scores[1] > scores[0]
    assert isinstance(FeatureReranker(), Reranker)


@pytest.mark.parametrize("model", [None, "bge-reranker"])
def test_remote_reranker_formats(server: str, model: str | None) -> None:
    reranker = RemoteReranker(server, model=model)
    scores = reranker.rerank("a b c", [hit("a", 0), hit("a b c", 0), hit("x", 0)])
    assert scores.tolist() == [1.0, 3.0, 0.0]


def test_remote_reranker_errors_say_what_to_do(server: str) -> None:
    with pytest.raises(RemoteModelError, match="answered 500"):
        RemoteReranker(server, model="fail").rerank("q", [hit("a", 0)])
    with pytest.raises(RemoteModelError, match="HERON_LIBRARY_RERANKER=default"):
        RemoteReranker("http://127.0.0.1:9", timeout=2).rerank("q", [hit("a", 0)])


def test_load_reranker_from_settings(tmp_path: Path) -> None:
    assert isinstance(load_reranker(LibrarySettings()), FeatureReranker)
    assert load_reranker(LibrarySettings(reranker="none")) is None
    with pytest.raises(ConfigError, match="HERON_LIBRARY_RERANK_MODEL"):
        load_reranker(LibrarySettings(reranker="onnx"))
    with pytest.raises(ModelError, match=r"tokenizer\.json"):
        load_reranker(LibrarySettings(reranker="onnx", rerank_model=tmp_path / "m.onnx"))
    with pytest.raises(ConfigError, match="Choose from: default, none, onnx, remote"):
        load_reranker(LibrarySettings(reranker="magic"))
