"""mv + log_softmax + dropout in Triton: a row-blocked mat-vec, then one normalising pass.

Kernel 1: each program owns BLOCK_N rows, streams them in contiguous BLOCK_K column chunks and
accumulates the dot products with vec in float32 (the matrix is read once). Kernel 2, one
program (the vector is short): an online log-sum-exp over z (running maximum, sum rescaled when
it grows, so nothing overflows), then a second sweep that writes z - lse, zeroing an element
when its uniform number tl.rand(seed, i) is below p and scaling survivors by 1/(1-p). The seed
is drawn from torch's default generator, so torch.manual_seed fixes the mask.
"""

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config({"BLOCK_N": 16, "BLOCK_K": 256}, num_warps=4),
        triton.Config({"BLOCK_N": 32, "BLOCK_K": 256}, num_warps=8),
        triton.Config({"BLOCK_N": 8, "BLOCK_K": 512}, num_warps=4),
    ],
    key=["N", "M"],
)
@triton.jit
def _mv_kernel(a_ptr, v_ptr, z_ptr, N, M, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    r_ok = rows < N
    acc = tl.zeros((BLOCK_N,), tl.float32)
    for k0 in range(0, M, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        c_ok = cols < M
        a = tl.load(a_ptr + rows[:, None] * M + cols[None, :], mask=r_ok[:, None] & c_ok[None, :],
                    other=0.0)  # fmt: skip
        v = tl.load(v_ptr + cols, mask=c_ok, other=0.0)
        acc += tl.sum(a * v[None, :], axis=1)
    tl.store(z_ptr + rows, acc, mask=r_ok)


@triton.jit
def _log_softmax_dropout_kernel(
    z_ptr, y_ptr, N, p, scale, seed, TRAINING: tl.constexpr, BLOCK: tl.constexpr
):
    m = tl.full((1,), float("-inf"), tl.float32)
    s = tl.zeros((1,), tl.float32)
    for i0 in range(0, N, BLOCK):
        offs = i0 + tl.arange(0, BLOCK)
        z = tl.load(z_ptr + offs, mask=offs < N, other=float("-inf"))
        new_m = tl.maximum(m, tl.max(z, axis=0))
        s = s * tl.exp(m - new_m) + tl.sum(tl.exp(z - new_m), axis=0)
        m = new_m
    lse = m + tl.log(s)
    for i0 in range(0, N, BLOCK):
        offs = i0 + tl.arange(0, BLOCK)
        ok = offs < N
        y = tl.load(z_ptr + offs, mask=ok, other=0.0) - lse
        if TRAINING:
            keep = tl.rand(seed, offs) >= p  # uniform in [0, 1): dropped with probability p
            y = tl.where(keep, y * scale, 0.0)
        tl.store(y_ptr + offs, y, mask=ok)


def fused_mv_logsoftmax_dropout(
    input, vec, p=0.5, training=True, inplace=False, dim=0, *, out=None
):
    if dim not in (0, -1):
        raise ValueError(f"z is 1-D: dim must be 0 or -1, got {dim}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    a, v = input.contiguous(), vec.contiguous()
    N, M = a.shape
    z = torch.empty((N,), device=a.device, dtype=torch.float32)
    y = torch.empty((N,), device=a.device, dtype=torch.float32)
    # The dropout seed comes from torch's default generator: torch.manual_seed fixes the mask.
    seed = int(torch.randint(0, 2**31 - 1, (1,))) if training else 0
    scale = 1.0 / (1.0 - p) if p < 1.0 else 0.0
    if N:
        _mv_kernel[lambda meta: (triton.cdiv(N, meta["BLOCK_N"]),)](a, v, z, N, M)
        _log_softmax_dropout_kernel[(1,)](
            z, y, N, float(p), scale, seed, TRAINING=bool(training), BLOCK=1024, num_warps=8
        )
    if out is not None:
        out.copy_(y)
        return out
    return y
