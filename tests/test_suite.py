"""The suite: ids, categories and entry names agree with the released task list."""

import csv

import pytest

from kbx.suite import LOAD_ERRORS, find, load_suite, select
from tests.conftest import SHARED

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
    load_suite()
    assert not LOAD_ERRORS


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
