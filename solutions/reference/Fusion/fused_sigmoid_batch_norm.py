"""sigmoid(batch_norm(x)) in Triton: per-channel statistics, then one element-wise pass.

The input is viewed as (N, C, S) (S = product of the trailing dims); channel c owns the N*S
elements x[n, c, :], i.e. N contiguous slabs of S values. One program per channel:
  * training: sweeps its slabs twice, first for the mean, then for the mean squared deviation
    (a two-pass variance, stable when the mean is far from zero), and updates the running
    statistics in place with the unbiased variance;
  * inference: reads running_mean / running_var.
It stores the mean and a = weight / sqrt(var + eps). The element-wise kernel then computes
sigmoid((x - mean) a + bias) for BLOCK elements per program.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _channel_stats_kernel(
    x_ptr,
    rm_ptr,
    rv_ptr,
    w_ptr,
    stats_ptr,
    N,
    C,
    S,
    momentum,
    eps,
    TRAINING: tl.constexpr,
    HAS_RUNNING: tl.constexpr,
    HAS_W: tl.constexpr,
    BLOCK: tl.constexpr,
):
    c = tl.program_id(0)
    if TRAINING:
        offs0 = tl.arange(0, BLOCK)
        acc = tl.zeros((BLOCK,), tl.float32)
        for n in range(0, N):
            base = (n * C + c).to(tl.int64) * S  # slab of channel c in sample n
            for s0 in range(0, S, BLOCK):
                offs = s0 + offs0
                acc += tl.load(x_ptr + base + offs, mask=offs < S, other=0.0)
        count = N * S
        mean = tl.sum(acc, axis=0) / count
        acc = tl.zeros((BLOCK,), tl.float32)
        for n in range(0, N):
            base = (n * C + c).to(tl.int64) * S
            for s0 in range(0, S, BLOCK):
                offs = s0 + offs0
                v = tl.load(x_ptr + base + offs, mask=offs < S, other=0.0)
                dev = tl.where(offs < S, v - mean, 0.0)
                acc += dev * dev
        m2 = tl.sum(acc, axis=0)
        var = m2 / count  # biased: what the normalisation uses
        if HAS_RUNNING:
            unbiased = m2 / tl.maximum(count - 1, 1)
            rm = tl.load(rm_ptr + c)
            rv = tl.load(rv_ptr + c)
            tl.store(rm_ptr + c, (1.0 - momentum) * rm + momentum * mean)
            tl.store(rv_ptr + c, (1.0 - momentum) * rv + momentum * unbiased)
    else:
        mean = tl.load(rm_ptr + c)
        var = tl.load(rv_ptr + c)
    a = 1.0 / tl.sqrt(var + eps)
    if HAS_W:
        a = a * tl.load(w_ptr + c)
    tl.store(stats_ptr + 2 * c, mean)
    tl.store(stats_ptr + 2 * c + 1, a)


@triton.jit
def _normalize_sigmoid_kernel(
    x_ptr, stats_ptr, b_ptr, y_ptr, total, C, S, HAS_B: tl.constexpr, BLOCK: tl.constexpr
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    c = (offs // S) % C
    mean = tl.load(stats_ptr + 2 * c, mask=mask, other=0.0)
    a = tl.load(stats_ptr + 2 * c + 1, mask=mask, other=0.0)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    z = (x - mean) * a
    if HAS_B:
        z += tl.load(b_ptr + c, mask=mask, other=0.0)
    tl.store(y_ptr + offs, 1.0 / (1.0 + tl.exp(-z)), mask=mask)


def fused_sigmoid_batch_norm(
    input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5
):
    x = input.contiguous()
    N, C = x.shape[0], x.shape[1]
    S = x.numel() // max(N * C, 1)
    has_running = running_mean is not None and running_var is not None
    if not training and not has_running:
        raise ValueError("inference mode needs running_mean and running_var")
    y = torch.empty_like(x)
    if x.numel() == 0:
        return y
    stats = torch.empty((C, 2), device=x.device, dtype=torch.float32)
    _channel_stats_kernel[(C,)](
        x,
        running_mean if has_running else x,
        running_var if has_running else x,
        weight if weight is not None else x,
        stats,
        N,
        C,
        S,
        float(momentum if momentum is not None else 0.1),
        float(eps),
        TRAINING=bool(training),
        HAS_RUNNING=has_running,
        HAS_W=weight is not None,
        BLOCK=min(triton.next_power_of_2(S), 1024),
    )
    total = x.numel()
    BLOCK = 1024
    _normalize_sigmoid_kernel[(triton.cdiv(total, BLOCK),)](
        x,
        stats,
        bias if bias is not None else x,
        y,
        total,
        C,
        S,
        HAS_B=bias is not None,
        BLOCK=BLOCK,
    )
    return y
