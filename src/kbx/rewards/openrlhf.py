"""An OpenRLHF remote reward endpoint: ``POST /get_reward`` with ``{"query": [...],
"prompts": [...], "labels": [...]}`` (labels: the task ids) answers ``{"rewards": [...],
"scores": [...], "extra_logs": {...}}``, evaluating through a ``kbx serve`` at ``--url``.
Start it beside the service and pass ``--remote_rm_url http://HOST:PORT/get_reward``:

    python -m kbx.rewards.openrlhf --url http://127.0.0.1:8000 --port 5000
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, Field

from kbx.rewards.common import score, shape_of
from kbx.rewards.shapes import Shape


class RewardQuery(BaseModel):
    query: list[str] = Field(description="prompt and response, as OpenRLHF sends them")
    prompts: list[str] = Field(default_factory=list)
    labels: list[str] = Field(description="the task id of each query")


def response_of(query: str, prompt: str) -> str:
    """The model's answer: the query less its prompt (OpenRLHF sends both joined)."""
    return query[len(prompt) :] if prompt and query.startswith(prompt) else query


def create_app(
    url: str, token: str | None, tier: str = "quick", shape: Shape | None = None
) -> FastAPI:
    app = FastAPI(title="kbx rewards for OpenRLHF")
    chosen = shape or Shape()

    @app.post("/get_reward")
    def get_reward(body: RewardQuery) -> dict[str, Any]:
        prompts = body.prompts or [""] * len(body.query)
        answers = [response_of(q, p) for q, p in zip(body.query, prompts, strict=True)]
        scored = score(url, token, body.labels, answers, tier, chosen)
        rewards = [0.0 if value is None else value for value, _ in scored]
        passed = [1.0 if record["verdict"] == "passed" else 0.0 for _, record in scored]
        return {
            "rewards": rewards,
            "scores": rewards,
            "extra_logs": {"kbx_passed": passed, "kbx_verdicts": [r["verdict"] for _, r in scored]},
        }

    return app


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    p = argparse.ArgumentParser(description="OpenRLHF remote reward endpoint over kbx serve")
    p.add_argument("--url", default="http://127.0.0.1:8000", help="the kbx serve to use")
    p.add_argument("--token-file", help="a file holding the bearer token for kbx serve")
    p.add_argument("--tier", default="quick", choices=("quick", "standard", "thorough"))
    p.add_argument("--shape", default="correct", help="correct | log_speedup | kernelgym | kevin")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=5000)
    args = p.parse_args(argv)
    token = Path(args.token_file).read_text().strip() if args.token_file else None
    app = create_app(args.url, token, args.tier, shape_of(args.shape))
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
