"""N-dimensional DFT in Triton: one direct DFT (a complex matrix product) per transformed dim.

The transform is separable, so each dimension in `dim` is transformed in turn. For one
dimension the tensor is viewed as rows (M, n) with that dimension last (a permute + contiguous
copy), and a kernel computes Y = X W with W[j, k] = exp(-2 pi i j k / L) for the output length
L, as four real float32 products on tensor cores in IEEE mode:
    Re Y = Xr Wr - Xi Wi,    Im Y = Xr Wi + Xi Wr.
The twiddles are generated per tile from the exact integer (j k) mod L, folded into
[-L/2, L/2] so the angle stays within [-pi, pi]; zero-padding (L > n) is a masked load and
truncation (L < n) simply stops the sum at L. The norm's scale is applied per dimension
(1, 1/L or 1/sqrt(L)), whose product is the requested overall factor.
"""

import math

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _dft_rows_kernel(
    x_ptr,
    y_ptr,
    M,
    N_IN,
    L,
    scale,
    IS_REAL: tl.constexpr,
    BM: tl.constexpr,
    BK: tl.constexpr,
    BJ: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)
    rows = pid_m * BM + tl.arange(0, BM)
    ks = pid_k * BK + tl.arange(0, BK)
    row_ok = rows < M
    k_ok = ks < L
    acc_re = tl.zeros([BM, BK], tl.float32)
    acc_im = tl.zeros([BM, BK], tl.float32)
    n_sum = tl.minimum(N_IN, L)  # zero padding contributes nothing; truncation stops early
    for j0 in range(0, n_sum, BJ):
        js = j0 + tl.arange(0, BJ)
        j_ok = js < n_sum
        xmask = row_ok[:, None] & j_ok[None, :]
        base = rows.to(tl.int64)[:, None] * N_IN + js[None, :]
        if IS_REAL:
            xr = tl.load(x_ptr + base, mask=xmask, other=0.0)
            xi = tl.zeros([BM, BJ], tl.float32)
        else:  # interleaved (re, im) pairs of a complex64 tensor
            xr = tl.load(x_ptr + 2 * base, mask=xmask, other=0.0)
            xi = tl.load(x_ptr + 2 * base + 1, mask=xmask, other=0.0)
        # twiddles W[j, k] = exp(-2 pi i t / L) with t = (j k) mod L folded to [-L/2, L/2]
        t = (js.to(tl.int64)[:, None] * ks[None, :]) % L
        t = tl.where(2 * t > L, t - L, t)
        angle = t.to(tl.float32) * (-6.283185307179586 / L)
        wr = libdevice.cos(angle)
        wi = libdevice.sin(angle)
        wr = tl.where(j_ok[:, None], wr, 0.0)
        wi = tl.where(j_ok[:, None], wi, 0.0)
        acc_re += tl.dot(xr, wr, input_precision="ieee") - tl.dot(xi, wi, input_precision="ieee")
        acc_im += tl.dot(xr, wi, input_precision="ieee") + tl.dot(xi, wr, input_precision="ieee")
    out = rows.to(tl.int64)[:, None] * L + ks[None, :]
    omask = row_ok[:, None] & k_ok[None, :]
    tl.store(y_ptr + 2 * out, acc_re * scale, mask=omask)
    tl.store(y_ptr + 2 * out + 1, acc_im * scale, mask=omask)


def _dft_along(x: torch.Tensor, d: int, length: int, norm: str) -> torch.Tensor:
    """Transform dimension d of x (float32 or complex64) to `length` outputs (complex64)."""
    moved = x.movedim(d, -1).contiguous()
    n_in = moved.shape[-1]
    rows = moved.numel() // n_in if n_in else 0
    y = torch.empty((*moved.shape[:-1], length), dtype=torch.complex64, device=x.device)
    scale = {"backward": 1.0, "forward": 1.0 / length, "ortho": 1.0 / math.sqrt(length)}[norm]
    if y.numel():
        src = moved if not moved.is_complex() else torch.view_as_real(moved)
        BM, BK, BJ = 64, 64, 32
        grid = (triton.cdiv(rows, BM), triton.cdiv(length, BK))
        _dft_rows_kernel[grid](
            src,
            torch.view_as_real(y),
            rows,
            n_in,
            length,
            scale,
            IS_REAL=not moved.is_complex(),
            BM=BM,
            BK=BK,
            BJ=BJ,
            num_warps=4,
        )
    return y.movedim(-1, d)


def fftn(input, s=None, dim=None, norm=None, out=None):
    norm = norm or "backward"
    if norm not in ("backward", "forward", "ortho"):
        raise ValueError(f"invalid norm {norm!r}")
    nd = input.dim()
    if dim is None:
        dim = range(nd) if s is None else range(nd - len(s), nd)
    dims = [d % nd for d in dim]
    lengths = [input.shape[d] if s is None or s[i] == -1 else s[i] for i, d in enumerate(dims)]
    x = input if input.is_complex() else input.to(torch.float32)
    x = x.to(torch.complex64) if x.is_complex() else x
    for d, length in zip(dims, lengths, strict=True):
        x = _dft_along(x, d, length, norm)
    y = x.contiguous() if x.is_complex() else x.to(torch.complex64)
    if out is not None:
        out.resize_(y.shape)
        out.copy_(y)
        return out
    return y
