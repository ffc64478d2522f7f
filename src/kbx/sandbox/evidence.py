"""The parent's reading of a child's op evidence: which torch operations are glue a solution may
do around its kernels, and the share of the GPU's time a candidate's own Triton kernels must
hold. The child gathers the evidence (``kbx.sandbox.child.opcheck``); only this side judges it,
and ``follow`` turns it into verdicts (docs/design/trust-model.md).
"""

from __future__ import annotations

from kbx.sandbox.wire.channel import OTHER_US, TRITON_US

# The glue a solution may do with torch around its kernels (``scripts/op_census.py`` over the
# reference solutions): allocation and filling, views and layout, dtype and device copies,
# metadata and scalar reads, and randint/random_ (random tasks draw their kernel's seed from
# torch's generator).  The child reports every operation outside kbx's ranges, nested ones too
# (an operation nested in glue, such as a Python kernel the candidate registered for
# ``aten::clone``, is no glue of its own).
GLUE = frozenset(
    """
    empty empty_like empty_strided zeros zeros_like ones ones_like full full_like new_empty
    new_zeros new_ones new_full new_empty_strided scalar_tensor
    view view_as reshape _reshape_alias _unsafe_view permute transpose t numpy_T contiguous
    expand expand_as unsqueeze squeeze flatten unflatten movedim as_strided narrow select slice
    unbind split split_with_sizes chunk view_as_real view_as_complex alias detach to _to_copy
    copy_ clone fill_ zero_ item _local_scalar_dense resize_ resize_as_ randint random_
    broadcast_to swapaxes moveaxis result_type is_nonzero _has_compatible_shallow_copy_type
    real imag conj _conj _neg_view mT mH adjoint matrix_H
    """.split()
)
# Data entering or leaving a tensor without a Triton kernel: host compute, never glue.
# lift_fresh: Python numbers, lists or NumPy arrays made a tensor (torch.tensor, as_tensor,
# from_numpy, ``out[i] = v``); set_: a tensor over a storage's bytes (torch.load, a storage's
# items read one by one); resolve_conj/resolve_neg at the top of a call: a tensor read into NumPy
# or Python (``numpy()``, ``tolist()``, ``__array__``, the C method under them too); and the
# child's own count of outputs and launch arguments in memory torch did not allocate (NumPy's, a
# buffer's, DLPack's) and of DLPack hand-overs.
HOST = {
    "lift_fresh": "Python or NumPy data made a tensor",
    "lift_fresh_copy": "Python or NumPy data made a tensor",
    "lift": "Python or NumPy data made a tensor",
    "set_": "a tensor over a storage's bytes",
    "resolve_conj": "a tensor read into NumPy or Python",
    "resolve_neg": "a tensor read into NumPy or Python",
    "kbx::host_memory": "tensors in memory torch did not allocate, handed over by DLPack, or"
    " moved by a storage's raw methods",
    "kbx::written": "Python numbers written into a tensor one view at a time",
    "kbx::read": "tensor elements read into Python one at a time (item), in bulk",
    "kbx::made": "tensors made from Python numbers (full, fill_), in bulk",
}
LAUNCHES = "kbx::launches"  # the child's launch marks in the profiler's session


def compute_ops(calls: dict[str, int]) -> dict[str, int]:
    """The operations of ``calls`` (aten names with counts) that are not glue."""
    return {k: v for k, v in calls.items() if k.removeprefix("aten::") not in GLUE}


def host_ops(calls: dict[str, int]) -> dict[str, int]:
    """The operations of ``calls`` that move data between the host and tensors."""
    return {k: v for k, v in calls.items() if k.removeprefix("aten::") in HOST}


# A case passes the GPU-time rule when at least this share of the GPU time its own calls made
# went to its Triton kernels (the rest: every other kernel, copy and fill it caused, of torch
# operations on its path, glue included, or of none).  Set low on purpose until the GPU
# validation issue measures the reference solutions' shares: allocations and fills beside a
# kernel must never reject an honest one.
MIN_TRITON_SHARE = 0.10
# ... judged over all the cases of a candidate together, not case by case: on a correctness case
# of a few thousand elements the fixed cost of an allocation or a fill beside a kernel of a few
# microseconds decides the share, while the benchmark cases hold most of an honest candidate's
# GPU time (docs/design/trust-model.md).  A decoy beside torch compute is under it either way.


def triton_share(calls: dict[str, int]) -> float | None:
    """The share of a case's GPU time in its Triton kernels (None: no GPU time recorded);
    removes the two figures from ``calls``."""
    triton_us, other_us = calls.pop(TRITON_US, None), calls.pop(OTHER_US, None)
    if triton_us is None or other_us is None or triton_us + other_us == 0:
        return None
    return triton_us / (triton_us + other_us)


def overall_share(triton_us: int, other_us: int) -> float | None:
    """The share of all the cases' GPU time in the candidate's Triton kernels (None: none)."""
    total = triton_us + other_us
    return triton_us / total if total > 0 else None
