"""The op evidence: what the candidate computed with torch, on the CPU for real, and the
GPU-time share from profiler events (the GPU run belongs to the GPU validation issue)."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from kbx.sandbox import evidence
from kbx.sandbox.child import opcheck
from kbx.sandbox.wire import channel
from tests.conftest import ROOT


def test_torch_compute_is_recorded_and_kbx_ranges_and_glue_are_not():
    recorder = opcheck.recorder()
    x = torch.randn(64)
    recorder.start()
    with recorder.harness():
        x.clone().mul(2)  # kbx's own work: left out
    y = torch.empty_like(x).view(8, 8)  # glue
    torch.nn.functional.gelu(x)  # the candidate's compute
    calls = recorder.stop()
    assert evidence.compute_ops(calls) == {"aten::gelu": 1}
    assert "aten::mul" not in calls and y.shape == (8, 8)


def test_a_range_named_like_kbx_s_hides_nothing_and_a_copied_name_is_tampering():
    """kbx's range names are drawn as they open; a public prefix hides nothing, and a name
    the candidate saw (from a second profiler of its own) makes two events of it."""
    recorder = opcheck.recorder()
    x = torch.randn(64)
    recorder.start()
    with torch.profiler.record_function("kbx::harness"), torch.profiler.record_function("kbx::"):
        torch.tanh(x)
    assert evidence.compute_ops(recorder.stop()) == {"aten::tanh": 1}
    recorder.start()
    mark = recorder.harness()
    with mark:
        pass
    (name,) = [n for n in recorder.names() if n.startswith("kbx::harness:")]
    with torch.profiler.record_function(name):
        torch.tanh(x)
    with pytest.raises(opcheck.Tampered):
        recorder.stop()


def test_a_stopped_or_restarted_session_is_tampering():
    recorder = opcheck.recorder()
    recorder.start()
    torch.autograd._disable_profiler()
    with pytest.raises(opcheck.Tampered):
        recorder.stop()


def test_operations_nested_in_glue_count_as_the_candidate_s():
    """A Python kernel the candidate registers for a glue operation computes inside it: the
    nested operation is reported (the parent calls it compute)."""
    library = torch._C._dispatch_library("IMPL", "aten", "", "test", 1)

    def zeros_like(x, **kwargs):
        return torch.sigmoid(x)

    recorder = opcheck.recorder()
    x = torch.randn(8)
    try:
        library.impl("zeros_like", "CPU", zeros_like, False)
        recorder.start()
        torch.zeros_like(x)
        calls = recorder.stop()
    finally:
        del library
    assert evidence.compute_ops(calls) == {"aten::sigmoid": 1}


def test_launches_and_python_numbers_written_one_by_one_are_counted():
    recorder = opcheck.recorder()
    out = torch.zeros(4)
    recorder.start()
    with recorder.launches():
        pass
    out.zero_()  # an allocation's fill: glue
    for i in range(3):
        out[i].fill_(float(i))  # a number written into a view just made
    calls = recorder.stop()
    assert calls[opcheck.LAUNCHES] == 1 and calls[opcheck.WRITTEN] == 3
    assert evidence.host_ops(calls) == {opcheck.WRITTEN: 3}


def test_the_fill_of_a_zero_is_the_zero_s_and_no_tensor_made_from_a_number():
    """torch's zero_ calls fill_(0) for a large tensor (on the GPU always): Triton's autotuning
    zeroes its L2 buffer before each benchmarked call, hundreds in bulk; a fill_ of its own
    still counts."""
    recorder = opcheck.recorder()
    big = torch.ones(1 << 16)
    recorder.start()
    for _ in range(300):
        big.zero_()
    big.fill_(2.0)
    calls = recorder.stop()
    assert calls["aten::zero_"] == 300 and calls["aten::fill_"] == 1
    assert sum(calls.get(op, 0) for op in opcheck.FROM_NUMBER) == 1
    assert evidence.compute_ops(calls) == {}


def test_a_zero_of_the_candidate_s_own_that_fills_counts_every_fill():
    """A Python kernel registered for zero_ that writes numbers one by one, or fills many times,
    inside it: only torch's own zero_ (one fill_ and nothing else) is exempt."""
    library = torch._C._dispatch_library("IMPL", "aten", "", "test", 1)

    def zero_(x):
        flat = x.view(-1)
        for i in range(flat.numel()):
            flat[i].fill_(float(i))  # a number written into a view, inside zero_
        for _ in range(3):
            x.fill_(7.0)  # bulk fills inside zero_
        return x

    recorder = opcheck.recorder()
    x = torch.ones(5)
    try:
        library.impl("zero_", "CPU", zero_, False)
        recorder.start()
        x.zero_()
        calls = recorder.stop()
    finally:
        del library
    assert calls.get(opcheck.WRITTEN) == 5 and calls.get("aten::fill_") == 3


def test_a_tensor_read_into_numpy_or_made_from_it_is_host_data():
    recorder = opcheck.recorder()
    x = torch.randn(8)
    recorder.start()
    torch._C.TensorBase.numpy(x)  # the C method under the name kbx once hooked
    torch.from_numpy(np.ones(3))
    calls = recorder.stop()
    assert set(evidence.host_ops(calls)) == {
        "aten::resolve_conj",
        "aten::resolve_neg",
        "aten::lift_fresh",
    }


