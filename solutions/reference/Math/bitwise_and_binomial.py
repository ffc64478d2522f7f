"""Binomial draws times a bitwise AND in Triton: B ~ Binomial(n, p) as a sum of Bernoulli trials.

Each program handles a block of output elements. The four operands (input, other, total_count,
probs/logits) are expanded (views) to the output shape and padded to 4 dimensions, so a
broadcast dimension has stride 0. B is the number of uniforms u < p among n trials: the trials
come four at a time from counter-based Philox (tl.rand4x keyed by seed + t, counter = the
element's flat index), and the loop runs up to the largest n in the block, masking trials
t >= n. The seed is drawn from torch's default generator, so torch.manual_seed fixes the
output. Exact for any n (the cost grows with n; the task's counts are at most 24).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _offset(i0, i1, i2, i3, s0, s1, s2, s3):
    return i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3


@triton.jit
def _and_binomial_kernel(
    x_ptr,
    y_ptr,
    n_ptr,
    p_ptr,
    o_ptr,
    numel,
    seed,
    d1,
    d2,
    d3,
    sx0,
    sx1,
    sx2,
    sx3,
    sy0,
    sy1,
    sy2,
    sy3,
    sn0,
    sn1,
    sn2,
    sn3,
    sp0,
    sp1,
    sp2,
    sp3,
    LOGITS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    i3 = offs % d3  # flat output index -> 4-D coordinates
    r = offs // d3
    i2 = r % d2
    r = r // d2
    i1 = r % d1
    i0 = r // d1
    x = tl.load(x_ptr + _offset(i0, i1, i2, i3, sx0, sx1, sx2, sx3), mask=mask, other=0)
    y = tl.load(y_ptr + _offset(i0, i1, i2, i3, sy0, sy1, sy2, sy3), mask=mask, other=0)
    n = tl.load(n_ptr + _offset(i0, i1, i2, i3, sn0, sn1, sn2, sn3), mask=mask, other=0)
    p = tl.load(p_ptr + _offset(i0, i1, i2, i3, sp0, sp1, sp2, sp3), mask=mask, other=0.0)
    p = p.to(tl.float32)
    if LOGITS:
        p = 1.0 / (1.0 + tl.exp(-p))  # sigmoid
    trials = n.to(tl.int32)
    successes = tl.zeros([BLOCK], tl.int32)
    for t in range(0, tl.max(trials, axis=0), 4):  # four Bernoulli trials per Philox call
        u0, u1, u2, u3 = tl.rand4x(seed + t, offs)
        successes += ((u0 < p) & (t < trials)).to(tl.int32)
        successes += ((u1 < p) & (t + 1 < trials)).to(tl.int32)
        successes += ((u2 < p) & (t + 2 < trials)).to(tl.int32)
        successes += ((u3 < p) & (t + 3 < trials)).to(tl.int32)
    both = (x & y).to(tl.float32)
    tl.store(o_ptr + offs, successes.to(tl.float32) * both, mask=mask)


def _strides4(t: torch.Tensor, shape: torch.Size) -> list[int]:
    strides = list(t.expand(shape).stride())
    return [0] * (4 - len(strides)) + strides


def bitwise_and_binomial(input, other, total_count, probs=None, logits=None):
    if (probs is None) == (logits is None):
        raise ValueError("give exactly one of probs or logits")
    q = probs if probs is not None else logits
    x, y = input, other
    if x.dtype == torch.bool:  # AND of 0/1 bytes is the logical AND
        x, y = x.view(torch.uint8), y.view(torch.uint8)
    shape = torch.broadcast_shapes(x.shape, y.shape, total_count.shape, q.shape)
    if len(shape) > 4:
        raise NotImplementedError("at most 4 dimensions")
    out = torch.empty(shape, dtype=torch.float32, device=input.device)
    numel = out.numel()
    # a 30-bit kernel seed from torch's default generator (seed + t stays below 2^31)
    seed = int(torch.randint(0, 2**30, (1,)).item())
    dims = [1] * (4 - len(shape)) + list(shape)
    if numel:
        BLOCK = 4096
        _and_binomial_kernel[(triton.cdiv(numel, BLOCK),)](
            x,
            y,
            total_count,
            q,
            out,
            numel,
            seed,
            dims[1],
            dims[2],
            dims[3],
            *_strides4(x, shape),
            *_strides4(y, shape),
            *_strides4(total_count, shape),
            *_strides4(q, shape),
            LOGITS=logits is not None,
            BLOCK=BLOCK,
            num_warps=8,
        )
    return out
