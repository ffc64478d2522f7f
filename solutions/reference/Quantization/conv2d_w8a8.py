"""W8A8 conv2d in Triton: int8 quantization per image / output channel, int8 implicit GEMM.

Quantization: each image of X and each output channel of W is a contiguous row (C*H*W and
C_in*k*k values), cut into chunks of 8192: one kernel writes each chunk's max |v|, a second
combines a row's chunk maxima into its scale and writes clamp(rint(v / s), -127, 127) as int8.
rint (round half to even) is the float32 trick (v + 1.5*2^23) - 1.5*2^23; divisions use div_rn
so the scales and quotients match IEEE division.

Convolution as an implicit GEMM: rows are output pixels (n, oh, ow), columns output channels,
and the reduction index k enumerates (c, u, v) like the row-major layout of W[o]. Each program
gathers a BLOCK_M x BLOCK_K tile of int8 input values at (n, c, oh*s - p + u, ow*s - p + v),
padding masked to 0, multiplies it with the matching BLOCK_K x BLOCK_N tile of Wq by an int8
tl.dot into an exact int32 accumulator, then dequantizes (acc * sx[n]) * sw[o] + bias[o].
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

RINT_MAGIC = tl.constexpr(12582912.0)  # 1.5 * 2**23 (kernels may read only constexpr globals)


@triton.jit
def _row_amax_kernel(x_ptr, amax_ptr, K, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    """Partial max |v| of chunk `chunk` of row `row` (rows can be long: a whole image)."""
    row, chunk = tl.program_id(0).to(tl.int64), tl.program_id(1)
    offs = tl.arange(0, BLOCK)
    amax = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, CHUNK, BLOCK):
        k = chunk * CHUNK + i + offs
        amax = tl.maximum(amax, tl.abs(tl.load(x_ptr + row * K + k, mask=k < K, other=0.0)))
    tl.store(amax_ptr + row * tl.num_programs(1) + chunk, tl.max(amax, axis=0))


@triton.jit
def _row_quant_kernel(
    x_ptr,
    amax_ptr,
    q_ptr,
    s_ptr,
    K,
    NCHUNK,
    CHUNK: tl.constexpr,
    BLOCK: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    row, chunk = tl.program_id(0).to(tl.int64), tl.program_id(1)
    c = tl.arange(0, BLOCK_C)
    parts = tl.load(amax_ptr + row * NCHUNK + c, mask=c < NCHUNK, other=0.0)
    s = libdevice.div_rn(tl.max(parts, axis=0), 127.0)
    s = tl.where(s == 0.0, 1.0, s)  # an all-zero image / channel quantizes with scale 1
    if chunk == 0:
        tl.store(s_ptr + row, s)
    offs = tl.arange(0, BLOCK)
    for i in range(0, CHUNK, BLOCK):
        k = chunk * CHUNK + i + offs
        mask = k < K
        v = tl.load(x_ptr + row * K + k, mask=mask, other=0.0)
        q = tl.minimum(tl.maximum(libdevice.div_rn(v, s), -127.0), 127.0)
        q = (q + RINT_MAGIC) - RINT_MAGIC  # round half to even
        tl.store(q_ptr + row * K + k, q.to(tl.int8), mask=mask)


def _quantize_rows(x, rows, K):
    """int8 rows and per-row scales of a contiguous tensor seen as (rows, K)."""
    chunk = 8192
    nchunk = triton.cdiv(K, chunk)
    q = torch.empty(x.shape, device=x.device, dtype=torch.int8)
    s = torch.empty((rows,), device=x.device, dtype=torch.float32)
    amax = torch.empty((rows, nchunk), device=x.device, dtype=torch.float32)
    _row_amax_kernel[(rows, nchunk)](x, amax, K, CHUNK=chunk, BLOCK=1024)
    _row_quant_kernel[(rows, nchunk)](
        x,
        amax,
        q,
        s,
        K,
        nchunk,
        CHUNK=chunk,
        BLOCK=1024,
        BLOCK_C=max(2, triton.next_power_of_2(nchunk)),
    )
    return q, s


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32}, num_stages=3, num_warps=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_stages=3, num_warps=8),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64}, num_stages=4, num_warps=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64}, num_stages=4, num_warps=4),
    ],
    key=["C", "H", "W", "COUT", "OH", "OW", "KS"],
)
@triton.jit
def _int8_conv_kernel(
    xq_ptr,
    wq_ptr,
    sx_ptr,
    sw_ptr,
    b_ptr,
    y_ptr,
    NB,
    C,
    H,
    W,
    COUT,
    OH,
    OW,
    stride,
    pad,
    KS: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # output pixels (n, oh, ow), flattened
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # output channels
    m_ok = offs_m < NB * OH * OW
    n_ok = offs_n < COUT
    img = offs_m // (OH * OW)
    oh = (offs_m // OW) % OH
    ow = offs_m % OW
    K = C * KS * KS
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        k_ok = ks < K
        c = ks // (KS * KS)  # k enumerates (c, u, v) like W[o] in memory
        u = (ks // KS) % KS
        v = ks % KS
        ih = oh[:, None] * stride - pad + u[None, :]
        iw = ow[:, None] * stride - pad + v[None, :]
        inside = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)  # zero padding
        x_idx = ((img[:, None].to(tl.int64) * C + c[None, :]) * H + ih) * W + iw
        a = tl.load(xq_ptr + x_idx, mask=m_ok[:, None] & k_ok[None, :] & inside, other=0)
        b = tl.load(
            wq_ptr + offs_n[None, :].to(tl.int64) * K + ks[:, None],
            mask=k_ok[:, None] & n_ok[None, :],
            other=0,
        )
        acc = tl.dot(a, b, acc, out_dtype=tl.int32)  # int8 x int8 -> exact int32

    sx = tl.load(sx_ptr + img, mask=m_ok, other=0.0)
    sw = tl.load(sw_ptr + offs_n, mask=n_ok, other=0.0)
    y = (acc.to(tl.float32) * sx[:, None]) * sw[None, :]  # the recipe's order of the scalings
    if HAS_BIAS:
        y = y + tl.load(b_ptr + offs_n, mask=n_ok, other=0.0)[None, :]
    y_idx = ((img[:, None].to(tl.int64) * COUT + offs_n[None, :]) * OH + oh[:, None]) * OW + ow[
        :, None
    ]
    tl.store(y_ptr + y_idx, y, mask=m_ok[:, None] & n_ok[None, :])


def conv2d_w8a8(input, weight, bias=None, stride=1, padding=0):
    x, w = input.contiguous(), weight.contiguous()
    nb, c, h, wd = x.shape
    cout, c2, ks, ks2 = w.shape
    if c != c2 or ks != ks2:
        raise ValueError(f"need weight (C_out, {c}, k, k), got {tuple(w.shape)}")
    oh = (h + 2 * padding - ks) // stride + 1
    ow = (wd + 2 * padding - ks) // stride + 1
    dev = x.device
    xq, sx = _quantize_rows(x, nb, c * h * wd)  # one scale per image
    wq, sw = _quantize_rows(w, cout, c * ks * ks)  # one scale per output channel
    y = torch.empty((nb, cout, oh, ow), device=dev, dtype=torch.float32)
    b = bias.contiguous() if bias is not None else sw  # any pointer when there is no bias

    def grid(meta):
        return (triton.cdiv(nb * oh * ow, meta["BLOCK_M"]), triton.cdiv(cout, meta["BLOCK_N"]))

    _int8_conv_kernel[grid](
        xq,
        wq,
        sx,
        sw,
        b,
        y,
        nb,
        c,
        h,
        wd,
        cout,
        oh,
        ow,
        stride,
        padding,
        KS=ks,
        HAS_BIAS=bias is not None,
    )
    return y
