"""The op evidence: what the candidate computed with torch, on the CPU for real, and the
GPU-time share from profiler events (the GPU run belongs to the GPU validation issue)."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import torch

from kbx.sandbox import evidence
from kbx.sandbox.child import opcheck
from kbx.sandbox.wire import channel


def test_torch_compute_is_recorded_and_kbx_ranges_and_glue_are_not():
    recorder = opcheck.OpRecorder()
    x = torch.randn(64)
    recorder.start()
    with recorder.harness():
        x.clone().mul(2)  # kbx's own work: left out
    y = torch.empty_like(x).view(8, 8)  # glue
    torch.nn.functional.gelu(x)  # the candidate's compute
    calls = recorder.stop()
    assert evidence.compute_ops(calls) == {"aten::gelu": 1}
    assert "aten::mul" not in calls and y.shape == (8, 8)


def test_a_range_named_like_kbx_s_public_names_hides_nothing():
    recorder = opcheck.OpRecorder()
    x = torch.randn(64)
    recorder.start()
    with (
        torch.profiler.record_function("kbx::harness"),
        torch.profiler.record_function("kbx::launch"),
    ):
        torch.tanh(x)
    assert evidence.compute_ops(recorder.stop()) == {"aten::tanh": 1}


def test_a_stopped_or_restarted_session_is_tampering():
    recorder = opcheck.OpRecorder()
    recorder.start()
    torch.autograd._disable_profiler()
    try:
        recorder.stop()
        raise AssertionError("not caught")
    except opcheck.Tampered:
        pass


def test_copies_into_numpy_outside_a_launch_are_counted():
    recorder = opcheck.OpRecorder()
    inside = [False]
    intact = recorder.watch_python_reads(lambda: not inside[0])
    recorder.start()
    torch.ones(3).numpy()
    inside[0] = True
    torch.ones(3).tolist()  # inside a launch: the interpreter's own
    calls = recorder.stop()
    assert calls["kbx::python_read"] == 1 and intact()


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


def test_candidate_code_kbx_calls_inside_a_launch_range_counts():
    """A grid function runs inside the launch: its torch work counts (tests/exploits/grid_compute)
    while kbx's own inside the same launch range does not."""
    recorder = opcheck.OpRecorder()
    x = torch.randn(64)
    recorder.start()
    with recorder.launch():
        torch.tanh(x)  # kbx's libdevice stand-in in the interpreter
        with recorder.candidate():
            torch.sigmoid(x)  # the candidate's grid function
    assert evidence.compute_ops(recorder.stop()) == {"aten::sigmoid": 1}


def test_on_the_gpu_a_launch_has_no_range():
    """kbx runs no torch work inside a launch on the GPU, so nothing there is left out."""
    assert isinstance(opcheck.OpRecorder(gpu=True).launch(), contextlib.nullcontext)
    assert not isinstance(opcheck.OpRecorder().launch(), contextlib.nullcontext)


def test_a_kernel_of_candidate_code_inside_a_launch_range_counts_against_the_share():
    copy = kernel("elementwise_kernel", 900)
    launch = cpu_op(SKIP[1], [])
    inside = cpu_op("aten::sigmoid", [copy], parent=cpu_op("kbx::candidate:t0", [], parent=launch))
    events = [kernel("_copy_one", 2), copy, launch, inside]
    calls = opcheck.gpu_times(events, SKIP, {"_copy_one"}, ("kbx::candidate:t0",))
    assert calls == {channel.TRITON_US: 2, channel.OTHER_US: 900}
    hidden = cpu_op("aten::sigmoid", [copy], parent=launch)
    calls = opcheck.gpu_times([*events[:3], hidden], SKIP, {"_copy_one"}, ("kbx::candidate:t0",))
    assert calls == {channel.TRITON_US: 2, channel.OTHER_US: 0}
