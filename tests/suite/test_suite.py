"""The suite: ids, categories and entry names agree with the released task list."""

import csv

import pytest
import torch

from kbx.suite import find, load_errors, load_suite, select
from kbx.suite.tensors import leaves
from tests.conftest import ROOT, SHARED

SLICE = {
    "Activation/gelu",
    "Convolution/conv2d",
    "Fusion/fused_bmm_dropout_gelu",
    "Index/scatter",
    "LinearAlgebra/qr",
    "Loss/cross_entropy",
    "Math/rsqrt",
    "MatrixMultiply/matmul",
    "Normalization/batch_norm",
    "Optimizer/AdamW",
    "Pooling/avg_pool1d",
    "Quantization/matmul_w8a8",
    "Random/rand",
    "Reduce/sum",
    "SpatialOps/interpolate",
}


def released() -> dict[str, dict[str, str]]:
    path = SHARED / "tasks.tsv"
    if not path.exists():
        pytest.skip(f"{path} not present")
    with path.open() as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return {f"{r['category']}/{r['name']}": r for r in rows}


def test_every_task_file_loads():
    assert not load_errors()


def test_first_slice_is_present():
    assert set(load_suite()) >= SLICE


def test_ids_categories_and_entries_match_the_release():
    rel = released()
    for task in load_suite().values():
        assert task.id in rel, task.id
        row = rel[task.id]
        released_entry = row["top_level_definitions_of_the_reference"].split("(")[0].strip()
        assert released_entry in task.entry_names(), (task.id, released_entry)
        assert task.paper == (row["in_paper_176"] == "yes")


def test_every_task_has_cases_bench_and_a_contract():
    for task in load_suite().values():
        assert len(task.cases) >= 4, task.id
        assert task.bench, task.id
        assert task.precision and task.description, task.id
        for case in task.bench:
            assert task.flops(case) >= 0 and task.bytes_moved(case) > 0, task.id


def test_find_and_select():
    assert find("gelu") is find("Activation/gelu") is find("Activation/gelu.py")
    assert find("no_such_task") is None
    assert {t.id for t in select("Activation/*")} == {
        t.id for t in load_suite().values() if t.category == "Activation"
    }


# Redesigns that change the parameter list, each recorded in docs/design/task-changes.md.
CHANGED_PARAMETERS = {
    "Activation/gelu_int8",  # + input_scale, output_scale: a real int8 contract
    "Fusion/fused_fractional_max_pool2d_with_relu",  # + _random_samples: deterministic regions
    "Fusion/fused_svd_reconstruct",  # + rank: the released task returned A itself
    "Optimizer/Adam",  # a real update step instead of a torch.optim.Adam object
}


def parameter_names(signature: str) -> list[str]:
    inside = signature[signature.index("(") + 1 : signature.rindex(")")]
    names, depth, current = [], 0, ""
    for ch in inside + ",":
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            name = current.split(":")[0].split("=")[0].strip()
            if name and name != "*":
                names.append(name)
            current = ""
        else:
            current += ch
    return names


def test_parameters_match_the_release_except_documented_redesigns():
    rel = released()
    changed = {
        t.id
        for t in load_suite().values()
        if parameter_names(t.signature)
        != parameter_names(rel[t.id]["top_level_definitions_of_the_reference"])
    }
    assert changed == CHANGED_PARAMETERS
    notes = (ROOT / "docs" / "design" / "task-changes.md").read_text()
    assert all(task_id.split("/")[1] in notes for task_id in CHANGED_PARAMETERS)


def test_fused_mul_add_dropout_bmm_recovers_what_pinv_does():
    """Its check recovers the dropped log-softmax through a Cholesky factor of mat2's Gram
    matrix instead of pinv's SVD (seconds a call on the GPU at benchmark sizes)."""
    import importlib

    import torch

    task = find("Fusion/fused_mul_add_logsoftmax_dropout_bmm")
    module = importlib.import_module("kbx.tasks.Fusion.fused_mul_add_logsoftmax_dropout_bmm")
    for case in task.cases:
        inputs = task.make_inputs(case, "cpu")
        m = inputs.args[3].double()
        y = torch.randn(*m.shape[:1], case.shape[1], m.shape[1], dtype=torch.float64) @ m
        want = y @ torch.linalg.pinv(m)
        assert torch.allclose(module.recover(y, m), want, rtol=1e-10, atol=1e-12)


def tensor_bytes(value) -> int:
    """The bytes of every tensor in a call's arguments or result (nested in tuples and lists)."""
    return sum(t.numel() * t.element_size() for t in leaves(value))


def test_held_bytes_are_near_what_a_call_holds():
    """``Task.held_bytes`` sizes output caps and GPU reservations: for every correctness case it
    covers the output and stays within a small multiple of every tensor the call holds, and
    building its inputs leaves torch's generator alone (a random task's seed and draw may be
    under way in another thread).  The product of a matmul's (M, K, N) counted as a tensor made
    the H100's fresh run reserve 928 TB for one task, which then ran alone
    (docs/design/memory.md)."""
    far = []
    for task in load_suite().values():
        for case in task.cases:
            state = torch.get_rng_state()
            made = task.make_inputs(case, "cpu")
            if not torch.equal(torch.get_rng_state(), state):  # Task.shaped builds inputs
                far.append(f"{task.id} {case.shape}: its inputs draw from torch's generator")
            held = tensor_bytes([*made.args, *made.kwargs.values()])
            out = tensor_bytes(task.reference(*made.args, **made.kwargs))
            estimate = task.held_bytes(case)
            if not out <= estimate <= 8 * (held + out) + (64 << 10):
                far.append(f"{task.id} {case.shape}: {estimate} for {held} + {out}")
        for case in task.bench:  # a 24 GB card runs every benchmark case, with room for two
            if task.held_bytes(case) > 8 << 30:
                far.append(f"{task.id} {case.shape}: {task.held_bytes(case)} for a benchmark case")
    assert not far, far
