"""The candidate's child from the candidate's import on: every case's calls, the checks after
each call and at each case's end, the op evidence, the outputs.

This runs as frozen code (``bound``): the child's ``main`` freezes kbx's modules before the
import and calls ``prepare`` and ``run`` from the copies, so whatever the candidate rebinds in a
kbx module (``late_bound_global``) is not what runs here.  Code here touches no instance of a
Python class (an attribute is looked up on a class the candidate can change): the plan comes as
tuples (``items``), the recorder, the sender and the snapshot as functions in a
``SimpleNamespace`` (an immutable type), tensors through ``handling``.

After each call, before kbx copies its outputs (``after_call``): a launch the gate refused is
``no_triton``; a mode, kernel, hook or thread left behind (``pristine``) is ``forbidden``, once
the case's op evidence so far is sent, so that what the candidate computed still counts first.
At a case's end (``end_case``): the session's evidence, then the full check of every watched
namespace, then (in a state found unchanged) the outputs written and the next session started.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from kbx.gpu import clock
from kbx.gpu.gpulock import shared
from kbx.sandbox.child import entry, guard, handling, interp, launches, opcheck, pristine, runner
from kbx.sandbox.child.entry import CandidateFailure
from kbx.sandbox.wire import outputs
from kbx.suite.tensors import refill_case
from kbx.suite.verdict import Verdict

_manual_seed, _synchronize = torch.manual_seed, torch.cuda.synchronize
_monotonic = time.monotonic
# Python's recursion limit as kbx found it: a call that lowers it would make kbx's own checks
# after the call fail; it is put back before they run (``call``)
_limit, _set_limit, _LIMIT = sys.getrecursionlimit, sys.setrecursionlimit, sys.getrecursionlimit()
NO_TRITON, FORBIDDEN = str(Verdict.NO_TRITON), str(Verdict.FORBIDDEN)
# Data moved between the host and kernels one number at a time: per case's distinct inputs
# (numbers handed to kernels, ``launches.count_values``) or per call (elements read into Python,
# tensors made from numbers, ``evidence``), at most the larger of BULK_FLOOR and one value in
# BULK_SHARE of the inputs' elements (docs/design/trust-model.md, invariant 3)
BULK_FLOOR, BULK_SHARE = 256, 16


def items(task: Any, plan: Any) -> tuple[tuple[Any, ...], ...]:
    """The plan as plain tuples, read before the import: ``(kind, index, label, seeds, args,
    kwargs, keep, refill, refill_seed, bulk)``: the seeds of its calls (three for a random
    task), its inputs, whether its outputs are judged, its refill's inputs and seed (or None),
    and how many values its calls may hand between the host and kernels (``bulk``: distinct
    numbers over its inputs, and element reads or tensors made from numbers over its calls)."""
    timed = bool(plan.place.timed)
    found = []
    every = [("cases", i, c, x) for i, (c, x) in enumerate(plan.cases)]
    every += [("bench", i, c, x) for i, (c, x) in zip(plan.bench_index, plan.bench, strict=True)]
    for kind, i, case, inputs in every:
        seed = case.torch_seed
        seeds = (seed, seed, seed + 7919) if task.random else (seed,)
        keep = kind == "cases" or bool(task.random) or not timed
        refill = plan.refills[i] if kind == "cases" else None
        again = None if refill is None else (tuple(refill.args), dict(refill.kwargs))
        refill_seed = refill_case(case).torch_seed
        args, kwargs = tuple(inputs.args), dict(inputs.kwargs)
        size = sum(t.numel() for t in handling.leaves((args, tuple(kwargs.values()))))
        per, inputs_n = max(BULK_FLOOR, size // BULK_SHARE), 1 + (again is not None)
        bulk = (inputs_n * per, (len(seeds) + inputs_n - 1) * per)
        found.append((kind, i, case.label(), seeds, args, kwargs, keep, again, refill_seed, bulk))
    return tuple(found)


def prepare(task: Any, job: Any, plan: Any, send: Any) -> SimpleNamespace:
    """kbx's own set-up just before the import, in frozen code: the recorder, the launch gates,
    the profiler sealed, the first call's inputs copied, the snapshot, the guard; the session
    started last (the import's operations are the first case's)."""
    cfg = job.config
    required = bool(cfg.require_triton)
    recorder = opcheck.recorder(gpu=cfg.device == "cuda") if required else None
    state = launches.new_state()
    trusted = guard.install()  # the audit hook (the fork server's, when forked from it)
    if cfg.device == "cpu":
        interp.settle()
    root = interp.triton_root()
    codes = [
        c
        for c, kind in trusted["codes"].values()
        if trusted["reals"].get(c.co_filename, "").startswith(root)
    ]
    launches.install_launch_counter(
        cfg.device == "cpu",
        cfg.lock,
        marks=recorder.launches if recorder else None,
        libdevice_ranges=recorder.libdevice if recorder else None,
        state=state,
        codes=codes,
        timed=bool(cfg.timed),
    )
    if recorder is not None:
        recorder.kernels.update(state["kernels"])
        state["kernels"] = recorder.kernels
    work = tuple(items(task, plan))
    first = handling.fresh_arguments(work[0][4], work[0][5]) if work else None
    ctx = SimpleNamespace(
        send=send, recorder=recorder, state=state, items=work, first=first, required=required,
        inplace=tuple(task.inplace or ()), lock=plan.place.lock, cuda=cfg.device == "cuda",
        entry_names=tuple(task.entry_names()), failure=entry.failure, timed=bool(cfg.timed),
        transfers={}, attempts={}, spent={"evidence": 0.0},
    )  # fmt: skip
    if recorder is not None:
        opcheck.seal(ctx.attempts, ctx.transfers)
    ctx.snapshot = pristine.snapshot()
    ctx.guard = trusted
    if recorder is not None:
        recorder.start()
    return ctx


def candidate(ctx: SimpleNamespace, task: Any, job: Any, plan: Any, path: Path) -> None:
    """Import the candidate (``path``), run every case, time the benchmark cases where the run
    is timed; the candidate's failure (or its tampering) as its ``reject``, else ``done``."""
    try:
        fn = import_candidate(ctx, path)
        ctx.send("imported")
        last = len(ctx.items) - 1
        for number, item in enumerate(ctx.items):
            run_item(ctx, fn, item, number == last)
        timings = timed(ctx, task, job, plan, fn)
    except CandidateFailure as failure:
        fields = vars(failure)
        ctx.send("reject", verdict=str(fields["verdict"]), detail=str(fields["detail"]))
        return
    except opcheck.Tampered as tampered:
        ctx.send("reject", verdict=FORBIDDEN, detail=str(_args(tampered)[0]))
        return
    parts = dict(ctx.spent)
    if ctx.cuda:  # the CPU interpreter compiles nothing
        parts["compile"] = ctx.state["compile_s"]
    ctx.send("done", timings=timings, parts={k: round(v, 3) for k, v in parts.items()})


