"""Mean over dims in Triton: view the input as (A, K, B), sum the middle axis, divide by K.

Adjacent reduced dims make the contiguous input an (A, K, B) array directly; other dim sets are
first permuted to the end (a copy), giving B = 1. Programs accumulate [BLOCK_K, BLOCK_B] tiles:
along B when there are inner dims, or BLOCK_B short rows at once, contiguous along K, when the
reduced dims are last. When there are too few outputs to fill the GPU, K is split across
programs that write partial sums, and a second kernel adds them in a fixed order. Accumulation
is float32, or float64 for dtype=torch.float64.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _sum_kernel(
    x_ptr,
    out_ptr,
    K,
    B,
    sa,
    sk,
    sb,
    n_bblocks,
    CHUNK,
    SPLIT_STRIDE,
    divisor,
    F64: tl.constexpr,
    BLOCK_K: tl.constexpr,
    BLOCK_B: tl.constexpr,
):
    pid = tl.program_id(0)
    part = tl.program_id(1)
    a = (pid // n_bblocks).to(tl.int64)
    b = (pid % n_bblocks) * BLOCK_B + tl.arange(0, BLOCK_B)
    bmask = b < B
    lo = part.to(tl.int64) * CHUNK
    hi = tl.minimum(lo + CHUNK, K)
    acc_t = tl.float64 if F64 else tl.float32
    acc = tl.zeros((BLOCK_K, BLOCK_B), acc_t)
    base = x_ptr + a * sa
    for start in range(lo, hi, BLOCK_K):
        k = start + tl.arange(0, BLOCK_K).to(tl.int64)
        mask = (k < hi)[:, None] & bmask[None, :]
        acc += tl.load(base + k[:, None] * sk + b[None, :] * sb, mask=mask, other=0.0).to(acc_t)
    # divisor = K (an int, so float64 means stay exact) in the final pass, 1 for partial sums
    total = tl.sum(acc, axis=0) / divisor
    tl.store(
        out_ptr + part * SPLIT_STRIDE + a * B + b, total.to(out_ptr.dtype.element_ty), mask=bmask
    )


@triton.jit
def _finish_kernel(
    part_ptr,
    out_ptr,
    R,
    SPLIT,
    divisor,
    F64: tl.constexpr,
    BLOCK_S: tl.constexpr,
    BLOCK_R: tl.constexpr,
):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = r < R
    acc = tl.zeros((BLOCK_S, BLOCK_R), tl.float64 if F64 else tl.float32)
    for s0 in range(0, SPLIT, BLOCK_S):  # fixed order: deterministic
        s = s0 + tl.arange(0, BLOCK_S)
        mask = (s < SPLIT)[:, None] & rmask[None, :]
        acc += tl.load(part_ptr + s[:, None] * R + r[None, :], mask=mask, other=0.0)
    total = tl.sum(acc, axis=0) / divisor
    tl.store(out_ptr + r, total.to(out_ptr.dtype.element_ty), mask=rmask)


def _plan(A, K, B):
    """Tiling of the (A, K, B) reduction. With B = 1 the rows themselves are the tile's second
    axis (several short rows per program, contiguous along K); otherwise tiles run along B."""
    if B == 1:
        Av, Bv, sa, sk, sb = 1, A, 0, 1, K
        BLOCK_K = min(2048, triton.next_power_of_2(K))
        BLOCK_B = min(max(1, 2048 // BLOCK_K), triton.next_power_of_2(A))
    else:
        Av, Bv, sa, sk, sb = A, B, K * B, B, 1
        BLOCK_B = min(triton.next_power_of_2(B), 128)
        BLOCK_K = min(max(8, 2048 // BLOCK_B), triton.next_power_of_2(K))
    BLOCK_K, BLOCK_B = max(2, BLOCK_K), max(2, BLOCK_B)  # no 1-wide tiles
    n_bblocks = triton.cdiv(Bv, BLOCK_B)
    programs = Av * n_bblocks
    # split K into chunks when the outputs alone give too few programs to fill the GPU
    split = max(1, min(triton.cdiv(1024, programs), triton.cdiv(K, BLOCK_K)))
    chunk = triton.cdiv(triton.cdiv(K, split), BLOCK_K) * BLOCK_K
    return dict(
        programs=programs,
        split=triton.cdiv(K, chunk),
        chunk=chunk,
        Bv=Bv,
        sa=sa,
        sk=sk,
        sb=sb,
        n_bblocks=n_bblocks,
        BLOCK_K=BLOCK_K,
        BLOCK_B=BLOCK_B,
    )


def mean(input_tensor, dim, keepdim=False, dtype=None, out=None):
    nd = input_tensor.dim()
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    dims = sorted({d % nd for d in dims}) if nd else []
    if nd == 0 or not dims:
        dims = list(range(nd))  # an empty dim list reduces everything, as torch
    out_dtype = dtype if dtype is not None else input_tensor.dtype
    f64 = out_dtype == torch.float64
    shape = list(input_tensor.shape)
    kept = [d for d in range(nd) if d not in dims]
    if dims == list(range(dims[0], dims[-1] + 1)):  # adjacent: no copy
        x = input_tensor.contiguous()
        A = math.prod(shape[: dims[0]])
        K = math.prod(shape[dims[0] : dims[-1] + 1])
        B = math.prod(shape[dims[-1] + 1 :])
    else:
        x = input_tensor.permute(*kept, *dims).contiguous()
        A, K, B = math.prod(shape[d] for d in kept), math.prod(shape[d] for d in dims), 1
    out_shape = (
        [1 if d in dims else shape[d] for d in range(nd)] if keepdim else [shape[d] for d in kept]
    )
    result = out if out is not None else torch.empty(out_shape, dtype=out_dtype, device=x.device)
    R = A * B
    if R == 0:
        return result
    plan = _plan(A, K, B)
    programs, split = plan["programs"], plan["split"]
    args = (K, plan["Bv"], plan["sa"], plan["sk"], plan["sb"], plan["n_bblocks"], plan["chunk"])
    meta = dict(F64=f64, BLOCK_K=plan["BLOCK_K"], BLOCK_B=plan["BLOCK_B"])
    if split == 1:  # one program per output block: write the mean directly
        _sum_kernel[(programs, 1)](x, result, *args, 0, K, **meta)
        return result
    partial = torch.empty(
        (split, R), dtype=torch.float64 if f64 else torch.float32, device=x.device
    )
    _sum_kernel[(programs, split)](x, partial, *args, R, 1, **meta)
    BLOCK_R = min(triton.next_power_of_2(R), 128)
    BLOCK_S = min(triton.next_power_of_2(split), max(1, 1024 // BLOCK_R))
    _finish_kernel[(triton.cdiv(R, BLOCK_R),)](
        partial, result, R, split, K, F64=f64, BLOCK_S=BLOCK_S, BLOCK_R=BLOCK_R
    )
    return result
