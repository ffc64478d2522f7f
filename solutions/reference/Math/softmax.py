"""Softmax along one dim in Triton, on the (A, K, B) view of the contiguous input.

K is the softmax dim, A the dims before it and B the dims after, so the slices are the
columns of A separate [K, B] arrays. One program owns BLOCK_B columns of one a and reads
[BLOCK_K, BLOCK_B] tiles, contiguous along B (for dim=-1, B = 1 and the tile is a row
piece). If K fits in one tile the slice is loaded once; otherwise a first sweep keeps an
online max and a rescaled sum of exponentials, and a second sweep writes the outputs.
A column whose running max is still -inf is rescaled by 0 rather than exp(-inf + inf) = NaN,
so leading -inf entries are harmless; a slice of -inf only ends as 0/0 = NaN, like torch.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(
    x_ptr,
    y_ptr,
    K,
    B,
    n_bblocks,
    ONE_TILE: tl.constexpr,
    F64: tl.constexpr,
    BLOCK_K: tl.constexpr,
    BLOCK_B: tl.constexpr,
):
    pid = tl.program_id(0)
    a = (pid // n_bblocks).to(tl.int64)
    b = (pid % n_bblocks) * BLOCK_B + tl.arange(0, BLOCK_B)
    bmask = b < B
    base = a * K * B
    acc_t = tl.float64 if F64 else tl.float32
    k = tl.arange(0, BLOCK_K)
    if ONE_TILE:
        mask = (k < K)[:, None] & bmask[None, :]
        offs = base + k[:, None].to(tl.int64) * B + b[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=float("-inf")).to(acc_t)
        m = tl.max(x, axis=0)
        e = tl.exp(x - m[None, :])  # an all -inf column gives NaN here, as torch does
        s = tl.sum(e, axis=0)
        tl.store(y_ptr + offs, (e / s[None, :]).to(y_ptr.dtype.element_ty), mask=mask)
    else:
        m = tl.full((BLOCK_B,), float("-inf"), acc_t)
        s = tl.zeros((BLOCK_B,), acc_t)
        for start in range(0, K, BLOCK_K):  # sweep 1: online max and sum
            kk = start + k
            mask = (kk < K)[:, None] & bmask[None, :]
            offs = base + kk[:, None].to(tl.int64) * B + b[None, :]
            x = tl.load(x_ptr + offs, mask=mask, other=float("-inf")).to(acc_t)
            m_new = tl.maximum(m, tl.max(x, axis=0))
            m_ref = tl.where(m_new == float("-inf"), 0.0, m_new)  # no -inf - (-inf)
            s = s * tl.exp(m - m_ref) + tl.sum(tl.exp(x - m_ref[None, :]), axis=0)
            m = m_new
        inv = 1.0 / s
        for start in range(0, K, BLOCK_K):  # sweep 2: normalised outputs
            kk = start + k
            mask = (kk < K)[:, None] & bmask[None, :]
            offs = base + kk[:, None].to(tl.int64) * B + b[None, :]
            x = tl.load(x_ptr + offs, mask=mask, other=float("-inf")).to(acc_t)
            y = tl.exp(x - m[None, :]) * inv[None, :]
            tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax(input: torch.Tensor, dim: int, dtype: torch.dtype = None) -> torch.Tensor:
    x = input.contiguous()
    out_dtype = dtype if dtype is not None else x.dtype
    out = torch.empty(x.shape, dtype=out_dtype, device=x.device)
    if x.numel() == 0:
        return out
    if x.dim() == 0:
        x, view = x.reshape(1), out.reshape(1)
        dim = 0
    else:
        view = out
    d = dim % x.dim()
    shape = list(x.shape)
    A = 1
    for n in shape[:d]:
        A *= n
    K = shape[d]
    B = 1
    for n in shape[d + 1 :]:
        B *= n
    BLOCK_B = min(triton.next_power_of_2(B), 64)
    tile = 8192 if BLOCK_B == 1 else 4096  # elements per tile
    BLOCK_K = max(tile // BLOCK_B, 1)
    one_tile = K <= BLOCK_K
    if one_tile:
        BLOCK_K = max(triton.next_power_of_2(K), 2)
    n_bblocks = triton.cdiv(B, BLOCK_B)
    _softmax_kernel[(A * n_bblocks,)](
        x,
        view,
        K,
        B,
        n_bblocks,
        ONE_TILE=one_tile,
        F64=out_dtype == torch.float64,
        BLOCK_K=BLOCK_K,
        BLOCK_B=BLOCK_B,
        num_warps=8 if BLOCK_K * BLOCK_B >= 4096 else 4,
    )
    return out
