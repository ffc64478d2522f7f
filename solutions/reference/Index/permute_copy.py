"""permute_copy in Triton: a tiled strided copy, coalesced on both the read and the write side.

The output is contiguous; its dims are padded to 4. The kernel copies [BLOCK_P, BLOCK_L] tiles
spanned by two output dims: L, the output's innermost dim (contiguous writes), and P, the output
dim that is the input's innermost dim (contiguous reads), or the output dim before L when both
are the same. The two remaining dims are walked by the first grid axis. Triton re-lays the tile
out through shared memory between the coalesced load and the coalesced store.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _permute_kernel(
    x_ptr,
    out_ptr,
    S1,
    SP,
    SL,  # sizes of the outer dim 1, the tile dim P and the tile dim L
    is0,
    is1,
    isp,
    isl,  # input strides of (outer 0, outer 1, P, L)
    os0,
    os1,
    osp,  # output strides of (outer 0, outer 1, P); L has output stride 1
    BLOCK_P: tl.constexpr,
    BLOCK_L: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    i1 = pid % S1
    i0 = pid // S1
    p = tl.program_id(1).to(tl.int64) * BLOCK_P + tl.arange(0, BLOCK_P)
    q = tl.program_id(2).to(tl.int64) * BLOCK_L + tl.arange(0, BLOCK_L)
    mask = (p < SP)[:, None] & (q < SL)[None, :]
    src = x_ptr + i0 * is0 + i1 * is1 + p[:, None] * isp + q[None, :] * isl
    vals = tl.load(src, mask=mask)
    dst = out_ptr + i0 * os0 + i1 * os1 + p[:, None] * osp + q[None, :]
    tl.store(dst, vals, mask=mask)


def permute_copy(input: torch.Tensor, dims: list) -> torch.Tensor:
    nd = input.dim()
    dims = [d % nd for d in dims] if nd else []
    if sorted(dims) != list(range(nd)) or nd > 4:
        raise ValueError("dims must be a permutation of at most 4 dims")
    out_shape = [input.shape[d] for d in dims]
    out = torch.empty(out_shape, dtype=input.dtype, device=input.device)
    if out.numel() == 0:
        return out
    pad = 4 - nd
    size = [1] * pad + out_shape
    in_stride = [0] * pad + [input.stride(d) for d in dims]  # input stride of each output dim
    out_stride = [0] * pad + list(out.stride())
    L = 3  # the output's innermost dim: contiguous stores
    inner = [d for d in range(4) if in_stride[d] == 1 and size[d] > 1]
    transpose = bool(inner) and inner[0] != L  # the input's innermost dim moves
    P = inner[0] if transpose else 2
    o0, o1 = (d for d in range(4) if d not in (P, L))
    if transpose:  # square tiles: coalesced loads along P, coalesced stores along L
        BLOCK_P = min(64, triton.next_power_of_2(size[P]))
        BLOCK_L = min(64, triton.next_power_of_2(size[L]))
    else:  # rows are contiguous on both sides: wide tiles
        BLOCK_L = min(1024, triton.next_power_of_2(size[L]))
        BLOCK_P = min(max(1, 2048 // BLOCK_L), triton.next_power_of_2(size[P]))
    grid = (size[o0] * size[o1], triton.cdiv(size[P], BLOCK_P), triton.cdiv(size[L], BLOCK_L))
    _permute_kernel[grid](
        input,
        out,
        size[o1],
        size[P],
        size[L],
        in_stride[o0],
        in_stride[o1],
        in_stride[P],
        in_stride[L],
        out_stride[o0],
        out_stride[o1],
        out_stride[P],
        BLOCK_P=BLOCK_P,
        BLOCK_L=BLOCK_L,
    )
    return out