_args = BaseException.__dict__["args"].__get__  # an exception's arguments, read by the base type


def timed(ctx: SimpleNamespace, task: Any, job: Any, plan: Any, fn: Any) -> list[dict[str, Any]]:
    """The benchmark cases' timings (``runner.time_bench``) and their timed outputs, where the
    run is timed (the GPU)."""
    if not ctx.timed:
        return []
    cfg = job.config
    ctx.state["allow"] = None  # no evidence is gathered while kbx times: no count either
    precision = clock.Precision(cfg.timing_rel_ci, cfg.timing_budget_ms)
    sender = SimpleNamespace(send=ctx.send)
    timings, outs, variants = runner.time_bench(task, plan, fn, sender, cfg.profile, precision)
    for i, (runs, variant) in enumerate(zip(outs, variants, strict=True)):
        name = outputs.file_name("timed", i)
        digest, size = outputs.saved(Path(name), runs)
        ctx.send(
            "output", kind="timed", index=i, file=name, sha256=digest, size=size, variant=variant
        )
    return timings


def import_candidate(ctx: SimpleNamespace, path: Path) -> Any:
    task: Any = SimpleNamespace(entry_names=lambda: ctx.entry_names)
    try:
        return entry.import_entry(task, path)
    finally:
        if _limit() != _LIMIT:
            _set_limit(_LIMIT)


