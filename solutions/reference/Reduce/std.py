"""Standard deviation in Triton: a one-read Welford/Chan reduction over the (A, K, B) view.

Reduced dims are made the middle axis of an (A, K, B) array (non-adjacent dims are permuted to
the end first, a copy, giving B = 1). Every lane of a [BLOCK_K, BLOCK_B] tile keeps a running
(count, mean, M2) and folds each new element in with Welford's update; lanes are then merged
with Chan's formula M2 = sum M2_l + sum n_l (mean_l - mean)^2, which stays accurate when the
mean is large compared with the spread. When there are too few outputs to fill the GPU, K is
split into chunks whose (count, mean, M2) triples a second kernel merges the same way before
taking sqrt(M2 / max(0, N - correction)).
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _combine(n_a, m_a, q_a, n_b, m_b, q_b):
    """Chan's pairwise merge of (count, mean, M2) statistics, element-wise."""
    n = n_a + n_b
    frac = n_b / tl.where(n > 0, n, 1.0)
    delta = m_b - m_a
    return n, m_a + delta * frac, q_a + q_b + delta * delta * n_a * frac


@triton.jit
def _merge_lanes(n, m, q):
    """Merge the lanes along axis 0 in one step (vectorised Chan). Lane means are taken
    relative to one of them (c), so the mean of a large-offset slice is formed from small
    numbers and the deviations m - mean stay accurate."""
    c = tl.max(tl.where(n > 0, m, float("-inf")), axis=0)
    total = tl.sum(n, axis=0)
    dm = tl.where(n > 0, m - c[None, :], 0.0)
    shift = tl.sum(n * dm, axis=0) / total  # mean - c
    d = dm - shift[None, :]  # m - mean
    return total, c + shift, tl.sum(q, axis=0) + tl.sum(n * d * d, axis=0)


