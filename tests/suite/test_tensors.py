"""Outputs as the child hands them over: plain tensors and scalars, read without running code of
the candidate's own types."""

from __future__ import annotations

import torch

from kbx.suite import tensors


def test_an_output_tuple_is_read_without_its_own_iterator():
    """A tuple subclass's ``__iter__`` is candidate code: kbx copies outputs inside its harness
    range, so it reads them with the base type's iterator (``tests/exploits/iter_compute``)."""
    ran = []

    class Lazy(tuple):
        def __iter__(self):
            ran.append(True)
            return iter((torch.ones(2),))

    assert torch.equal(tensors.to_cpu(Lazy((torch.zeros(2),)))[0], torch.zeros(2))
    assert torch.equal(tensors.detached(Lazy((torch.zeros(2),)))[0], torch.zeros(2))
    assert not ran


def test_a_list_subclass_is_read_the_same_way():
    class Lazy(list):
        def __iter__(self):
            raise AssertionError("the candidate's iterator ran")

    assert [t.tolist() for t in tensors.to_cpu(Lazy([torch.ones(1), torch.zeros(1)]))] == [
        [1.0],
        [0.0],
    ]


def test_a_tensor_subclass_is_reported_by_its_name():
    class Sub(torch.Tensor):
        pass

    assert tensors.to_cpu(torch.zeros(1).as_subclass(Sub)) == "<tensor subclass Sub>"