def run_item(ctx: SimpleNamespace, fn: Any, item: tuple[Any, ...], last: bool) -> None:
    """One case: its calls (and refill), each followed by ``after_call``, then ``end_case``."""
    kind, index, label, seeds, args0, kwargs0, keep, refill, refill_seed, bulk = item
    ctx.send("case", kind=kind, index=index)
    ctx.state["numbers"].clear()
    ctx.state["allow"] = bulk[0]
    before = ctx.state["launches"]
    host, runs, first = 0, [], None
    for seed in seeds:
        if ctx.first is not None:
            args, kwargs = ctx.first
            ctx.first = None
        else:
            args, kwargs = harnessed(ctx, handling.fresh_arguments, args0, kwargs0)
        out = call(ctx, fn, args, kwargs, seed, kind, index)
        host += handling.host_memory(out)
        if keep:
            runs.append(harnessed(ctx, handling.to_host, with_inputs(ctx, out, args)))
        first = first or (args, kwargs)
    if ctx.required and ctx.state["launches"] == before:
        detail = f"{kind} {index} ({label}): no Triton kernel was launched"
        raise CandidateFailure(NO_TRITON, detail)  # type: ignore[arg-type]
    pending = [(kind, index, runs)] if keep else []
    if refill is not None and first is not None:
        args, kwargs = first
        harnessed(
            ctx,
            handling.restore,
            (args, list(kwargs.values())),
            (refill[0], list(refill[1].values())),
        )
        out = call(ctx, fn, args, kwargs, refill_seed, kind, index)
        host += handling.host_memory(out)
        pending.append(
            ("refill", index, [harnessed(ctx, handling.to_host, with_inputs(ctx, out, args))])
        )
    end_case(ctx, kind, index, pending, host, last, bulk)


def with_inputs(ctx: SimpleNamespace, out: Any, args: Any) -> Any:
    """The outputs as judged: with an in-place task, the inputs it writes too."""
    if not ctx.inplace:
        return out
    return (out, tuple(args[i] for i in ctx.inplace))


def call(
    ctx: SimpleNamespace, fn: Any, args: Any, kwargs: Any, seed: int, kind: str, index: int
) -> Any:
    """One seeded call of the candidate, then ``after_call``; its raw output."""
    _manual_seed(seed)
    try:
        try:
            out = fn(*args, **kwargs)
        finally:
            if _limit() != _LIMIT:
                _set_limit(_LIMIT)
        if ctx.cuda:
            _synchronize()
    except BaseException as exc:  # noqa: BLE001 - anything the candidate raises is its verdict
        refused(ctx)
        raise ctx.failure(exc) from None
    after_call(ctx, kind, index)
    return out


def refused(ctx: SimpleNamespace) -> None:
    """A reach for the profiler's session is ``forbidden`` (the evidence itself is in doubt); a
    launch the gate refused makes the call ``no_triton``; whatever the candidate did with the
    exception."""
    if ctx.attempts.get("profiler"):
        raise opcheck.Tampered(
            "it reached for kbx's profiler session (start, stop, settings, or a redispatch"
            " around its recording)"
        )
    if ctx.state["refused"]:
        raise CandidateFailure(NO_TRITON, ctx.state["refused"][0])  # type: ignore[arg-type]


def after_call(ctx: SimpleNamespace, kind: str, index: int) -> None:
    refused(ctx)
    if problems := ctx.snapshot.quick():
        flush(ctx, kind, index)
        raise opcheck.Tampered("left behind in its call: " + "; ".join(problems))


