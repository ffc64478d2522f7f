"""OpenRLHF's remote reward protocol against a running ``kbx serve``: start the reward endpoint
(``python -m kbx.rewards.openrlhf``) and post to it what OpenRLHF posts.

    kbx serve --device cpu &
    python examples/openrlhf_reward.py --url http://127.0.0.1:8000
"""

import argparse
import socket
import subprocess
import sys
import time

import httpx
from _answers import BAD, GOOD, TASK


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--token-file")
    args = p.parse_args()
    port = free_port()
    command = [sys.executable, "-m", "kbx.rewards.openrlhf", "--url", args.url, "--port", str(port)]
    endpoint = subprocess.Popen(
        command + (["--token-file", args.token_file] if args.token_file else [])
    )
    try:
        url = f"http://127.0.0.1:{port}/get_reward"
        prompt = "Write a Triton relu.\n"
        body = {
            "query": [prompt + GOOD, prompt + BAD],
            "prompts": [prompt, prompt],
            "labels": [TASK, TASK],
        }
        for _ in range(100):
            try:
                answer = httpx.post(url, json=body, timeout=300).json()
                break
            except httpx.TransportError:
                time.sleep(0.2)
        print(f"rewards: {answer['rewards']}  verdicts: {answer['extra_logs']['kbx_verdicts']}")
        assert answer["rewards"] == [1.0, 0.0]
    finally:
        endpoint.terminate()
        endpoint.wait(10)


if __name__ == "__main__":
    main()
