"""A verifiers-style environment against a running ``kbx serve``: load it over one task and score
a good and a bad completion with its rubric (the verifiers package is optional).

    kbx serve --device cpu &
    python examples/verifiers_env.py --url http://127.0.0.1:8000
"""

import argparse
import asyncio

from _answers import BAD, GOOD, TASK

from kbx.rewards.verifiers import KernelRubric, load_environment


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--token")
    args = p.parse_args()
    env = load_environment(url=args.url, token=args.token, tasks=TASK, shape="kernelgym")
    print(
        f"{type(env).__name__}: {len(env.dataset)} prompt(s), answer {env.dataset[0]['answer']!r}"
    )
    rubric = KernelRubric(args.url, args.token, shape="kernelgym")
    good = await rubric.score([{"role": "assistant", "content": GOOD}], TASK)
    bad = await rubric.score([{"role": "assistant", "content": BAD}], TASK)
    print(f"good completion: {good}")
    print(f"bad completion:  {bad}")
    assert good["kernel_passed"] == 1.0 and bad["kernel_passed"] == 0.0
    assert good["reward"] > bad["reward"]


if __name__ == "__main__":
    asyncio.run(main())
