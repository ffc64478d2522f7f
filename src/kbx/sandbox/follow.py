"""The parent's reading of one child: its messages against the schema, a CPU-time limit per
stage, and the outputs it must hand back.

Every line from the child is parsed by ``channel`` (a malformed, over-long or unexpected line is
``forbidden``).  A stage's limit is in CPU seconds of the child's whole process tree, so a loaded
machine, where the child waits for a core, does not turn a correct candidate into a timeout; a
wall-clock backstop ``Limits.wall_factor`` times larger ends a child that sleeps or blocks.  The
outputs and op evidence announced are checked against ``expect.Expected`` as they come: an
output or evidence the parent does not expect, a duplicate, or a ``done`` before all of them is
``forbidden``; torch compute beyond glue in a case is ``no_triton``.  On the CPU a benchmark
case past its CPU budget (``Limits.bench_cpu_s``) ends the child without a verdict: the cases
that finished are judged and the rest recorded as not checked.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from kbx.gpu import clock, lockholders
from kbx.sandbox import evidence
from kbx.sandbox.childenv import tree_cpu_s
from kbx.sandbox.expect import Expected, Key
from kbx.sandbox.wire import channel
from kbx.suite.verdict import CHILD_VERDICTS, Reject, Verdict

POLL_S = 0.5  # how often a waiting parent looks at the child's CPU time
# Parts of the run stage the child times itself (``done``'s ``parts``): its Triton compiles and
# the op evidence's profiler sessions, kept as ``run_compile`` and ``run_evidence``.  Claims of
# the child's, read as figures only: no verdict depends on them.
RUN_PARTS = ("compile", "evidence")


@dataclass
class Announced:
    """What the child said it handed back: output files (name, hash, timed variant, bytes)."""

    files: dict[Key, tuple[str, str, int | None, int]] = field(default_factory=dict)
    ops: set[Key] = field(default_factory=set)
    timings: list[dict[str, Any]] = field(default_factory=list)
    unfinished: set[Key] = field(default_factory=set)  # benchmark cases cut off on the CPU
    setup_parts: dict[str, float] = field(default_factory=dict)
    # wall seconds by phase (``phase``), and parts of the run phase: run_first, run_compile...
    spent: dict[str, float] = field(default_factory=dict)
    shares: dict[str, float | None] = field(default_factory=dict)  # GPU time in Triton, by case
    samples: dict[int, list[float]] = field(default_factory=dict)  # timed calls, by bench case
    gpu_us: list[int] = field(default_factory=lambda: [0, 0])  # in Triton, in torch: all cases


class CutOff(Exception):
    """A CPU benchmark case ran past its budget: judge what came before it."""


def phase(stage: str) -> str:
    """The phase a stage's wall time counts to in a result's ``stage_s``."""
    first = stage.split()[0]
    return {"setting": "setup", "cases": "run", "bench": "run", "a": "lock"}.get(first, first)


@dataclass
class Stage:
    name: str  # shown in verdicts: "setting up", "import", "cases 2", "bench 0", ...
    cpu_s: float | None  # the CPU limit (None: wall clock only)
    wall_s: float
    cpu_at: float = 0.0
    wall_at: float = field(default_factory=time.monotonic)


class Follower:
    """The state of one child's conversation with the parent."""

    def __init__(
        self, pid: int, expected: Expected, limits: Any, device: str, perf: bool, triton: bool
    ) -> None:
        self.pid, self.expected, self.limits = pid, expected, limits
        self.device, self.perf = device, perf
        self.triton = triton  # torch compute is rejected (off only to validate a reference)
        self.watch: lockholders.Watch | None = None  # the run's GPU lock, if it has one
        self.seen: dict[str, int] = {}
        self.got = Announced()
        self.stage = Stage("setting up", None, limits.setup_s)
        self.resume: Stage | None = None  # where a wait for the GPU lock returns to
        self.imported = False
        self.checked_at = time.monotonic()
        self.last = time.monotonic()  # the end of the wall time counted so far (``close_stage``)

    def enter(self, name: str, cpu_s: float | None, wall_s: float | None = None) -> None:
        wall = wall_s if wall_s is not None else (cpu_s or 0.0) * self.limits.wall_factor
        self.close_stage()
        self.first_case_ends()
        self.stage = Stage(name, cpu_s, wall, tree_cpu_s(self.pid))

    def close_stage(self, now: float | None = None) -> None:
        """Count the wall time since the last message to the current stage's phase."""
        now = time.monotonic() if now is None else now
        key = phase(self.stage.name)
        self.got.spent[key] = self.got.spent.get(key, 0.0) + now - self.last
        self.last = now

    def first_case_ends(self) -> None:
        """At the end of the first correctness case (the stage the child leaves, not one it
        waits for the GPU lock in), its wall time as ``run_first``: where the compiles are."""
        if self.stage.name == "cases 0" and self.resume is None:
            self.got.spent["run_first"] = time.monotonic() - self.stage.wall_at

    def check_limits(self) -> None:
        """Raise once the stage is past its CPU limit or its wall-clock backstop, or the child
        has held the GPU lock too long while others wait (``check_hold``)."""
        self.check_hold()
        st = self.stage
        wall = time.monotonic() - st.wall_at
        cpu = tree_cpu_s(self.pid) - st.cpu_at if st.cpu_s is not None else 0.0
        over_cpu = st.cpu_s is not None and cpu > st.cpu_s
        if not (over_cpu or wall > st.wall_s):
            return
        if st.name.startswith("bench") and self.device == "cpu":
            self.got.unfinished = {k for k in self.expected.runs if k[0] == "bench"} - set(
                self.got.files
            )
            raise CutOff(st.name)
        if st.name == "setting up":
            raise Reject(Verdict.HARNESS_ERROR, f"no progress for {wall:.0f} s while setting up")
        if over_cpu:
            raise Reject(
                Verdict.TIMEOUT, f"used {cpu:.0f} s of CPU in {st.name} (limit {st.cpu_s:.0f} s)"
            )
        raise Reject(Verdict.TIMEOUT, f"no progress for {wall:.0f} s (wall clock) during {st.name}")

    @property
    def locked(self) -> bool:
        """Whether the run has a GPU lock the child may wait for."""
        return self.watch is not None

    def use_lock(self, path: str | None) -> None:
        """The run's GPU lock file (None: none, on the CPU)."""
        self.watch = lockholders.Watch(path, self.pid) if path else None

    def check_hold(self) -> None:
        """``timeout`` once the child (a process of its tree) has held the GPU lock for
        ``Limits.hold_s`` while other processes waited for it, at every look
        (``lockholders.Watch``): a kernel that never ends, or candidate code that sleeps inside
        a launch's hold (a grid function, a heuristic), would otherwise stall every timing,
        check and baseline on the GPU until the stage's wall-clock backstop.  Read from the
        kernel's table of locks, not from anything the child says.  A release between two looks
        lets the waiters in (the lock prefers them), and starts the count again; so does each
        case and each benchmark case's timing (signed messages: the GPU lock's unsigned
        wait/go, which a candidate can forge, move nothing here), since the one timing turn of
        a slow candidate's benchmark cases may together last longer."""
        if self.watch is None:
            return
        held = self.watch.held_s()
        if held > self.limits.hold_s:
            raise Reject(
                Verdict.TIMEOUT,
                f"held the GPU lock for {held:.0f} s during {self.stage.name} while "
                f"{self.watch.waiting} other processes waited for it "
                f"(limit {self.limits.hold_s:.0f} s)",
            )

    def take(self, msg: Any) -> bool:
        """Act on one message; True once the child says it is done (and it may be)."""
        event = msg.event
        self.seen[event] = self.seen.get(event, 0) + 1
        if event == "done":
            self.close_stage()
            self.first_case_ends()
            self.got.timings = [t.model_dump(exclude_none=True) for t in msg.timings]
            for name in RUN_PARTS:
                if name in (msg.parts or {}):
                    self.got.spent[f"run_{name}"] = msg.parts[name]
            self.check_complete()
            self.check_share()
            self.got.timings = from_samples(self.got.timings, self.got.samples)
            return True
        handler = getattr(self, f"on_{event}", None)
        if handler is not None:  # "saving" needs nothing
            handler(msg)
        return False

    def on_wait(self, msg: Any) -> None:
        if not self.locked:  # no GPU lock in this run: only a forgery says this
            raise Reject(Verdict.FORBIDDEN, "reported a wait for a GPU lock this run does not have")
        self.resume = self.resume or self.stage
        self.enter("a wait for the GPU lock", None, self.limits.lock_s)

    def on_go(self, msg: Any) -> None:
        if self.resume is not None:
            self.close_stage()
            self.stage, self.resume = self.resume, None

    def on_ready(self, msg: Any) -> None:
        if self.seen["ready"] == 1:
            self.got.setup_parts = dict(msg.parts)
            for name, seconds in msg.parts.items():  # also those the spawner does not name
                self.got.spent[f"setup_{name}"] = seconds
        self.enter("import", self.limits.import_s)

    def on_imported(self, msg: Any) -> None:
        self.imported = True
        self.enter("cases 0", self.limits.case_s)

    def on_case(self, msg: Any) -> None:
        on_cpu_bench = msg.kind == "bench" and self.device == "cpu"
        budget = self.limits.bench_cpu_s if on_cpu_bench else self.limits.case_s
        self.enter(f"{msg.kind} {msg.index}", budget)
        self.restart_hold()

    def on_timing(self, msg: Any) -> None:
        self.enter(f"timing of bench {msg.index}", self.limits.timing_s)
        self.restart_hold()

    def restart_hold(self) -> None:
        """Each case and each benchmark case's timing its own hold limit, as its own time
        limits (one turn times every benchmark case)."""
        if self.watch is not None:
            self.watch.restart()

    def on_samples(self, msg: Any) -> None:
        if not self.perf or msg.index in self.got.samples:
            raise Reject(Verdict.FORBIDDEN, f"unexpected timing samples for bench {msg.index}")
        self.got.samples[msg.index] = list(msg.ms)

    def on_output(self, msg: Any) -> None:
        self.announce_output(msg)

    def on_ops(self, msg: Any) -> None:
        self.announce_ops(msg)

    def on_reject(self, msg: Any) -> None:
        raise self.rejection(msg)

    def on_harness_error(self, msg: Any) -> None:
        if self.stage.name != "setting up":
            raise Reject(Verdict.FORBIDDEN, "reported a harness error on kbx's channel")
        raise Reject(Verdict.HARNESS_ERROR, msg.detail)

    def announce_output(self, msg: Any) -> None:
        key = (msg.kind, msg.index)
        if key not in self.expected.runs:
            raise Reject(
                Verdict.FORBIDDEN,
                f"handed back an output kbx did not ask for ({msg.kind} {msg.index})",
            )
        if key in self.got.files:
            raise Reject(Verdict.FORBIDDEN, f"handed back {msg.kind} {msg.index} twice")
        self.got.files[key] = (msg.file, msg.sha256, getattr(msg, "variant", None), msg.size)

    def announce_ops(self, msg: Any) -> None:
        key = (msg.kind, msg.index)
        if key in self.got.ops or key not in self.ops_expected():
            raise Reject(Verdict.FORBIDDEN, f"unexpected op evidence for {msg.kind} {msg.index}")
        self.got.ops.add(key)
        calls = dict(msg.calls)
        self.got.gpu_us[0] += calls.get(channel.TRITON_US, 0)
        self.got.gpu_us[1] += calls.get(channel.OTHER_US, 0)
        self.got.shares[f"{msg.kind} {msg.index}"] = evidence.triton_share(calls)
        launches = calls.pop(evidence.LAUNCHES, 0)
        if self.triton:
            self.judge_ops(f"{msg.kind} {msg.index}", calls, launches)

    def judge_ops(self, case: str, calls: dict[str, int], launches: int) -> None:
        """``no_triton`` for a case whose evidence shows torch compute, data moved between the
        host and tensors, or no launch of a Triton kernel."""
        host = evidence.host_ops(calls)
        compute = {k: v for k, v in evidence.compute_ops(calls).items() if k not in host}
        if compute:
            named = ", ".join(
                f"{k.removeprefix('aten::')} x{v}" for k, v in sorted(compute.items())
            )
            raise Reject(Verdict.NO_TRITON, f"{case}: torch computed outside Triton ({named})")
        if host:
            named = ", ".join(
                f"{k.removeprefix('aten::')} x{v}: {evidence.HOST[k.removeprefix('aten::')]}"
                for k, v in sorted(host.items())
            )
            raise Reject(
                Verdict.NO_TRITON,
                f"{case}: data moved between the host and tensors outside Triton ({named})",
            )
        if launches == 0:
            raise Reject(
                Verdict.NO_TRITON, f"{case}: no Triton kernel launch in kbx's profiler session"
            )

    def check_share(self) -> None:
        """``no_triton`` unless enough of the GPU time of all its cases went to the candidate's
        own Triton kernels (``evidence.MIN_TRITON_SHARE``)."""
        share = evidence.overall_share(*self.got.gpu_us)
        if self.triton and share is not None and share < evidence.MIN_TRITON_SHARE:
            raise Reject(
                Verdict.NO_TRITON,
                f"{share:.0%} of the GPU time of its cases in its own Triton kernels "
                f"(at least {evidence.MIN_TRITON_SHARE:.0%}): torch did the work",
            )

    def ops_expected(self) -> set[Key]:
        """The cases whose op evidence the child must report: none where Triton is not
        required (kbx's own reference, which ``kbx validate`` runs)."""
        if not self.triton:
            return set()
        return {k for k in self.expected.runs if k[0] == "cases"} | {
            ("bench", i) for i in self.expected.bench
        }

    def rejection(self, msg: Any) -> Reject:
        """The child's own verdict, unless the message could only have been forged."""
        try:
            verdict = Verdict(msg.verdict)
        except ValueError:
            verdict = Verdict.FORBIDDEN
        if verdict not in CHILD_VERDICTS or "ready" not in self.seen:
            return Reject(
                Verdict.FORBIDDEN, f"forged the verdict {msg.verdict!r} on kbx's progress channel"
            )
        return Reject(verdict, msg.detail)

    def check_complete(self) -> None:
        """``done`` must follow one report per case and timing, every expected output and every
        case's op evidence: a candidate that writes it itself, skipping kbx's checks, fails."""
        want = {
            "ready": 1,
            "imported": 1,
            "case": sum(1 for k, _ in self.expected.runs if k == "cases")
            + len(self.expected.bench),
            "timing": len(self.expected.bench) if self.perf else 0,
            "samples": len(self.expected.bench) if self.perf else 0,
        }
        if any(self.seen.get(k, 0) != n for k, n in want.items()):
            raise Reject(
                Verdict.FORBIDDEN,
                f"reported completion before kbx ran every case (reports: {self.seen}, "
                f"expected {want})",
            )
        missing = sorted(set(self.expected.runs) - set(self.got.files))
        if missing:
            raise Reject(
                Verdict.FORBIDDEN, f"reported completion without the outputs of {describe(missing)}"
            )
        if self.got.ops != self.ops_expected():
            lacking = sorted(self.ops_expected() - self.got.ops)
            raise Reject(
                Verdict.FORBIDDEN,
                f"reported completion without kbx's op evidence for {describe(lacking)}",
            )

    def partial(self) -> Expected:
        """What is judged of a child cut off during a CPU benchmark case."""
        lacking = sorted(set(self.expected.runs) - set(self.got.files) - self.got.unfinished)
        if lacking or self.got.ops != self.ops_expected() - self.got.unfinished:
            raise Reject(
                Verdict.FORBIDDEN,
                f"outputs or op evidence missing before the cut-off: {describe(lacking)}",
            )
        return self.expected.without(self.got.unfinished)


def from_samples(
    timings: list[dict[str, Any]], samples: dict[int, list[float]]
) -> list[dict[str, Any]]:
    """The child's timings with their statistics (median, interval, fastest call, count)
    computed here from each case's raw samples: none the candidate's process computed is
    taken on trust (a candidate that patched kbx's statistics there changes nothing)."""
    return [
        {**t, **clock.statistics_of(samples[i])} if i in samples else t
        for i, t in enumerate(timings)
    ]


def describe(keys: list[Key]) -> str:
    shown = ", ".join(f"{k} {i}" for k, i in keys[:6])
    return shown + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")


def next_message(
    reader: channel.LineReader, follower: Follower, verifier: channel.Verifier
) -> Any | None:
    """The next signed message (``channel.Verifier``), checking the stage's limits while
    waiting; None at the pipe's end."""
    while True:
        if time.monotonic() - follower.checked_at >= POLL_S:  # also under a stream of messages
            follower.checked_at = time.monotonic()
            follower.check_limits()
        try:
            line = reader.next_line(POLL_S)
            return None if line is None else verifier.open(line)
        except TimeoutError:
            continue
        except channel.ChannelError as exc:
            raise Reject(Verdict.FORBIDDEN, f"wrote on kbx's progress channel: {exc}") from None
