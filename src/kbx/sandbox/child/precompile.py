"""The compile stage of a candidate, ahead of its GPU job: its Triton kernels compiled for the
GPU's target in a child that has no GPU.

A compile child is confined as a GPU child is, but sees no device (``CUDA_VISIBLE_DEVICES`` is
empty) and makes no CUDA context.  It gives Triton a driver that only names the GPU's target
(``CompileOnly``), turns every launch into a compile (``JITFunction.run`` with ``warmup``; an
autotuned kernel compiles every config it would benchmark), and calls the candidate's entry on
each case's inputs on the CPU: the correctness cases' own inputs, and for the benchmark cases
zero-filled tensors of the same shapes, strides and dtypes (made from fake tensors: no
benchmark-sized random draw).  The kernels land in the child's own Triton cache, which the
parent copies into the store of this code on this task (``kbx.sandbox.kernels``), where the
candidate's GPU child finds them, with each kernel's launcher where Triton builds one with the C
compiler (``launches.ready_launcher``).

Nothing here decides a verdict: a launch it could not foresee (a wrapper that insists on CUDA
tensors, a value-dependent specialization) is only a kernel the GPU child compiles itself, and a
wrong guess is an unused cache entry under Triton's own key.  The candidate could write its own
cache in its GPU child already, so this stage opens no way in (docs/design/throughput.md,
Compile ahead).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import torch

from kbx.sandbox.child import launches
from kbx.suite.task import Inputs, Task


class CompileOnly:
    """Triton's active driver in a compile child: device 0, stream 0 and the GPU's target; no
    launch can reach it (``install`` turns launches into compiles)."""

    def __init__(self, arch: int, warp_size: int = 32) -> None:
        from triton.backends.compiler import GPUTarget

        self.target = GPUTarget("cuda", arch, warp_size)

    def is_active(self) -> bool:
        return True

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        pass

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_current_target(self) -> Any:
        return self.target

    def get_active_torch_device(self) -> torch.device:
        return torch.device("cpu")


def install(arch: int) -> None:
    """Triton's driver, launches and autotuning made compile-only in this process."""
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.driver import driver
    from triton.runtime.jit import JITFunction

    driver.set_active(CompileOnly(arch))
    run = JITFunction.run
    launcher = nvidia_launcher()

    def compile_only(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        made = run(self, *args, grid=grid, warmup=True, **kwargs)
        launches.ready_launcher(made, launcher)  # into the cache too: no C compile in the job
        return made

    def every_config(self: Any, *args: Any, **kwargs: Any) -> None:
        """What the autotuner would benchmark, compiled: every config left after pruning."""
        self.nargs = dict(zip(self.arg_names, args, strict=False))
        try:
            configs = self.prune_configs(kwargs) if len(self.configs) > 1 else self.configs
            for config in configs:
                with contextlib.suppress(Exception):  # one config's failure: the others still
                    self.fn.run(*args, **dict(kwargs, warmup=True), **config.all_kwargs())
        finally:
            self.nargs = None

    JITFunction.run = compile_only  # type: ignore[method-assign]
    Autotuner.run = every_config  # type: ignore[method-assign]


def nvidia_launcher() -> Any:
    """Triton's NVIDIA launcher class, which builds a kernel's launcher without a GPU where it
    builds one at all (Triton 3.6: with the C compiler; None where it cannot be imported)."""
    try:
        from triton.backends.nvidia.driver import CudaLauncher

        return CudaLauncher
    except Exception:  # noqa: BLE001 - the job's child builds its launchers itself
        return None


def zeros_like_fake(x: Any) -> Any:
    """A fake tensor as a zero-filled CPU tensor of its shape, strides, offset and dtype (pages
    are touched only where the candidate's wrapper writes); anything else unchanged."""
    from torch._subclasses.fake_tensor import FakeTensor

    if isinstance(x, FakeTensor):
        size = x.untyped_storage().nbytes() // max(1, x.element_size())
        flat = torch.zeros(max(size, 1), dtype=x.dtype)
        return flat.as_strided(tuple(x.shape), tuple(x.stride()), x.storage_offset())
    if isinstance(x, tuple | list):
        return type(x)(zeros_like_fake(v) for v in x)
    if isinstance(x, dict):
        return {k: zeros_like_fake(v) for k, v in x.items()}
    return x


def bench_inputs(task: Task, index: int) -> Inputs | None:
    """A benchmark case's inputs in shape only (None where its inputs depend on values)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    try:
        with FakeTensorMode(allow_non_fake_inputs=True):
            fake = task.make_inputs(task.bench[index], "cpu")
    except Exception:  # noqa: BLE001 - a data-dependent input: its launches compile on the GPU
        return None
    return Inputs(zeros_like_fake(tuple(fake.args)), zeros_like_fake(dict(fake.kwargs)))


def every_input(task: Task, bench: tuple[int, ...]) -> list[Inputs]:
    """The inputs of the calls the GPU child will make: each correctness case's, then each
    checked benchmark case's (in shape)."""
    found = [task.make_inputs(case, "cpu") for case in task.cases]
    found += [x for i in bench if (x := bench_inputs(task, i)) is not None]
    return found


def run(task: Task, bench: tuple[int, ...], arch: int) -> int:
    """Compile what the candidate launches on every case; the calls that ran to their end (the
    parent reads nothing from this child but the kernels in its cache)."""
    from kbx.sandbox.child import entry

    inputs = every_input(task, bench)
    install(arch)
    try:
        fn = entry.import_entry(task, Path(entry.CANDIDATE_PATH).resolve())
    except entry.CandidateFailure:
        return 0
    ran = 0
    for case in inputs:
        try:
            with torch.no_grad():
                fn(*case.args, **dict(case.kwargs))
            ran += 1
        except Exception:  # noqa: BLE001, S112 - its GPU child compiles what this missed
            continue
    return ran