def flush(ctx: SimpleNamespace, kind: str, index: int) -> None:
    """Send the case's op evidence so far (the session ends), before a rejection."""
    if ctx.recorder is None:
        return
    calls = evidence(ctx, 0)
    ctx.send("ops", kind=kind, index=index, calls=top_ops(calls))


def evidence(
    ctx: SimpleNamespace, host: int, bulk: tuple[int, int] | None = None
) -> dict[str, int]:
    """The session's operations (it ends), with the outputs found in host memory (``host``)
    and the DLPack hand-overs counted since the last; its wall time is the ``evidence`` part.
    Where the case allows ``bulk`` values, the elements read into Python and the tensors made
    from numbers in its calls beyond it, as host data."""
    calls = evidence_work(ctx, ctx.recorder.stop)
    host += ctx.transfers.pop("host", 0)
    if host:
        calls[opcheck.HOST_MEMORY] = host
    if bulk is None:
        return calls
    per_call = bulk[1]
    reads = max(calls.get("aten::item", 0), calls.get("aten::_local_scalar_dense", 0))
    if reads > per_call:
        calls[opcheck.READ] = reads
    if (made := sum(calls.get(op, 0) for op in opcheck.FROM_NUMBER)) > per_call:
        calls[opcheck.MADE] = made
    return calls


def evidence_work(ctx: SimpleNamespace, work: Any) -> Any:
    """``work()`` (the recorder's), its wall time added to the ``evidence`` part."""
    began = _monotonic()
    try:
        return work()
    finally:
        ctx.spent["evidence"] += _monotonic() - began


def harnessed(ctx: SimpleNamespace, work: Any, *args: Any) -> Any:
    """kbx's own tensor handling: inside the shield and the recorder's harness range (and on the
    GPU under the shared lock, the quick check made again once it is held)."""
    if ctx.lock is not None:
        with shared(ctx.lock, "kbx's copies"):
            if problems := ctx.snapshot.quick():
                raise opcheck.Tampered("left behind in its call: " + "; ".join(problems))
            return shielded(ctx, work, *args)
    return shielded(ctx, work, *args)


def shielded(ctx: SimpleNamespace, work: Any, *args: Any) -> Any:
    shield = pristine.enter()
    try:
        if ctx.recorder is None:
            return work(*args)
        with ctx.recorder.harness():
            return work(*args)
    finally:
        pristine.leave(shield)


def end_case(
    ctx: SimpleNamespace,
    kind: str,
    index: int,
    pending: list[Any],
    host: int,
    last: bool,
    bulk: tuple[int, int],
) -> None:
    """The case's op evidence, the full check, then (all unchanged) its outputs and the next
    session (none after the last case: no profiler runs while kbx times)."""
    if ctx.recorder is None:
        write(ctx, pending)
        return
    calls = evidence(ctx, host, bulk)
    if problems := ctx.snapshot.full():
        ctx.send("ops", kind=kind, index=index, calls=top_ops(calls))
        raise opcheck.Tampered("left behind in its calls: " + "; ".join(problems))
    calls.update(evidence_work(ctx, ctx.recorder.gpu_calls))
    ctx.send("ops", kind=kind, index=index, calls=top_ops(calls))
    write(ctx, pending)
    if not last:
        evidence_work(ctx, ctx.recorder.start)


def write(ctx: SimpleNamespace, pending: list[Any]) -> None:
    """Each case's outputs to its own file, announced with the hash of its bytes and their
    count: a file the candidate rewrites or replaces afterwards no longer matches."""
    for kind, index, runs in pending:
        name = outputs.file_name(kind, index)
        digest, size = outputs.saved(Path(name), runs)
        ctx.send("output", kind=kind, index=index, file=name, sha256=digest, size=size)


def top_ops(calls: dict[str, int], limit: int = 200) -> dict[str, int]:
    """The most frequent of ``calls``, within the channel's limit on names."""
    ranked = sorted(calls.items(), key=lambda kv: -kv[1])[:limit]
    return {name[:100]: count for name, count in ranked}
