"""Child-side stages: import the candidate, call it on every case, time the benchmark cases.

Used by ``child.py`` inside the sandbox.  Failures of the candidate become ``CandidateFailure``
with a verdict and a one-line detail that names the candidate's file and line.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import traceback
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch

from kbx.evaluate.launches import LaunchCounter
from kbx.runtime.gpulock import shared
from kbx.task import Case, Inputs, Task
from kbx.verdict import Verdict

ENTRY_FALLBACK = "kernel_function"  # KernelBench-X's generic entry name
REFILL_SEED = 7_919_000  # offset of the seed a correctness case is redrawn from for its refill
CANDIDATE_PATH = "candidate.py"  # in the child's working folder
GPU_LOCK: str | None = None
Harness = Callable[
    [], AbstractContextManager[Any]
]  # marks kbx's own torch work (``opcheck``)  # the per-GPU lock file, set by the child on CUDA


class Sender(Protocol):
    def send(self, event: str, **fields: Any) -> None: ...


class CandidateFailure(Exception):
    def __init__(self, verdict: Verdict, detail: str) -> None:
        super().__init__(detail)
        self.verdict, self.detail = verdict, detail


@dataclass
class Plan:
    """Inputs of every case, built before the candidate is imported; for each correctness case
    also a refill: the same case from another seed, written into the first call's buffers for a
    second call (a result cached by input address then comes back stale)."""

    device: str
    cases: list[tuple[Case, Inputs]]
    bench: list[tuple[Case, Inputs]]
    refills: list[Inputs | None]
    bench_refills: list[Inputs | None]
    timed: bool = False  # benchmark cases will be timed (and their timed outputs judged)
    bench_index: list[int] = dataclasses.field(default_factory=list)  # task.bench index of each
    harness: Harness = nullcontext  # set by the child before the candidate is imported

    @classmethod
    def build(
        cls,
        task: Task,
        device: str,
        bench: bool | Sequence[int],
        timed: bool = False,
        guard: Callable[[], AbstractContextManager[Any]] = nullcontext,
    ) -> Plan:
        """Benchmark cases are checked too where they are affordable (``bench``: all of them,
        none, or those of these indices); their refills (the contents timed calls alternate
        with) only when they are timed.  Each input
        set is built inside its own ``guard()`` (in the child, ``gpuops.gpu_ops_locked``: its GPU
        work under the shared GPU lock, its heavy CPU work outside it)."""

        def make(case: Case) -> Inputs:
            with guard():
                return task.make_inputs(case, device)

        cases = [(c, make(c)) for c in task.cases]
        chosen = bench_indices(task, bench)
        large = [(task.bench[i], make(task.bench[i])) for i in chosen]
        refills = [refill_inputs(c, inputs, make) for c, inputs in cases]
        bench_refills = [refill_inputs(c, inputs, make) if timed else None for c, inputs in large]
        return cls(device, cases, large, refills, bench_refills, timed, chosen)


def bench_indices(task: Task, bench: bool | Sequence[int]) -> list[int]:
    if isinstance(bench, bool):
        return list(range(len(task.bench))) if bench else []
    return [i for i in bench if 0 <= i < len(task.bench)]


def refill_case(case: Case) -> Case:
    return dataclasses.replace(case, seed=case.seed + REFILL_SEED)


def refill_inputs(case: Case, inputs: Inputs, make: Callable[[Case], Inputs]) -> Inputs | None:
    """The case drawn from another seed (by ``make``), if it fits the same buffers (same tensor
    shapes and dtypes, same other arguments); None otherwise."""
    other = make(refill_case(case))
    return other if same_layout(inputs, other) else None


def same_layout(a: Inputs, b: Inputs) -> bool:
    def layout(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            return ("tensor", tuple(x.shape), x.dtype, x.device)
        if isinstance(x, tuple | list):
            return tuple(layout(v) for v in x)
        return repr(x)

    return layout((a.args, dict(a.kwargs))) == layout((b.args, dict(b.kwargs)))


def full_fp32() -> None:
    """TF32 off for cuBLAS and cuDNN: float32 contractions in full float32, as the tasks'
    precision contracts say (docs/design/tolerances.md).  Every process that runs references,
    baselines or candidates calls this."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def import_entry(task: Task, path: Path) -> Callable[..., Any]:
    spec = importlib.util.spec_from_file_location("kbx_candidate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - SystemExit at import is the candidate's fault
        raise CandidateFailure(Verdict.IMPORT_FAILED, explain(exc, path)) from None
    for name in (*task.entry_names(), ENTRY_FALLBACK):
        fn = getattr(module, name, None)
        if callable(fn):
            return fn  # type: ignore[no-any-return]
    names = " or ".join(repr(n) for n in (*task.entry_names(), ENTRY_FALLBACK))
    raise CandidateFailure(Verdict.NO_ENTRY, f"the code defines no function named {names}")


def clone(x: Any) -> Any:
    """Fresh copies of every tensor in nested tuples, lists and dicts (keyword arguments: a
    shallow dict copy would share their tensors between copies and with the case itself)."""
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, tuple | list):
        return type(x)(clone(v) for v in x)
    if isinstance(x, dict):
        return {k: clone(v) for k, v in x.items()}
    return x


