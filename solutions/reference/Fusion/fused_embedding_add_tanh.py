"""Embedding lookup + add + tanh in Triton, with torch's in-place max_norm renormalisation.

Each program owns BLOCK_I index positions and walks the embedding dim in BLOCK_D chunks: it
gathers the rows weight[idx], adds `other` (broadcast through 4-D strides, never materialised)
and stores tanh of the sum. With max_norm, a first sweep over the row computes its p-norm and the
factor max_norm / (norm + 1e-7) (or 1), which scales the row before the add.

The renormalised rows must also be written back into `weight`, once per distinct row. Rows can be
referenced many times, and a program rewriting a row while another reads it would corrupt the
second one's norm. So: (1) every position i posts n - i to an owner slot of its row with
atomic_max, leaving the first position of each row as the owner; (2) the output kernel only reads
`weight`; (3) a last kernel lets each row's owner alone rewrite it.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _row_scale(
    w_ptr,
    rows,
    row_ok,
    D,
    max_norm,
    norm_p,
    NORM: tl.constexpr,
    BLOCK_I: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    """Renormalisation factor of each gathered row (NORM: 1 = L1, 2 = L2, 3 = max, 0 = any p)."""
    acc = tl.zeros((BLOCK_I, BLOCK_D), dtype=tl.float32)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        m = row_ok[:, None] & (cols < D)[None, :]
        a = tl.abs(tl.load(w_ptr + rows[:, None] * D + cols[None, :], mask=m, other=0.0))
        if NORM == 1:
            acc += a
        elif NORM == 2:
            acc += a * a
        elif NORM == 3:
            acc = tl.maximum(acc, a)
        else:
            acc += tl.where(m, libdevice.pow(a, norm_p), 0.0)
    if NORM == 3:
        norm = tl.max(acc, axis=1)
    else:
        s = tl.sum(acc, axis=1)
        if NORM == 1:
            norm = s
        elif NORM == 2:
            norm = tl.sqrt(s)
        else:
            norm = libdevice.pow(s, 1.0 / norm_p)
    return tl.where(norm > max_norm, max_norm / (norm + 1e-7), 1.0)


@triton.jit
def _claim_kernel(idx_ptr, owner_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = i < n
    row = tl.load(idx_ptr + i, mask=ok, other=0)
    tl.atomic_max(owner_ptr + row, (n - i).to(tl.int32), mask=ok)  # max of n - i: smallest i


@triton.jit
def _embed_add_tanh_kernel(
    idx_ptr,
    w_ptr,
    o_ptr,
    y_ptr,
    n,
    D,
    max_norm,
    norm_p,
    S1,
    S2,
    S3,
    os0,
    os1,
    os2,
    os3,
    RENORM: tl.constexpr,
    NORM: tl.constexpr,
    BLOCK_I: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    pos = tl.program_id(0).to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I)
    pos_ok = pos < n
    rows = tl.load(idx_ptr + pos, mask=pos_ok, other=0)
    if RENORM:
        scale = _row_scale(w_ptr, rows, pos_ok, D, max_norm, norm_p, NORM, BLOCK_I, BLOCK_D)
    else:
        scale = tl.full((BLOCK_I,), 1.0, tl.float32)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        m = pos_ok[:, None] & (cols < D)[None, :]
        e = tl.load(w_ptr + rows[:, None] * D + cols[None, :], mask=m, other=0.0)
        flat = pos[:, None] * D + cols[None, :]  # flat index of the output element
        i3 = flat % S3
        r = flat // S3
        i2 = r % S2
        r = r // S2
        i1 = r % S1
        i0 = r // S1
        o = tl.load(o_ptr + i0 * os0 + i1 * os1 + i2 * os2 + i3 * os3, mask=m, other=0.0)
        if RENORM:
            e = e * scale[:, None]
        tl.store(y_ptr + flat, libdevice.tanh(e + o), mask=m)


@triton.jit
def _renorm_kernel(
    idx_ptr,
    owner_ptr,
    w_ptr,
    n,
    D,
    max_norm,
    norm_p,
    NORM: tl.constexpr,
    BLOCK_I: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    pos = tl.program_id(0) * BLOCK_I + tl.arange(0, BLOCK_I)
    pos_ok = pos < n
    rows = tl.load(idx_ptr + pos, mask=pos_ok, other=0)
    owner = tl.load(owner_ptr + rows, mask=pos_ok, other=0)
    mine = pos_ok & (owner == n - pos)  # only the first position of each row writes it
    scale = _row_scale(w_ptr, rows, mine, D, max_norm, norm_p, NORM, BLOCK_I, BLOCK_D)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        m = mine[:, None] & (cols < D)[None, :]
        p = w_ptr + rows[:, None] * D + cols[None, :]
        tl.store(p, tl.load(p, mask=m, other=0.0) * scale[:, None], mask=m)


def fused_embedding_add_tanh(
    input_indices,
    weight,
    other,
    *,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
    out=None,
):
    # padding_idx, scale_grad_by_freq and sparse only matter for gradients.
    if not weight.is_contiguous():
        raise ValueError("weight must be contiguous (it may be renormalised in place)")
    idx = input_indices.contiguous().view(-1)
    n, (V, D) = idx.numel(), weight.shape
    shape = (*input_indices.shape, D)
    if len(shape) > 4:
        raise NotImplementedError("indices of up to 3 dims")
    y = torch.empty(shape, device=weight.device, dtype=torch.float32)
    if n == 0:
        return y
    o = other.expand(shape)
    sizes = [1] * (4 - len(shape)) + list(shape)
    ost = [0] * (4 - len(shape)) + list(o.stride())
    p = float(norm_type)
    norm_kind = {1.0: 1, 2.0: 2, float("inf"): 3}.get(p, 0)
    renorm = max_norm is not None
    mn = float(max_norm) if renorm else 0.0
    BLOCK_I, BLOCK_D = 16, min(triton.next_power_of_2(D), 256)
    grid = (triton.cdiv(n, BLOCK_I),)
    _embed_add_tanh_kernel[grid](
        idx,
        weight,
        o,
        y,
        n,
        D,
        mn,
        p,
        sizes[1],
        sizes[2],
        sizes[3],
        *ost,
        RENORM=renorm,
        NORM=norm_kind,
        BLOCK_I=BLOCK_I,
        BLOCK_D=BLOCK_D,
        num_warps=4,
    )
    if renorm:  # after the lookup has read the original rows: write the rescaled rows back
        owner = torch.zeros((V,), device=weight.device, dtype=torch.int32)
        _claim_kernel[(triton.cdiv(n, 1024),)](idx, owner, n, BLOCK=1024)
        _renorm_kernel[grid](
            idx,
            owner,
            weight,
            n,
            D,
            mn,
            p,
            NORM=norm_kind,
            BLOCK_I=BLOCK_I,
            BLOCK_D=BLOCK_D,
            num_warps=4,
        )
    if out is not None:
        out.copy_(y)
        return out
    return y
