"""kbx.sandbox.follow: the parts of the run stage a result records (``stage_s``): the first
correctness case's wall time, measured by the parent, and the compile and op-evidence seconds
the child reports with ``done`` (figures only: names the parent does not know are dropped)."""

from __future__ import annotations

import os

from kbx.core.config import Limits
from kbx.sandbox.expect import Expected
from kbx.sandbox.follow import Follower
from kbx.sandbox.wire.channel import encode, parse_line

SHA = "ab" * 32


def said(follower: Follower, event: str, **fields: object) -> bool:
    return follower.take(parse_line(encode(event, **fields)))


def test_the_first_case_and_the_child_s_parts_are_kept_as_parts_of_the_run():
    expected = Expected(runs={("cases", 0): 1, ("cases", 1): 1}, bench=(), bench_total=0)
    follower = Follower(os.getpid(), expected, Limits(), "cpu", perf=False, triton=False)
    said(follower, "ready", parts={"imports": 0.1})
    said(follower, "imported")
    said(follower, "case", kind="cases", index=0)
    follower.locked = True
    said(follower, "wait")  # a wait for the GPU lock inside the first case is part of it
    said(follower, "go")
    said(follower, "output", kind="cases", index=0, file="cases-0.safetensors", sha256=SHA, size=8)
    said(follower, "case", kind="cases", index=1)
    first = follower.got.spent["run_first"]
    said(follower, "output", kind="cases", index=1, file="cases-1.safetensors", sha256=SHA, size=8)
    parts = {"compile": 1.5, "evidence": 0.25, "other": 9.0}
    assert said(follower, "done", timings=[], parts=parts)
    spent = follower.got.spent
    assert 0.0 <= first == spent["run_first"] <= spent["run"] + spent.get("lock", 0.0)
    assert spent["run_compile"] == 1.5 and spent["run_evidence"] == 0.25
    assert "run_other" not in spent and "other" not in spent
