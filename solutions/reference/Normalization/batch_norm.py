"""Batch normalization in Triton: two-pass channel statistics, a finalize step, a normalize pass.

The input is viewed as (N, C, S) with S the product of the spatial dims; channel c owns the
N*S elements x[n, c, s]. Training mode computes the statistics in two passes for stability: the
first sums x per (channel, chunk), the second sums (x - mean)^2 per (channel, chunk) with the
mean rebuilt from the first pass's partials. A small kernel then turns the partials (or the
running statistics in inference mode) into mean and weight * invstd per channel and updates the
running statistics in place; the last kernel normalizes every element.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _chunk_sum_kernel(
    x_ptr,
    psum_ptr,
    out_ptr,
    C,
    S,
    M,
    CHUNK,
    SPLIT,
    CENTERED: tl.constexpr,
    SPLIT_P2: tl.constexpr,
    BLOCK: tl.constexpr,
):
    c = tl.program_id(0)
    part = tl.program_id(1)
    if CENTERED:  # mean of channel c from the first pass's partial sums
        k = tl.arange(0, SPLIT_P2)
        mean = tl.sum(tl.load(psum_ptr + c * SPLIT + k, mask=k < SPLIT, other=0.0), axis=0) / M
    lo = part * CHUNK
    hi = tl.minimum(lo + CHUNK, M)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(lo, hi, BLOCK):
        j = start + tl.arange(0, BLOCK)  # index into the channel's N*S elements
        mask = j < hi
        addr = (j // S) * (C * S) + c * S + j % S
        x = tl.load(x_ptr + addr, mask=mask, other=0.0).to(tl.float32)
        if CENTERED:
            d = tl.where(mask, x - mean, 0.0)
            acc += d * d
        else:
            acc += x
    tl.store(out_ptr + c * SPLIT + part, tl.sum(acc, axis=0))


@triton.jit
def _finalize_kernel(
    psum_ptr,
    psq_ptr,
    rm_ptr,
    rv_ptr,
    w_ptr,
    b_ptr,
    mean_ptr,
    scale_ptr,
    shift_ptr,
    C,
    SPLIT,
    M,
    momentum,
    eps,
    TRAINING: tl.constexpr,
    HAS_RUNNING: tl.constexpr,
    HAS_W: tl.constexpr,
    HAS_B: tl.constexpr,
    SPLIT_P2: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = c < C
    if TRAINING:
        k = tl.arange(0, SPLIT_P2)
        idx = c[:, None] * SPLIT + k[None, :]
        m2 = cmask[:, None] & (k[None, :] < SPLIT)
        mean = tl.sum(tl.load(psum_ptr + idx, mask=m2, other=0.0), axis=1) / M
        var = tl.sum(tl.load(psq_ptr + idx, mask=m2, other=0.0), axis=1) / M  # biased
        if HAS_RUNNING:
            rm = tl.load(rm_ptr + c, mask=cmask, other=0.0)
            rv = tl.load(rv_ptr + c, mask=cmask, other=0.0)
            unbiased = var * (M / (M - 1.0))
            tl.store(rm_ptr + c, (1.0 - momentum) * rm + momentum * mean, mask=cmask)
            tl.store(rv_ptr + c, (1.0 - momentum) * rv + momentum * unbiased, mask=cmask)
    else:
        mean = tl.load(rm_ptr + c, mask=cmask, other=0.0)
        var = tl.load(rv_ptr + c, mask=cmask, other=1.0)
    scale = 1.0 / tl.sqrt(var + eps)
    if HAS_W:
        scale = scale * tl.load(w_ptr + c, mask=cmask, other=1.0)
    shift = tl.zeros((BLOCK_C,), tl.float32)
    if HAS_B:
        shift = tl.load(b_ptr + c, mask=cmask, other=0.0)
    tl.store(mean_ptr + c, mean, mask=cmask)
    tl.store(scale_ptr + c, scale, mask=cmask)
    tl.store(shift_ptr + c, shift, mask=cmask)


@triton.jit
def _normalize_kernel(
    x_ptr, y_ptr, mean_ptr, scale_ptr, shift_ptr, C, S, total, BLOCK: tl.constexpr
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    c = (offs // S) % C
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + c, mask=mask, other=0.0)
    scale = tl.load(scale_ptr + c, mask=mask, other=0.0)
    shift = tl.load(shift_ptr + c, mask=mask, other=0.0)
    y = (x - mean) * scale + shift  # subtract first: x * scale + (b - mean * scale) cancels
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def batch_norm(
    input,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training=False,
    momentum=0.1,
    eps=1e-05,
):
    x = input.contiguous()
    N, C = x.shape[0], x.shape[1]
    S = x.numel() // (N * C)
    M = N * S  # elements per channel
    dev = x.device
    f32 = dict(dtype=torch.float32, device=dev)
    mean, scale, shift = (torch.empty(C, **f32) for _ in range(3))
    BLOCK = 1024
    SPLIT = max(1, min(triton.cdiv(M, BLOCK), triton.cdiv(2048, C), 256))
    CHUNK = triton.cdiv(triton.cdiv(M, SPLIT), BLOCK) * BLOCK
    SPLIT = triton.cdiv(M, CHUNK)
    SPLIT_P2 = triton.next_power_of_2(SPLIT)
    psum = torch.empty(C * SPLIT, **f32)
    psq = torch.empty(C * SPLIT, **f32)
    if training:
        if M <= 1:
            raise ValueError("batch_norm: training needs more than one value per channel")
        for out, centered in ((psum, False), (psq, True)):
            _chunk_sum_kernel[(C, SPLIT)](
                x,
                psum,
                out,
                C,
                S,
                M,
                CHUNK,
                SPLIT,
                CENTERED=centered,
                SPLIT_P2=SPLIT_P2,
                BLOCK=BLOCK,
            )
    has_running = running_mean is not None and running_var is not None
    dummy = mean
    BLOCK_C = 32
    _finalize_kernel[(triton.cdiv(C, BLOCK_C),)](
        psum,
        psq,
        running_mean if has_running else dummy,
        running_var if has_running else dummy,
        weight if weight is not None else dummy,
        bias if bias is not None else dummy,
        mean,
        scale,
        shift,
        C,
        SPLIT,
        M,
        momentum,
        eps,
        TRAINING=training,
        HAS_RUNNING=has_running,
        HAS_W=weight is not None,
        HAS_B=bias is not None,
        SPLIT_P2=SPLIT_P2,
        BLOCK_C=BLOCK_C,
    )
    y = torch.empty_like(x)
    total = x.numel()
    _normalize_kernel[(triton.cdiv(total, BLOCK),)](
        x, y, mean, scale, shift, C, S, total, BLOCK=BLOCK
    )
    return y
