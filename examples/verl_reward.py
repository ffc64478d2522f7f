"""verl's custom reward function against a running ``kbx serve``: score a good and a bad answer
as verl would, one by one and as a batch.

    kbx serve --device cpu &
    python examples/verl_reward.py --url http://127.0.0.1:8000
"""

import argparse

from _answers import BAD, GOOD, TASK

from kbx.rewards.verl import compute_score, compute_score_batch


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--token")
    args = p.parse_args()
    kwargs = {"url": args.url, "token": args.token, "shape": "log_speedup"}
    good = compute_score("kbx", GOOD, TASK, {"index": 0}, **kwargs)
    bad = compute_score("kbx", BAD, TASK, {"index": 1}, **kwargs)
    print(f"good answer: {good}")
    print(f"bad answer:  {bad}")
    batch = compute_score_batch(["kbx"] * 2, [GOOD, BAD], [TASK] * 2, [None, None], **kwargs)
    print(f"as a batch:  {[row['score'] for row in batch]}")
    assert good["score"] > bad["score"] and [r["score"] for r in batch] == [
        good["score"],
        bad["score"],
    ]


if __name__ == "__main__":
    main()
