"""An OpenAI-compatible chat-completions server on loopback for the tests: real HTTP, replies
from a Python function, and scripted faults (429, 500, slow, truncated, malformed, no choices)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], str]
# What GET /v1/models lists by default: the presets' models and the tests' own
MODELS = ["claude-sonnet-4", "deepseek-chat", "deepseek-coder", "ai9stars/AutoTriton", "test-model"]
FAULTS = ("429", "500", "slow", "truncated", "malformed", "empty", "400")


def completion(texts: list[str], model: str, prompt: str, finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": i,
                "message": {"role": "assistant", "content": t},
                "finish_reason": finish,
            }
            for i, t in enumerate(texts)
        ],
        "usage": {
            "prompt_tokens": len(prompt) // 4,
            "completion_tokens": sum(len(t) // 4 for t in texts),
            "total_tokens": len(prompt) // 4 + sum(len(t) // 4 for t in texts),
        },
    }


class FakeServer:
    """``respond`` maps a request body to the reply text; ``faults`` are served first, one
    per request; ``delay_s`` holds every reply; ``refuse_n`` answers n > 1 with a 400."""

    def __init__(self, respond: Responder | None = None, delay_s: float = 0.0) -> None:
        self.respond: Responder = respond or (lambda body: "hello")
        self.delay_s = delay_s
        self.faults: list[str] = []
        self.refuse_n = False
        self.finish_reason = "stop"  # "length": a reply cut at max_tokens
        self.models: list[str] | None = list(MODELS)  # None: GET /v1/models is a 404
        self.key: str | None = None  # the one API key it takes; None: any
        self.fail_every = 0  # n > 0: every n-th completion fails with a 500, retries included
        self.requests: list[dict[str, Any]] = []
        self.prompts: list[str] = []  # distinct prompts in the order first asked
        self.answered: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self.httpd.daemon_threads = True
        self.httpd.request_queue_size = 512
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def every_nth(self, body: dict[str, Any]) -> str | None:
        """A 500 for every request of each ``fail_every``-th distinct prompt (its retries too)."""
        if not self.fail_every or body.get("max_tokens") == 1:  # the probe passes
            return None
        key = json.dumps(body["messages"], sort_keys=True)
        with self.lock:
            if key not in self.prompts:
                self.prompts.append(key)
            return "500" if (self.prompts.index(key) + 1) % self.fail_every == 0 else None

    def next_fault(self) -> str | None:
        with self.lock:
            return self.faults.pop(0) if self.faults else None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return type("BoundHandler", (Handler,), {"fake": self})


class Handler(BaseHTTPRequestHandler):
    """Answers as its ``server`` (a FakeServer, set per server by ``FakeServer.handler``) says."""

    protocol_version = "HTTP/1.1"
    fake: FakeServer

    def log_message(self, *args: Any) -> None:
        pass

    def refused(self) -> bool:
        wanted = f"Bearer {self.fake.key}"
        if self.fake.key is None or self.headers.get("Authorization") == wanted:
            return False
        self.send(401, {"error": {"message": "invalid api key"}})
        return True

    def do_GET(self) -> None:
        if self.refused():
            return
        if self.fake.models is None or not self.path.endswith("/models"):
            return self.send(404, {"error": {"message": "no such route"}})
        models = [{"id": m, "object": "model", "owned_by": "kbx"} for m in self.fake.models]
        self.send(200, {"object": "list", "data": models})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.refused():
            return
        with self.fake.lock:
            self.fake.requests.append(body)
            self.fake.in_flight += 1
            self.fake.most_in_flight = max(self.fake.most_in_flight, self.fake.in_flight)
        try:
            self.answer(body)
        finally:
            with self.fake.lock:
                self.fake.in_flight -= 1

    def answer(self, body: dict[str, Any]) -> None:
        fault = self.fake.next_fault() or self.fake.every_nth(body)
        if fault == "slow":
            time.sleep(2.0)
            return self.send(200, completion(["late"], body["model"], ""))
        if fault in ("429", "500", "400"):
            return self.send(int(fault), {"error": {"message": f"scripted {fault}"}})
        if fault == "malformed":
            return self.send(200, b"{not json")
        if fault == "empty":
            return self.send(200, {**completion([], body["model"], ""), "choices": []})
        if fault == "truncated":
            return self.send(200, b'{"id": "x", "choices": [', length=400)
        n = body.get("n") or 1
        if n > 1 and self.fake.refuse_n:
            return self.send(400, {"error": {"message": "n > 1 is not supported"}})
        time.sleep(self.fake.delay_s)
        prompt = body["messages"][-1]["content"]
        texts = [self.fake.respond(body) for _ in range(n)]
        self.send(200, completion(texts, body["model"], prompt, self.fake.finish_reason))
        with self.fake.lock:
            self.fake.answered.append(body)

    def send(self, status: int, payload: Any, length: int | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(length or len(data)))
        self.end_headers()
        self.wfile.write(data)
        if length:  # fewer bytes than announced: the client sees a cut body
            self.close_connection = True


def prompt_of(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])
