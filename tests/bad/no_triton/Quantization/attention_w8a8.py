"""Known-bad: plain float attention, no int8 quantization (a Triton kernel only copies the result).
Its Triton kernel is a decoy: the torch compute gets it `no_triton`."""
import torch
import triton
import triton.language as tl


@triton.jit
def _copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def attention_w8a8(query, key, value):
    scores = query @ key.transpose(-1, -2) / query.shape[-1] ** 0.5
    y = (torch.softmax(scores, dim=-1) @ value).contiguous()
    out = torch.empty_like(y)
    _copy[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), BLOCK=1024)
    return out