def detached(x: Any) -> Any:
    """Outputs as plain tensors (on their device) and scalars, like ``to_cpu`` otherwise."""
    if (name := subclass(x)) is not None:
        return name
    if isinstance(x, torch.Tensor):
        return x.detach().as_subclass(torch.Tensor)
    if isinstance(x, tuple | list):
        return tuple(detached(v) for v in x)
    return to_cpu(x)


def subclass(x: Any) -> str | None:
    """The placeholder of a tensor subclass: an output must be a plain tensor (a subclass runs
    its own code when kbx copies it, inside kbx's harness)."""
    if isinstance(x, torch.Tensor) and type(x) is not torch.Tensor:
        return f"<tensor subclass {type(x).__name__}>"
    return None


def to_cpu(x: Any) -> Any:
    """Outputs as plain CPU tensors and scalars: anything else is reported by its type name."""
    if (name := subclass(x)) is not None:
        return name
    if isinstance(x, torch.Tensor):
        t = x.detach().as_subclass(torch.Tensor)
        # from the GPU .cpu() is already a new tensor of its own size (a second copy of a large
        # output cost ~0.1 s under the GPU lock); on the CPU it would be the candidate's own
        return t.cpu() if t.is_cuda else t.clone()
    if isinstance(x, tuple | list):
        return tuple(to_cpu(v) for v in x)
    if x is None or isinstance(x, bool | int | float | complex | str):
        return x
    return f"<object of type {type(x).__name__}>"


def fresh_arguments(inputs: Inputs) -> tuple[Any, dict[str, Any]]:
    """Copies of a case's positional and keyword arguments, every tensor its own."""
    return clone(inputs.args), clone(dict(inputs.kwargs))


def copies(inputs: Inputs, harness: Harness = nullcontext) -> tuple[Any, dict[str, Any]]:
    """``fresh_arguments`` in a candidate's child (a GPU copy: under the shared lock)."""
    with shared(GPU_LOCK, "inputs in"), harness():
        return fresh_arguments(inputs)


def call(
    task: Task,
    entry: Callable[..., Any],
    inputs: Inputs,
    seed: int,
    device: str,
    harness: Harness = nullcontext,
) -> Any:
    """One call on fresh copies of the inputs, seeded; returns outputs on the CPU."""
    return call_on(task, entry, *copies(inputs, harness), seed, device, harness=harness)


def call_on(
    task: Task,
    entry: Callable[..., Any],
    args: Any,
    kwargs: dict[str, Any],
    seed: int,
    device: str,
    keep: bool = True,
    harness: Harness = nullcontext,
) -> Any:
    """One seeded call on these very buffers; returns outputs on the CPU (None without
    ``keep``: the call only has to finish)."""
    torch.manual_seed(seed)
    try:
        out = entry(*args, **kwargs)  # its launches take the GPU lock themselves
        with shared(GPU_LOCK, "call ends"):
            if device == "cuda":
                torch.cuda.synchronize()
        if not keep:
            return None
        if task.inplace:
            out = (out, tuple(args[i] for i in task.inplace))
        with harness():
            return copy_out(out, "outputs out")
    except BaseException as exc:  # noqa: BLE001 - anything the candidate raises is its verdict
        raise CandidateFailure(classify(exc), explain(exc, Path(CANDIDATE_PATH))) from None


COPY_CHUNK_BYTES = 64 << 20  # one shared hold per chunk of a large output copied to the host


