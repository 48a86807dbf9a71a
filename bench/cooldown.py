"""A hung primary model with a healthy fallback, through the broker: what each request
costs with cooldowns (the default) and without (``llm_cooldown=0``, the old behaviour:
every request waits out the primary's timeout, once per attempt).

A loopback server speaks OpenAI's chat-completions format on two model names: ``hung``
never answers within the timeout, ``backup`` answers at once. Figures are wall seconds
per request, measured in one run.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bench.common import percentiles, table
from heron.llm import Broker, ChatRequest, Message, parse_table
from heron.llm.cooldowns import Cooldowns
from heron.settings import Settings

TIMEOUT = 1.0
COOLDOWN = 3.0
FOLLOWING = 20
MODELS = """models:
  primary: {{provider: openai, model: hung, base_url: "{url}/v1", fallbacks: [backup]}}
  backup: {{provider: openai, model: backup, base_url: "{url}/v1"}}
"""
HELLO = ChatRequest((Message("user", "hello"),))


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body["model"] == "hung":
            time.sleep(TIMEOUT * 4)
        answer = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "hi"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(answer).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the broker gave up on the hung model: nobody reads this
            pass


def _timed(broker: Broker) -> tuple[str, float]:
    started = time.perf_counter()
    done = broker.complete(HELLO)
    return done.model, time.perf_counter() - started


def run() -> str:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    table_ = parse_table(MODELS.format(url=f"http://127.0.0.1:{httpd.server_port}"))
    rows = []
    with tempfile.TemporaryDirectory() as home:
        llm = {"timeout": TIMEOUT, "retries": 2, "backoff": 0}
        cooling = Settings(home=Path(home), llm=llm | {"cooldown": COOLDOWN})
        cooled = Broker(table_, cooling, cooldowns=Cooldowns())
        model, first = _timed(cooled)
        start = time.perf_counter()
        following = [_timed(cooled) for _ in range(FOLLOWING)]
        p50, p95 = percentiles([s for _, s in following])
        rows.append(("cooldowns: first request", model, 1, first * 1000, first * 1000))
        rows.append((f"cooldowns: next {FOLLOWING}", following[0][0], FOLLOWING, p50, p95))
        time.sleep(max(0.0, COOLDOWN - (time.perf_counter() - start)) + 0.05)
        model, probe = _timed(cooled)
        rows.append(("cooldowns: the probe after it", model, 1, probe * 1000, probe * 1000))
        model, after = _timed(cooled)
        rows.append(("cooldowns: after the probe", model, 1, after * 1000, after * 1000))
        off = Broker(
            table_, Settings(home=Path(home), llm=llm | {"cooldown": 0}), cooldowns=Cooldowns()
        )
        plain = [_timed(off) for _ in range(3)]
        p50, p95 = percentiles([s for _, s in plain])
        rows.append(("no cooldown (llm_cooldown=0), 3 requests", plain[0][0], 3, p50, p95))
    httpd.shutdown()
    httpd.server_close()
    return table(
        f"A hung primary, timeout {TIMEOUT:g} s, retries 2, cooldown {COOLDOWN:g} s",
        ("requests", "answered by", "n", "p50 ms", "p95 ms"),
        rows,
    )
