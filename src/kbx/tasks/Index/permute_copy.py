"""Index/permute_copy: a new contiguous tensor holding `input` with its dims reordered."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e30, -1e30, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor, dims: list) -> torch.Tensor:
    return torch.permute_copy(input, dims)


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS)
    return Inputs((x, list(case.params["dims"])))


TASK = Task(
    entry="permute_copy",
    signature="permute_copy(input: torch.Tensor, dims: list) -> torch.Tensor",
    description=(
        "Return a freshly allocated contiguous tensor equal to input.permute(dims), like "
        "torch.permute_copy: output dim i is input dim dims[i]. `input` is a contiguous float32 "
        "tensor of 2 to 4 dims and `dims` a list of ints (a permutation, possibly with negative "
        "entries). The output must not alias the input. Cases: 2-D transpose, 3-D and 4-D "
        "permutations (moving the innermost dim or keeping it), negative dims and the identity; "
        "values (inf, NaN, signed zeros) are copied bit-exactly."
    ),
    math=r"\mathrm{out}[i_0, \ldots, i_{n-1}] = x[j],\ j_{\mathrm{dims}[k]} = i_k",
    precision="float32 in and out; a pure copy, judged exactly.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 1023), seed=1, params={"dims": [1, 0]}),
        Case((5, 63, 33), seed=2, dist="outlier", params={"dims": [2, 0, 1]}),
        Case((7, 9, 11, 13), seed=3, dist="corner", params={"dims": [0, 2, 1, 3]}),
        Case((3, 17, 29, 5), seed=4, params={"dims": [3, 1, -4, 2]}),
        Case((129, 65), seed=5, dist="corner", params={"dims": [0, -1]}),
        Case((11, 5, 67), seed=6, params={"dims": [1, 2, 0]}),
    ),
    bench=(
        Case((8192, 8192), seed=11, params={"dims": [1, 0]}),
        Case((64, 512, 32, 64), seed=12, params={"dims": [0, 2, 1, 3]}),
        Case((32, 256, 64, 128), seed=13, params={"dims": [0, 3, 2, 1]}),
    ),
    flops=lambda c: 0.0,
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=0.0, atol=0.0),
)
