"""Dot of the first two rows of D = alpha * A @ B + beta * C, in Triton.

Only rows 0 and 1 of D enter the result, so only they are computed: a 2-row GEMV that streams B
once. For parallelism the K range is split into SPLIT chunks: program (j, s) multiplies rows 0
and 1 of A by the chunk s of B's column block j and writes the two partial rows to a workspace.
A second kernel adds the SPLIT partials of each column, applies alpha and beta * C, and writes
the column block's partial dot sum_j D[0, j] * D[1, j]; a last single-program kernel adds those
in a fixed order (no atomics: the result is deterministic). All fp32 FMA, no TF32.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rows_kernel(
    a_ptr,
    b_ptr,
    ws_ptr,
    M,
    P,
    chunk,
    stride_am,
    stride_bm,
    BLOCK_K: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid_n, split = tl.program_id(0), tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = cols < P
    offs_k = tl.arange(0, BLOCK_K)
    acc0 = tl.zeros((BLOCK_K, BLOCK_N), dtype=tl.float32)  # lane-wise partial sums of row 0
    acc1 = tl.zeros((BLOCK_K, BLOCK_N), dtype=tl.float32)  # and of row 1
    k_end = tl.minimum(split * chunk + chunk, M)
    for k0 in range(split * chunk, k_end, BLOCK_K):
        ks = k0 + offs_k
        k_ok = ks < k_end
        a0 = tl.load(a_ptr + ks, mask=k_ok, other=0.0)
        a1 = tl.load(a_ptr + stride_am + ks, mask=k_ok, other=0.0)
        b = tl.load(
            b_ptr + ks[:, None].to(tl.int64) * stride_bm + cols[None, :],
            mask=k_ok[:, None] & n_ok[None, :],
            other=0.0,
        )
        acc0 += a0[:, None] * b
        acc1 += a1[:, None] * b
    row = ws_ptr + split * 2 * P + cols  # workspace layout (SPLIT, 2, P)
    tl.store(row, tl.sum(acc0, axis=0), mask=n_ok)
    tl.store(row + P, tl.sum(acc1, axis=0), mask=n_ok)


@triton.jit
def _dot_kernel(ws_ptr, c_ptr, part_ptr, P, SPLIT, alpha, beta, stride_cn, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = cols < P
    r0 = tl.zeros((BLOCK_N,), dtype=tl.float32)
    r1 = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for s in range(0, SPLIT):
        r0 += tl.load(ws_ptr + s * 2 * P + cols, mask=n_ok, other=0.0)
        r1 += tl.load(ws_ptr + s * 2 * P + P + cols, mask=n_ok, other=0.0)
    d0 = alpha * r0 + beta * tl.load(c_ptr + cols, mask=n_ok, other=0.0)
    d1 = alpha * r1 + beta * tl.load(c_ptr + stride_cn + cols, mask=n_ok, other=0.0)
    tl.store(part_ptr + pid, tl.sum(tl.where(n_ok, d0 * d1, 0.0), axis=0))


@triton.jit
def _sum_kernel(part_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i0 in range(0, n, BLOCK):
        acc += tl.load(part_ptr + i0 + offs, mask=i0 + offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def matrix_multiply_and_row_dot(A, B, alpha, beta, C):
    A, B, C = A.contiguous(), B.contiguous(), C.contiguous()
    n, m = A.shape
    p = B.shape[1]
    if n < 2 or B.shape[0] != m or tuple(C.shape) != (n, p):
        raise ValueError(f"bad shapes A {tuple(A.shape)}, B {tuple(B.shape)}, C {tuple(C.shape)}")
    block_n, block_k = 64, 32
    nb_n = triton.cdiv(p, block_n)
    # enough programs to fill the GPU (~1024), each with at least 256 rows of B
    split = max(1, min(triton.cdiv(m, 256), triton.cdiv(1024, nb_n)))
    chunk = triton.cdiv(triton.cdiv(m, split), block_k) * block_k
    split = triton.cdiv(m, chunk)
    ws = torch.empty((split, 2, p), device=A.device, dtype=torch.float32)
    parts = torch.empty((nb_n,), device=A.device, dtype=torch.float32)
    out = torch.empty((), device=A.device, dtype=torch.float32)
    _rows_kernel[(nb_n, split)](
        A, B, ws, m, p, chunk, A.stride(0), B.stride(0), BLOCK_K=block_k, BLOCK_N=block_n
    )
    _dot_kernel[(nb_n,)](
        ws, C, parts, p, split, float(alpha), float(beta), C.stride(0), BLOCK_N=block_n
    )
    _sum_kernel[(1,)](parts, out, nb_n, BLOCK=1024)
    return out