def test_the_profiler_s_controls_dlpack_and_a_storage_s_raw_transfers_are_sealed(tmp_path):
    """Run in a child process: sealing replaces torch's functions for the rest of its life; one
    that turns RecordFunction off, and an operator's redispatch (the session would hear of no
    operation), are refused too; a storage's bytes written to a file object or made from a
    buffer (no aten operation either) count as host memory, as DLPack does."""
    code = """
import io, numpy as np, torch
from kbx.sandbox.child import opcheck
recorder = opcheck.recorder()
attempts, transfers = {}, {}
opcheck.seal(attempts, transfers)
recorder.start()
quiet = torch._C._autograd._enable_record_function
cpu = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
around = lambda: torch.ops.aten.tanh.default.redispatch(cpu, torch.ones(3))
for silence in (torch.autograd._disable_profiler, lambda: quiet(False), around):
    try:
        silence()
    except RuntimeError:
        pass
np.from_dlpack(torch.ones(3))
torch.ones(3).untyped_storage()._write_file(io.BytesIO(), False, False, 4)
torch._C.StorageBase.from_buffer(b"1234", "little", dtype=torch.uint8)
calls = recorder.stop()
print(attempts, transfers, 'aten::ones' in calls)
"""
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert "{'profiler': 3} {'host': 3} True" in done.stdout, done.stderr[-2000:]


def kernel(name: str, us: int, kind: str = "kernel") -> SimpleNamespace:
    return SimpleNamespace(
        name=name,
        device_type="DeviceType.CUDA",
        activity_type=kind,
        is_user_annotation=kind == "gpu_user_annotation",
        time_range=SimpleNamespace(elapsed_us=lambda: us),
    )


def cpu_op(name: str, kernels: list[SimpleNamespace], parent: object = None) -> SimpleNamespace:
    """A CPU event with the kernels the profiler linked to it (``FunctionEvent.kernels``)."""
    linked = [SimpleNamespace(name=k.name, duration=k.time_range.elapsed_us()) for k in kernels]
    return SimpleNamespace(
        name=name, device_type="DeviceType.CPU", kernels=linked, cpu_parent=parent
    )


SKIP = ("kbx::harness:t0", "kbx::launch:t0")


def test_the_gpu_time_share_counts_triton_kernels_against_the_candidate_s_torch_kernels():
    torch_kernel = kernel("elementwise_kernel", 300)
    events = [kernel("_gelu_kernel", 700), torch_kernel, cpu_op("aten::copy_", [torch_kernel])]
    calls = opcheck.gpu_times(events, SKIP, {"_gelu_kernel"})
    assert calls == {channel.TRITON_US: 700, channel.OTHER_US: 300}
    assert evidence.triton_share(calls) == 0.7 and calls == {}
    decoy = opcheck.gpu_times([kernel("_copy_one", 2), *events[1:]], SKIP, {"_copy_one"})
    assert evidence.triton_share(decoy) < evidence.MIN_TRITON_SHARE
    assert evidence.triton_share({}) is None  # the CPU: no GPU time recorded


def test_a_kernel_no_torch_operation_launched_counts_against_the_share():
    """A one-element Triton decoy beside a CUDA kernel of an extension the candidate built
    (``tests/exploits_gpu/load_inline``): the profiler links that kernel to no operation."""
    events = [kernel("_copy_one", 2), kernel("relu_kernel", 130)]
    share = evidence.triton_share(opcheck.gpu_times(events, SKIP, {"_copy_one"}))
    assert share is not None and share < evidence.MIN_TRITON_SHARE


def test_kbx_s_own_copies_and_the_gpu_spans_of_ranges_do_not_count():
    copy = kernel("Memcpy DtoH (Device -> Pageable)", 900, "gpu_memcpy")
    harness = cpu_op(SKIP[0], [])
    inside = cpu_op("aten::copy_", [copy], parent=cpu_op("aten::to", [], parent=harness))
    span = kernel("mine", 5_000, "gpu_user_annotation")  # a range the candidate opened
    named = kernel("_gelu_kernel", 4_000, "gpu_user_annotation")  # ... named like its kernel
    events = [kernel("_gelu_kernel", 700), copy, harness, inside, span, named]
    calls = opcheck.gpu_times(events, SKIP, {"_gelu_kernel"})
    assert calls == {channel.TRITON_US: 700, channel.OTHER_US: 0}
    outside = cpu_op("aten::copy_", [copy], parent=cpu_op("mine", []))  # the candidate's copy
    calls = opcheck.gpu_times([*events[:2], outside], SKIP, {"_gelu_kernel"})
    assert calls == {channel.TRITON_US: 700, channel.OTHER_US: 900}


def test_the_share_is_judged_over_all_the_cases_together():
    """A correctness case of a few thousand elements: a fill beside a 2 us kernel decides its
    own share, but the benchmark cases hold most of the GPU time; a decoy beside torch compute
    is under the bar either way."""
    honest = [(2, 30), (3, 25), (4_000, 700), (9_000, 1_200)]  # (triton, torch) per case
    assert min(t / (t + o) for t, o in honest) < evidence.MIN_TRITON_SHARE
    share = evidence.overall_share(sum(t for t, _ in honest), sum(o for _, o in honest))
    assert share is not None and share > 0.8
    decoy = [(2, 30), (2, 5_000), (2, 9_000)]
    share = evidence.overall_share(sum(t for t, _ in decoy), sum(o for _, o in decoy))
    assert share is not None and share < evidence.MIN_TRITON_SHARE
    assert evidence.overall_share(0, 0) is None  # the CPU: no GPU time recorded