def copy_out(x: Any, what: str) -> Any:
    """``to_cpu`` in a candidate's child: a GPU tensor is copied under the shared lock in chunks
    of COPY_CHUNK_BYTES, each its own hold, so that a timing elsewhere waits for one chunk
    (milliseconds) rather than for a whole output of hundreds of MB."""
    if isinstance(x, tuple | list):
        return tuple(copy_out(v, what) for v in x)
    if subclass(x) is not None or not (isinstance(x, torch.Tensor) and x.is_cuda):
        return to_cpu(x)
    t = x.detach().as_subclass(torch.Tensor)
    if t.nbytes <= COPY_CHUNK_BYTES or not t.is_contiguous():
        with shared(GPU_LOCK, what):
            return t.cpu()
    # its pages faulted in here, unlocked: first touches cost more than the copy itself
    # (docs/design/throughput.md, GPU lock and timing turns)
    host = torch.empty(t.shape, dtype=t.dtype).zero_()
    src, dst = t.view(-1), host.view(-1)
    step = max(1, COPY_CHUNK_BYTES // t.element_size())
    for start in range(0, src.numel(), step):
        with shared(GPU_LOCK, what):
            dst[start : start + step].copy_(src[start : start + step])
    return host


Sink = Callable[[str, int, list[Any]], None]  # kind, index, runs: a case's outputs, as made


def run_cases(
    task: Task,
    plan: Plan,
    entry: Callable[..., Any],
    counter: LaunchCounter,
    channel: Sender,
    lock: str | None = None,
    sink: Sink | None = None,
    after: Callable[[str, int], None] | None = None,
) -> dict[str, list[Any]]:
    """Every correctness case and each planned benchmark case, with its refill; each case's
    outputs go to ``sink`` as they are made (else they are returned, by kind), and ``after`` is
    told when a case's calls are over.  The GPU lock is taken per launch and per copy, never
    across a compile."""
    global GPU_LOCK
    GPU_LOCK = lock
    results: dict[str, list[Any]] = {"cases": [], "bench": [], "refill": []}

    def keep(kind: str, index: int, runs: list[Any]) -> None:
        if sink is not None:
            sink(kind, index, runs)
        else:
            results[kind].append(runs)

    items = [("cases", i, c, x) for i, (c, x) in enumerate(plan.cases)]
    items += [("bench", i, c, x) for i, (c, x) in zip(plan.bench_index, plan.bench, strict=True)]
    for kind, i, case, inputs in items:
        channel.send("case", kind=kind, index=i)
        outs, buffers = call_case(task, plan, entry, counter, kind, i, case, inputs)
        if outs is not None:
            keep(kind, i, outs)
        elif sink is None:
            results[kind].append([])  # [] is not judged
        refill = plan.refills[i] if kind == "cases" else None
        if refill is not None:  # new contents at the same addresses
            keep("refill", i, [call_refilled(task, plan, entry, case, buffers, refill)])
        elif kind == "cases" and sink is None:
            results["refill"].append([])
        if after is not None:
            after(kind, i)
    return results


def call_case(
    task: Task,
    plan: Plan,
    entry: Callable[..., Any],
    counter: LaunchCounter,
    kind: str,
    index: int,
    case: Case,
    inputs: Inputs,
) -> tuple[list[Any] | None, tuple[Any, dict[str, Any]]]:
    """A case's calls (three for a random task: its seed, the same again, another) and the
    buffers of the first; the outputs are None where they are not judged (a timed benchmark
    case is judged on its timed output instead: this first call's output, hundreds of MB, is
    neither copied out nor judged)."""
    before = counter.launches
    seed = case.torch_seed
    args, kwargs = copies(inputs, plan.harness)
    keep = kind == "cases" or task.random or not plan.timed
    outs = [call_on(task, entry, args, kwargs, seed, plan.device, keep, plan.harness)]
    if task.random:  # the same seed again must repeat; another must not
        outs += [
            call(task, entry, inputs, s, plan.device, plan.harness) for s in (seed, seed + 7919)
        ]
    if counter.required and counter.launches == before:
        raise CandidateFailure(
            Verdict.NO_TRITON, f"{kind} {index} ({case.label()}): no Triton kernel was launched"
        )
    return (outs if keep else None), (args, kwargs)


def call_refilled(
    task: Task,
    plan: Plan,
    entry: Callable[..., Any],
    case: Case,
    buffers: tuple[Any, dict[str, Any]],
    refill: Inputs,
) -> Any:
    """A call on the first call's very ``buffers``, refilled with the case drawn from another
    seed."""
    args, kwargs = buffers
    new = (refill.args, list(refill.kwargs.values()))
    with shared(GPU_LOCK, "refill"), plan.harness():
        restore((args, list(kwargs.values())), new)
    seed = refill_case(case).torch_seed
    return call_on(task, entry, args, kwargs, seed, plan.device, harness=plan.harness)


def leaves(x: Any) -> list[Any]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, tuple | list):
        return [t for v in x for t in leaves(v)]
    return []


def restore(dst: Any, src: Any) -> None:
    for d, s in zip(leaves(dst), leaves(src), strict=True):
        d.copy_(s)


def classify(exc: BaseException) -> Verdict:
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, MemoryError | torch.OutOfMemoryError) or any(
        m in text for m in ("out of memory", "can't allocate memory")
    ):
        return Verdict.OUT_OF_MEMORY
    if "illegal memory access" in text or "CUDA error" in text or "device-side assert" in text:
        return Verdict.CRASHED  # the CUDA context is poisoned: nothing after this is trustworthy
    names = {c.__name__ for c in type(exc).__mro__}
    # On the CPU an error inside an interpreted kernel body (InterpreterError) is what the GPU
    # compiler would have rejected: both are compile_failed.
    if names & {"CompilationError", "CompileTimeAssertionFailure", "InterpreterError"}:
        return Verdict.COMPILE_FAILED
    return Verdict.RUNTIME_ERROR


def explain(exc: BaseException, path: Path) -> str:
    """``Type: message (candidate.py line N)`` with the innermost line of the candidate's file."""
    message = " ".join(str(exc).split())[:400]
    if isinstance(exc, SyntaxError):  # its message already names the file and line
        return f"{type(exc).__name__}: {message}"
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).name == path.name:
            line = frame.lineno
    where = f" ({path.name} line {line})" if line else ""
    return f"{type(exc).__name__}: {message}{where}"
