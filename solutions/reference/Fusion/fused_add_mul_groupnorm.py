"""(x + y) * y followed by GroupNorm in Triton: one program per (sample, group).

A group is a contiguous slab of input1 (C / G channels times the spatial size). The program
sweeps it three times, recomputing M = (x + y) * y from the inputs each time instead of storing
it: pass 1 sums M (mean), pass 2 sums (M - mean)^2 (a two-pass variance: no cancellation when
the mean is large), pass 3 normalises, applies the per-channel affine and stores. input2 is read
through broadcast strides of the 4-D (N, C, H, W) view, so a per-channel or per-position input2
is never expanded in memory.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _m_tile(x_ptr, y_ptr, base, offs, mask, S1, S2, S3, ys0, ys1, ys2, ys3):
    """M = (x + y) * y at flat positions base + offs of the contiguous 4-D input."""
    flat = base + offs
    i3 = flat % S3
    r = flat // S3
    i2 = r % S2
    r = r // S2
    i1 = r % S1
    i0 = r // S1
    x = tl.load(x_ptr + flat, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + i0 * ys0 + i1 * ys1 + i2 * ys2 + i3 * ys3, mask=mask, other=0.0)
    return (x + y) * y


@triton.jit
def _add_mul_groupnorm_kernel(
    x_ptr,
    y_ptr,
    w_ptr,
    b_ptr,
    o_ptr,
    G,
    group_size,
    HW,
    Cg,
    eps,
    S1,
    S2,
    S3,
    ys0,
    ys1,
    ys2,
    ys3,
    AFFINE: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)  # = n * G + g
    g = pid % G
    base = pid.to(tl.int64) * group_size  # groups are contiguous slabs of the input
    offs0 = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in range(0, group_size, BLOCK):
        offs = s + offs0
        mask = offs < group_size
        m = _m_tile(x_ptr, y_ptr, base, offs, mask, S1, S2, S3, ys0, ys1, ys2, ys3)
        acc += tl.where(mask, m, 0.0)
    mean = tl.sum(acc, axis=0) / group_size
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in range(0, group_size, BLOCK):
        offs = s + offs0
        mask = offs < group_size
        m = _m_tile(x_ptr, y_ptr, base, offs, mask, S1, S2, S3, ys0, ys1, ys2, ys3)
        dm = tl.where(mask, m - mean, 0.0)
        acc += dm * dm
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / group_size + eps)
    for s in range(0, group_size, BLOCK):
        offs = s + offs0
        mask = offs < group_size
        m = _m_tile(x_ptr, y_ptr, base, offs, mask, S1, S2, S3, ys0, ys1, ys2, ys3)
        out = (m - mean) * rstd
        if AFFINE:
            c = g * Cg + offs // HW  # channel of each element
            out = out * tl.load(w_ptr + c, mask=mask, other=1.0) + tl.load(
                b_ptr + c, mask=mask, other=0.0
            )
        tl.store(o_ptr + base + offs, out, mask=mask)


def fused_add_mul_groupnorm(input1, input2, weight, bias, num_groups, eps=1e-05, *, out=None):
    x = input1.contiguous()
    N, C = x.shape[:2]
    spatial = list(x.shape[2:])
    if C % num_groups:
        raise ValueError(f"{C} channels do not split into {num_groups} groups")
    if len(spatial) > 2:
        raise NotImplementedError("(N, C, L) or (N, C, H, W) inputs")
    HW = 1
    for s in spatial:
        HW *= s
    sizes = [N, C] + [1] * (2 - len(spatial)) + spatial  # 4-D view (N, C, H, W)
    ys = list(input2.expand(x.shape).stride())
    ys = ys[:2] + [0] * (2 - len(spatial)) + ys[2:]
    o = torch.empty(x.shape, device=x.device, dtype=torch.float32)
    Cg = C // num_groups
    group_size = Cg * HW
    if N * num_groups and group_size:
        affine = weight is not None or bias is not None
        if affine and (weight is None or bias is None):
            raise NotImplementedError("weight and bias must be given together")
        BLOCK = min(triton.next_power_of_2(group_size), 4096)
        _add_mul_groupnorm_kernel[(N * num_groups,)](
            x,
            input2,
            weight if affine else x,
            bias if affine else x,
            o,
            num_groups,
            group_size,
            HW,
            Cg,
            float(eps),
            sizes[1],
            sizes[2],
            sizes[3],
            *ys,
            AFFINE=affine,
            BLOCK=BLOCK,
            num_warps=8 if BLOCK >= 2048 else 4,
        )
    if out is not None:
        out.copy_(o)
        return out
    return o
