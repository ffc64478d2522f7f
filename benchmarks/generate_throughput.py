"""The one-shot preset over all 184 tasks against a loopback server that answers after 1 s.

Targets (issue 27): at least 32 requests in flight, and kbx's own overhead at most 5 ms per LLM
call, where overhead = wall time less the server's time (the wall-clock union of the intervals
in which it held at least one request) and the evaluator's (none here: one-shot judges nothing
in its loop; the final evaluation is ``kbx eval``'s, benchmarked in harness_throughput.py).
The server runs in a child process, so the CPU seconds printed are kbx's and the client's alone.
    PYTHONPATH=src python benchmarks/generate_throughput.py [--delay-s 1.0] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import resource
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runlogs import union  # noqa: E402

from kbx.generate.config import ClientConfig, RunConfig, preset
from kbx.generate.runner import Plan, generate
from kbx.suite import select

REPLY = "```python\nx = 1\n```\n"


class Server:
    """A keep-alive HTTP/1.1 chat-completions server on asyncio: it adds no delay of its own
    beyond ``delay_s``, so the ramp-up of a batch measures the client (a thread-per-connection
    server took about a second to start 64 requests on this machine)."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.held: list[tuple[float, float]] = []
        self.in_flight = self.most = 0

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                writer.write(await self.answer(json.loads(await reader.readexactly(length))))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def answer(self, body: dict[str, object]) -> bytes:
        started = time.time()
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(self.delay_s)
        self.in_flight -= 1
        message = {"role": "assistant", "content": REPLY}
        data = json.dumps(
            {
                "id": "bench", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010},
            }
        ).encode()  # fmt: skip
        self.held.append((started, time.time()))
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}"
        return head.encode() + b"\r\n\r\n" + data


def serve(delay_s: float, pipe: Connection) -> None:
    """The server's process: its URL out, then on request its in-flight peak and intervals."""

    async def main() -> None:
        server = Server(delay_s)
        listener = await asyncio.start_server(server.connection, "127.0.0.1", 0, backlog=1024)
        pipe.send(f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/v1")
        await asyncio.get_running_loop().run_in_executor(None, pipe.recv)
        pipe.send((server.most, server.held))

    asyncio.run(main())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delay-s", type=float, default=1.0)
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()
    tasks = select()
    ours, theirs = multiprocessing.Pipe()
    child = multiprocessing.Process(target=serve, args=(args.delay_s, theirs), daemon=True)
    child.start()
    url = ours.recv()
    model, method = preset("claude")
    client = ClientConfig(base_url=url, model=model, concurrency=args.concurrency)
    run = RunConfig(method=method, client=client, device="cpu")
    judged: list[int] = []
    with tempfile.TemporaryDirectory() as out:
        plan = Plan(run, Path(out), tasks, lambda cands: judged.append(len(cands)) or [])
        cpu0, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.time()
        manifest = asyncio.run(generate(plan))
        wall, cpu1 = time.time() - wall0, resource.getrusage(resource.RUSAGE_SELF)
    ours.send("stats")
    most, held = ours.recv()
    child.join()
    calls = manifest["cost"]["total"]["calls"]
    server_s, evaluator_s = union(held), 0.0
    assert not judged and calls == len(tasks) == len(held), (calls, len(held), judged)
    overhead_ms = (wall - server_s - evaluator_s) / calls * 1000
    cpu_ms = (cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime) / calls * 1000
    print(f"tasks {len(tasks)}, LLM calls {calls}, server delay {args.delay_s:g} s")
    print(f"wall {wall:.2f} s, server {server_s:.2f} s, evaluator {evaluator_s:.2f} s")
    print(
        f"requests in flight at most: {most} (kbx's client: {manifest['most_requests_in_flight']})"
    )
    print(f"kbx overhead per LLM call: {overhead_ms:.2f} ms (kbx process CPU: {cpu_ms:.2f} ms)")
    ideal_s = -(-calls // args.concurrency) * args.delay_s
    strict_ms = (wall - ideal_s) / calls * 1000
    print(
        f"stricter: wall less the ideal {ideal_s:g} s (full batches of {args.concurrency}): "
        f"{strict_ms:.2f} ms per call, one-time start-up included"
    )
    ok = most >= 32 and overhead_ms <= 5.0
    print("targets (>= 32 in flight, <= 5 ms per call):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
