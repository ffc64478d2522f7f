"""The bytes_moved audit: no task declares more bytes than its cases must move (the roofline's
floor takes the declared bytes as a lower bound, docs/design/timing.md), and the measure it
uses counts what an honest kernel needs: repeated rows once, unread rows and masked-off
elements not at all."""

import dataclasses
import time

import pytest
import torch

from kbx.audit.traffic import SECTOR, audit, traffic
from kbx.suite import find, load_suite
from kbx.suite.inputs import numel


def test_no_task_declares_more_than_its_cases_must_move():
    """Every correctness case of the suite, measured from its seeded inputs on the CPU: the
    declared bytes are at most the bytes the reference's inputs and outputs need (within 1%,
    for an in-place write's sectors).  The cases share the benchmark cases' structure (indices
    with repeats, masks, broadcast operands, in-place partial writes); the draws' counts at the
    benchmark sizes are taken 3 sigma low (kbx.suite.moved).  Under a minute of CPU in CI (~10 s
    here, one thread)."""
    began = time.process_time()
    torch.set_num_threads(1)
    rows = audit(list(load_suite().values()))
    over = [r.line() for r in rows if r.over]
    assert not over, "\n".join(over)
    assert len(rows) > 5 * 150 and time.process_time() - began < 60


def test_index_fill_s_old_declaration_is_caught():
    """index_fill_ counted m slices written; its m indices repeat, so fewer slices are (the
    H100's too_fast, issue 45)."""
    task = find("Index/index_fill_")
    old = dataclasses.replace(
        task,
        bytes_moved=lambda c: (
            4.0 * numel(c.shape) // c.shape[c.params["dim"]] * c.params["m"] + 8.0 * c.params["m"]
        ),
    )
    assert any(traffic(old, case).over for case in old.cases)
    assert not any(traffic(task, case).over for case in task.cases)


def test_a_declaration_of_two_passes_is_caught():
    """A fused kernel reads its input once: a declaration of two passes is above the measure."""
    task = find("Activation/gelu")
    twice = dataclasses.replace(task, bytes_moved=lambda c: 2 * task.bytes_moved(c))
    assert all(traffic(twice, case).over for case in twice.cases)


@pytest.mark.parametrize(
    ("task_id", "index", "unread"),
    [
        ("Index/index_select", 0, "input rows no index names"),
        ("Index/masked_select", 1, "elements the mask drops"),
        ("Index/index_fill_", 0, "the old contents of filled slices"),
    ],
)
def test_reads_count_only_what_the_outputs_need(task_id, index, unread):
    task = find(task_id)
    case = task.cases[index]
    x = task.make_inputs(case, "cpu").args[1 if task_id == "Index/index_fill_" else 0]
    measured = traffic(task, case)
    assert measured.read < x.nbytes, unread
    assert measured.read % SECTOR == 0 and measured.written % SECTOR == 0


def test_an_in_place_update_reads_its_argument():
    """relu_ needs every element (the negative ones change): read and write both count."""
    task = find("Activation/relu")
    case = next(c for c in task.cases if c.params.get("inplace"))
    measured = traffic(task, case)
    assert measured.read >= 4 * numel(case.shape) and measured.written > 3.9 * numel(case.shape)
