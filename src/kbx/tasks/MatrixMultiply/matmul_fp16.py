"""MatrixMultiply/matmul_fp16: torch.matmul of float16 operands with float32 accumulation."""

import torch

from kbx.suite.inputs import Draw
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Zeros and tiny values only: a huge special would make the summation order decide the result.
SPECIALS = (0.0, -0.0, 1e-30, -1e-30)


def reference(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    return torch.matmul(input, other)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (M, K, N): 2-D x 2-D; (B, M, K, N): 3-D x 3-D, or 3-D x 2-D with broadcast=True."""
    d = Draw(case, device)
    *batch, m, k, n = case.shape
    a = d.tensor((*batch, m, k), specials=SPECIALS)
    b = d.tensor(([] if case.params.get("broadcast") else batch) + [k, n], specials=SPECIALS)
    return Inputs((a, b))


def flops(c: Case) -> float:
    *batch, m, k, n = c.shape
    return 2.0 * (batch[0] if batch else 1) * m * k * n


def bytes_moved(c: Case) -> float:
    *batch, m, k, n = c.shape
    nb = batch[0] if batch else 1
    return 2.0 * (nb * m * k + (1 if c.params.get("broadcast") else nb) * k * n + nb * m * n)


TASK = Task(
    entry="matmul_fp16",
    signature="matmul_fp16(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor",
    description=(
        "Matrix product with torch.matmul semantics for contiguous float16 operands, returning "
        "a new float16 tensor: `input` (M, K) @ `other` (K, N) -> (M, N); batched "
        "(B, M, K) @ (B, K, N) -> (B, M, N); and (B, M, K) @ (K, N) -> (B, M, N) with the 2-D "
        "operand shared by every batch. Every case uses one of these three forms; 1-D operands "
        "and batch broadcasting between different batch sizes are not exercised."
    ),
    math=r"C_{b,i,j} = \mathrm{fp16}\Big(\sum_k A_{b,i,k}\,B_{b,k,j}\Big)",
    precision=(
        "float16 in and out; products and sums in float32 (fp16 x fp16 products are exact in "
        "fp32, so fp16 tensor-core dots with an fp32 accumulator are fine), one rounding to "
        "float16 at the end. Tolerance rtol=2e-3 (one fp16 ulp is 2^-11..2^-10 of the value: "
        "different fp32 summation orders may round to neighbouring fp16 values) and atol=1e-4 "
        "(fp32 summation error of results that cancel to near zero, K of 150-260). "
        "Accumulating in float16 fails. Results stay far inside the float16 range."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((97, 211, 83), seed=1, dtype=torch.float16),
        Case((130, 257, 61), seed=2, dtype=torch.float16, dist="outlier"),
        Case((3, 45, 199, 77), seed=3, dtype=torch.float16),
        Case((5, 33, 230, 50), seed=4, dtype=torch.float16, dist="corner"),
        Case(
            (4, 29, 181, 93),
            seed=5,
            dtype=torch.float16,
            dist="outlier",
            params={"broadcast": True},
        ),
    ),
    bench=(
        Case((8192, 8192, 8192), seed=11, dtype=torch.float16),
        Case((64, 1024, 2048, 1024), seed=12, dtype=torch.float16),
        Case((32, 2048, 4096, 1024), seed=13, dtype=torch.float16, params={"broadcast": True}),
    ),
    flops=flops,
    bytes_moved=bytes_moved,
    tolerance=Tolerance(rtol=2e-3, atol=1e-4),
)