@triton.jit
def _std_kernel(
    x_ptr,
    out_ptr,
    n_ptr,
    m_ptr,
    K,
    B,
    sa,
    sk,
    sb,
    n_bblocks,
    CHUNK,
    SPLIT_STRIDE,
    dof,
    FINAL: tl.constexpr,
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
    base = x_ptr + a * sa
    cnt = tl.zeros((BLOCK_K, BLOCK_B), tl.float32)
    mean = tl.zeros((BLOCK_K, BLOCK_B), tl.float32)
    m2 = tl.zeros((BLOCK_K, BLOCK_B), tl.float32)
    for start in range(lo, hi, BLOCK_K):
        k = start + tl.arange(0, BLOCK_K).to(tl.int64)
        mask = (k < hi)[:, None] & bmask[None, :]
        x = tl.load(base + k[:, None] * sk + b[None, :] * sb, mask=mask, other=0.0)
        one = tl.where(mask, 1.0, 0.0)  # a masked lane merges an empty set
        cnt, mean, m2 = _combine(cnt, mean, m2, one, x.to(tl.float32), 0.0)
    n, mu, q = _merge_lanes(cnt, mean, m2)
    out = part * SPLIT_STRIDE + a * B + b
    if FINAL:
        std = tl.sqrt(q / dof)  # dof = max(0, N - correction): 0 gives inf or NaN, as torch
        tl.store(out_ptr + out, std.to(out_ptr.dtype.element_ty), mask=bmask)
    else:
        tl.store(out_ptr + out, q, mask=bmask)  # partial M2, with its count and mean
        tl.store(n_ptr + out, n, mask=bmask)
        tl.store(m_ptr + out, mu, mask=bmask)


@triton.jit
def _finish_kernel(
    q_ptr, n_ptr, m_ptr, out_ptr, R, SPLIT, dof, BLOCK_S: tl.constexpr, BLOCK_R: tl.constexpr
):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = r < R
    cnt = tl.zeros((BLOCK_S, BLOCK_R), tl.float32)
    mean = tl.zeros((BLOCK_S, BLOCK_R), tl.float32)
    m2 = tl.zeros((BLOCK_S, BLOCK_R), tl.float32)
    for s0 in range(0, SPLIT, BLOCK_S):  # fixed order: deterministic
        s = s0 + tl.arange(0, BLOCK_S)
        mask = (s < SPLIT)[:, None] & rmask[None, :]
        off = s[:, None] * R + r[None, :]
        n_b = tl.load(n_ptr + off, mask=mask, other=0.0)
        m_b = tl.load(m_ptr + off, mask=mask, other=0.0)
        q_b = tl.load(q_ptr + off, mask=mask, other=0.0)
        cnt, mean, m2 = _combine(cnt, mean, m2, n_b, m_b, q_b)
    _, _, q = _merge_lanes(cnt, mean, m2)
    tl.store(out_ptr + r, tl.sqrt(q / dof).to(out_ptr.dtype.element_ty), mask=rmask)


def _plan(A, K, B):
    """Tiling of the (A, K, B) reduction. With B = 1 the rows themselves are the tile's second
    axis (several short rows per program, contiguous along K); otherwise tiles run along B."""
    if B == 1:
        Av, Bv, sa, sk, sb = 1, A, 0, 1, K
        BLOCK_K = min(1024, triton.next_power_of_2(K))
        BLOCK_B = min(max(1, 1024 // BLOCK_K), triton.next_power_of_2(A))
    else:
        Av, Bv, sa, sk, sb = A, B, K * B, B, 1
        BLOCK_B = min(triton.next_power_of_2(B), 128)
        BLOCK_K = min(max(8, 1024 // BLOCK_B), triton.next_power_of_2(K))
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


def std(input, dim=None, correction=1, keepdim=False, out=None):
    nd = input.dim()
    if dim is None:
        dims = list(range(nd))
    else:
        dims = sorted({d % nd for d in ((dim,) if isinstance(dim, int) else dim)}) if nd else []
        dims = dims or list(range(nd))
    shape = list(input.shape)
    kept = [d for d in range(nd) if d not in dims]
    if not dims:  # a 0-d input: one element
        x, A, K, B = input.reshape(1), 1, 1, 1
    elif dims == list(range(dims[0], dims[-1] + 1)):  # adjacent: no copy
        x = input.contiguous()
        A = math.prod(shape[: dims[0]])
        K = math.prod(shape[dims[0] : dims[-1] + 1])
        B = math.prod(shape[dims[-1] + 1 :])
    else:
        x = input.permute(*kept, *dims).contiguous()
        A, K, B = math.prod(shape[d] for d in kept), math.prod(shape[d] for d in dims), 1
    out_shape = (
        [1 if d in dims else shape[d] for d in range(nd)] if keepdim else [shape[d] for d in kept]
    )
    result = (
        out if out is not None else torch.empty(out_shape, dtype=input.dtype, device=input.device)
    )
    R = A * B
    if R == 0:
        return result
    dof = float(max(0, K - correction))
    plan = _plan(A, K, B)
    programs, split = plan["programs"], plan["split"]
    args = (K, plan["Bv"], plan["sa"], plan["sk"], plan["sb"], plan["n_bblocks"], plan["chunk"])
    blocks = dict(BLOCK_K=plan["BLOCK_K"], BLOCK_B=plan["BLOCK_B"])
    if split == 1:
        _std_kernel[(programs, 1)](x, result, result, result, *args, 0, dof, FINAL=True, **blocks)
        return result
    q = torch.empty((split, R), dtype=torch.float32, device=x.device)
    n = torch.empty_like(q)
    m = torch.empty_like(q)
    _std_kernel[(programs, split)](x, q, n, m, *args, R, dof, FINAL=False, **blocks)
    BLOCK_R = min(triton.next_power_of_2(R), 64)
    BLOCK_S = min(triton.next_power_of_2(split), max(1, 512 // BLOCK_R))
    _finish_kernel[(triton.cdiv(R, BLOCK_R),)](
        q, n, m, result, R, split, dof, BLOCK_S=BLOCK_S, BLOCK_R=BLOCK_R
    )
    return result
