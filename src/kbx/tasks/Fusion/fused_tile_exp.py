"""Fusion/fused_tile_exp: exp(torch.tile(input, dims)): repeat the whole tensor, then exp."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.shapes import tiled_numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros (exp = 1), overflow and underflow, infinities and NaN.
SPECIALS = (0.0, -0.0, 100.0, -100.0, 1e-30, float("inf"), float("-inf"), float("nan"))


def reference(input, dims, *, out=None):
    y = torch.exp(torch.tile(input, dims))
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    """shape: the input's; params: dims (a tuple of repetitions), transposed (a strided view)."""
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    if case.params.get("transposed"):  # same values, non-contiguous layout
        x = x.mT.contiguous().mT
    return Inputs((x, tuple(case.params["dims"])))


TASK = Task(
    entry="fused_tile_exp",
    signature="fused_tile_exp(input, dims, *, out=None)",
    description=(
        "exp of a tiled tensor, as torch.exp(torch.tile(input, dims)): the float32 `input` "
        "(1-D to 4-D, possibly non-contiguous) is repeated as a whole dims[i] times along each "
        "dim (torch.tile, i.e. Tensor.repeat: copies are laid end to end, not interleaved), "
        "then exp is applied element-wise. `dims` is a tuple of positive ints; if it is "
        "shorter than input.dim() it is left-padded with ones, if it is longer the input is "
        "treated as having leading size-1 dims. Returns a new contiguous float32 tensor of "
        "shape input.shape[i] * dims[i] (after padding), at most 4-D. exp semantics follow "
        "torch: exp(+-0) = 1, overflow to +inf, underflow to 0, exp(-inf) = 0, NaN stays NaN. "
        "Cases cover shorter, longer and equal-length dims, a transposed (strided) input and "
        "corner values; `out` is accepted but not exercised."
    ),
    math=r"y[i_0, \dots, i_{k-1}] = \exp x[i_0 \bmod s_0, \dots, i_{k-1} \bmod s_{k-1}]",
    precision="float32 in and out, computed in float32; rtol=1e-5, atol=1e-6.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 29), seed=1, params={"dims": (3, 2)}),
        Case((5, 41), seed=2, dist="outlier", params={"dims": (3,)}),
        Case((129,), seed=3, dist="corner", params={"dims": (2, 3)}),
        Case((3, 7, 11), seed=4, dist="corner", params={"dims": (1, 2, 3)}),
        Case((2, 3, 5, 7), seed=5, params={"dims": (2, 1, 3, 1)}),
        Case((23, 17), seed=6, dist="outlier", params={"dims": (2, 1, 3), "transposed": True}),
    ),
    bench=(
        Case((4096, 4096), seed=11, params={"dims": (2, 4)}),
        Case((64, 1, 2048), seed=12, params={"dims": (2, 256, 2)}),
    ),
    flops=lambda c: float(tiled_numel(c.shape, c.params["dims"])),
    bytes_moved=lambda c: 4.0 * (numel(c.shape) + tiled_numel(c.shape, c.params["dims"])),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
