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
        self.requests: list[dict[str, Any]] = []
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

    def next_fault(self) -> str | None:
        with self.lock:
            return self.faults.pop(0) if self.faults else None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append(body)
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    self.answer(body)
                finally:
                    with server.lock:
                        server.in_flight -= 1

            def answer(self, body: dict[str, Any]) -> None:
                fault = server.next_fault()
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
                if n > 1 and server.refuse_n:
                    return self.send(400, {"error": {"message": "n > 1 is not supported"}})
                time.sleep(server.delay_s)
                prompt = body["messages"][-1]["content"]
                texts = [server.respond(body) for _ in range(n)]
                self.send(200, completion(texts, body["model"], prompt, server.finish_reason))
                with server.lock:
                    server.answered.append(body)

            def send(self, status: int, payload: Any, length: int | None = None) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(length or len(data)))
                self.end_headers()
                self.wfile.write(data)
                if length:  # fewer bytes than announced: the client sees a cut body
                    self.close_connection = True

        return Handler


def prompt_of(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])
