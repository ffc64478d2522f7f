"""A ``kbx serve --device cpu`` in a subprocess on a free loopback port, for the tests and the
load script: started, waited for, stopped or killed (SIGKILL) like a crash."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
RELU = (ROOT / "solutions" / "reference" / "Activation" / "relu.py").read_text()
NO_TRITON = "import torch\n\ndef relu(x):\n    return torch.relu(x)\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def variant(n: int) -> str:
    """The reference relu with a comment that makes it a distinct candidate (a fresh key)."""
    return f"{RELU}\n# variant {n}\n"


class Server:
    """One ``kbx serve`` process over ``state``; ``args`` are added to its command line."""

    def __init__(self, state: Path, args: list[str] | None = None, device: str = "cpu") -> None:
        self.state, self.args, self.device = state, args or [], device
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = state.parent / f"{state.name}-server.log"

    def start(self, timeout_s: float = 120.0) -> Server:
        command = [sys.executable, "-m", "kbx", "serve", "--device", self.device]
        command += ["--port", str(self.port), "--state", str(self.state), *self.args]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kbx serve exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.2)
        raise TimeoutError(f"kbx serve did not answer in {timeout_s} s")

    def kill(self) -> None:
        """SIGKILL, as a crash: no shutdown handler runs."""
        if self.proc is not None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)
            self.proc = None

    def stop(self, wait_s: float = 30.0) -> None:
        """SIGINT, then SIGKILL if it has not exited within ``wait_s``."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(wait_s)
            except subprocess.TimeoutExpired:
                self.kill()
            self.proc = None
