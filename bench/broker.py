"""The broker as a platform team runs it (issue 50): one model served by three
deployments of different speeds and one that fails, under each routing strategy; the
response cache on a skewed stream of questions; parallel calls against a budget in money.

A loopback server speaks OpenAI's chat-completions format on four model names: ``fast``
answers after 20 ms, ``mid`` after 80 ms, ``slow`` after 200 ms, ``down`` always with a
500. Each strategy gets a fresh broker (its own cooldowns and deployment state) and 80
requests, 4 at a time. Figures are wall milliseconds per request, measured in one run.
"""

from __future__ import annotations

import json
import random
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

from bench.common import percentiles, table
from heron.keys import OverLimit, open_keys
from heron.llm import Broker, ChatRequest, Message, parse_table
from heron.llm.cooldowns import Cooldowns
from heron.llm.routing import Deployments
from heron.settings import Settings

LATENCY = {"fast": 0.02, "mid": 0.08, "slow": 0.2}
REQUESTS, PARALLEL = 80, 4
#: The answer's tokens (the request's max_tokens), and the price of every deployment
#: (gpt-4o-mini's). The prompt's tokens are counted as a tokenizer would: 4 characters
#: to a token, fewer than Heron's own estimate (3), as real tokenizers count.
ANSWER = 50
PRICE = "    input_cost_per_token: 0.00000015\n    output_cost_per_token: 0.0000006\n"
DEPLOYMENT = "  {name}:\n    provider: openai\n    model: {name}\n    base_url: {url}/v1\n" + PRICE
#: What LiteLLM's router docs say each strategy does (docs.litellm.ai, "Router").
LITELLM = {
    "simple-shuffle": "random pick, weighted by rpm/tpm/weight if set",
    "least-busy": "the deployment with the fewest requests in flight",
    "latency-based-routing": "the deployment with the lowest recent latency",
    "usage-based-routing": "the deployment with the lowest tpm use this minute",
}


class _Handler(BaseHTTPRequestHandler):
    #: Requests each model name received.
    sent: ClassVar[Counter[str]] = Counter()

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        model = body["model"]
        _Handler.sent[model] += 1
        if model == "down":
            self._send(500, {"error": {"message": "down", "type": "server_error"}})
            return
        time.sleep(LATENCY.get(model, 0.0))
        text = f"answer to: {body['messages'][-1]['content']}"
        prompt = sum(len(m["content"]) for m in body["messages"]) // 4 + 1
        answer = min(ANSWER, body.get("max_tokens") or ANSWER)
        self._send(
            200,
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": answer,
                    "total_tokens": prompt + answer,
                },
            },
        )

    def _send(self, status: int, answer: dict[str, object]) -> None:
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _models(url: str, strategy: str, cache: bool = False) -> str:
    names = [*LATENCY, "down"]
    text = f"models:\n  pool:\n    deployments: [{', '.join(names)}]\n"
    text += f"    routing_strategy: {strategy}\n"
    text += "".join(DEPLOYMENT.format(name=n, url=url) for n in names)
    if cache:
        text += "litellm_settings:\n  cache: true\n  cache_params: {type: local, ttl: 600}\n"
    return text


def _ask(broker: Broker, text: str) -> tuple[str, float]:
    request = ChatRequest((Message("user", text),), max_tokens=ANSWER)
    started = time.perf_counter()
    done = broker.complete(request, model="pool")
    return done.model, time.perf_counter() - started


def _strategies(url: str, settings: Settings) -> str:
    rows = []
    for strategy in LITELLM:
        broker = Broker(parse_table(_models(url, strategy)), settings, cooldowns=Cooldowns())
        broker.deployments = Deployments(rng=random.Random(1))
        _Handler.sent.clear()
        with ThreadPoolExecutor(PARALLEL) as pool:
            answers = list(pool.map(lambda n, b=broker: _ask(b, f"q{n}"), range(REQUESTS)))
        by = Counter(model for model, _ in answers)
        p50, p95 = percentiles([s for _, s in answers])
        rows.append(
            (
                strategy,
                by["fast"],
                by["mid"],
                by["slow"],
                by["down"],
                _Handler.sent["down"],
                p50,
                p95,
                LITELLM[strategy],
            )
        )
        broker.close()
    return table(
        f"One model, three deployments (20/80/200 ms) and one failing; {REQUESTS} requests, "
        f"{PARALLEL} at a time",
        ("strategy", "fast", "mid", "slow", "down", "sent to down", "p50 ms", "p95 ms", "LiteLLM"),
        rows,
    )


def _cache(url: str, settings: Settings) -> str:
    rng = random.Random(3)
    questions = [f"question {int(rng.paretovariate(1.2)) % 40}" for _ in range(200)]
    rows = []
    for cache in (False, True):
        table_ = parse_table(_models(url, "latency-based-routing", cache=cache))
        broker = Broker(table_, settings, cooldowns=Cooldowns())
        hits: Counter[str] = Counter()
        saved: list[float] = []
        spent: list[float] = []
        broker.observer = lambda event, _alias, hits=hits: hits.update([event])
        broker.on_saved = lambda _alias, dollars, saved=saved: saved.append(dollars)
        broker.on_spend = lambda _k, _c, _a, dollars, spent=spent: spent.append(dollars)
        times = [_ask(broker, q)[1] for q in questions]
        p50, p95 = percentiles(times)
        ratio = hits["cache_hit"] / len(questions)
        rows.append(
            (
                "on (ttl 600 s)" if cache else "off",
                len(questions),
                len(set(questions)),
                f"{ratio:.1%}",
                f"{sum(spent):.4f}",
                f"{sum(saved):.4f}",
                p50,
                p95,
            )
        )
        broker.close()
    return table(
        "The response cache: 200 requests, questions drawn with a long tail (Pareto)",
        ("cache", "requests", "distinct", "hit ratio", "spent $", "saved $", "p50 ms", "p95 ms"),
        rows,
    )


def _budget(url: str, home: Path) -> str:
    cost = 4 * 0.00000015 + ANSWER * 0.0000006  # "budget NN": 4 tokens in, 50 out
    budget = 10.5 * cost
    settings = Settings(
        home=home, llm={"retries": 0}, contexts={"team": {"max_budget": budget}}
    ).in_context("team")
    broker = Broker(parse_table(_models(url, "least-busy")), settings, cooldowns=Cooldowns())
    outcomes: Counter[str] = Counter()

    def one(n: int) -> None:
        try:
            _ask(broker, f"budget {n}")
            outcomes["served"] += 1
        except OverLimit:
            outcomes["refused (429 budget_exceeded)"] += 1

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(60)))
    broker.close()
    with open_keys(settings) as keys:
        spent = sum(c for payer, _, c in keys.spend() if payer == "context:team")
    over = max(0, round((spent - budget) / cost + 0.5)) if spent > budget else 0
    return table(
        f"A budget of ${budget:.6f} (10.5 calls at about ${cost:.6f}): 60 calls, 16 at a time",
        ("served", "refused", "spent $", "requests over budget"),
        [
            (
                outcomes["served"],
                outcomes["refused (429 budget_exceeded)"],
                f"{spent:.6f}",
                over,
            )
        ],
    )


def run() -> str:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_port}"
    try:
        with tempfile.TemporaryDirectory() as home:
            settings = Settings(home=Path(home), llm={"retries": 0, "cooldown": 60})
            parts = [_strategies(url, settings), _cache(url, settings), _budget(url, Path(home))]
    finally:
        httpd.shutdown()
        httpd.server_close()
    return "\n".join(parts)
