"""MatrixMultiply/matmul: torch.matmul for 2-D x 2-D, batched 3-D x 3-D and 3-D x 2-D, float32."""

import torch

from kbx.suite.inputs import Draw
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Zeros and tiny values only: a huge special would make the fp32 summation order decide the result.
SPECIALS = (0.0, -0.0, 1e-30, -1e-30)


def reference(tensor1: torch.Tensor, tensor2: torch.Tensor) -> torch.Tensor:
    return torch.matmul(tensor1, tensor2)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (M, K, N): 2-D x 2-D; (B, M, K, N): 3-D x 3-D, or 3-D x 2-D with broadcast=True."""
    d = Draw(case, device)
    *batch, m, k, n = case.shape
    a = d.tensor((*batch, m, k), specials=SPECIALS)
    b_batch = [] if case.params.get("broadcast") else batch
    b = d.tensor((*b_batch, k, n), specials=SPECIALS)
    return Inputs((a, b))


def flops(c: Case) -> float:
    *batch, m, k, n = c.shape
    return 2.0 * (batch[0] if batch else 1) * m * k * n


def bytes_moved(c: Case) -> float:
    *batch, m, k, n = c.shape
    nb = batch[0] if batch else 1
    return 4.0 * (nb * m * k + (1 if c.params.get("broadcast") else nb) * k * n + nb * m * n)


TASK = Task(
    entry="matmul",
    signature="matmul(tensor1, tensor2)",
    description=(
        "Matrix product with torch.matmul semantics, for the forms the cases use: "
        "`tensor1` (M, K) @ `tensor2` (K, N) -> (M, N); batched `tensor1` (B, M, K) @ "
        "`tensor2` (B, K, N) -> (B, M, N) with equal batch sizes; and `tensor1` (B, M, K) @ "
        "`tensor2` (K, N) -> (B, M, N), where the 2-D operand is shared by every batch. "
        "All tensors are contiguous float32 and the result is a new float32 tensor. 1-D "
        "operands and broadcasting of batch dimensions of different sizes are not exercised."
    ),
    math=r"C_{b,i,j} = \sum_{k} A_{b,i,k}\,B_{b,k,j}",
    precision=(
        "float32 inputs and output, products accumulated in float32. TF32 (or any reduced-"
        "mantissa input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee') or an exact fp32 emulation such as 'tf32x3'. The "
        "tolerance (rtol=1e-4, atol=1.5e-3, for K of about 180-260 with N(0,1) entries) admits "
        "any fp32 summation order and rejects TF32-rounded inputs."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((97, 211, 83), seed=1),
        Case((130, 257, 61), seed=2, dist="outlier"),
        Case((3, 45, 199, 77), seed=3),
        Case((5, 33, 230, 50), seed=4, dist="corner"),
        Case((4, 29, 181, 93), seed=5, dist="outlier", params={"broadcast": True}),
    ),
    bench=(
        Case((8192, 1024, 8192), seed=11),
        Case((32, 1024, 1024, 1536), seed=12),
        Case((16, 2048, 1024, 2048), seed=13, params={"broadcast": True}),
    ),
    flops=flops,
    bytes_moved=bytes_moved,
    tolerance=Tolerance(rtol=1e-4, atol=1.5e-3),
)
