"""Output sizes and element counts that task files derive from a case, for their inputs and for the
``flops``/``bytes_moved`` of the roofline.

Torch's size formulas (convolution, transposed convolution, pooling windows, adaptive pooling,
resizing, tile, tensordot) are written here once, so that tasks of one family count the same way.
Functions that take a ``Case`` read the suite's parameter names: ``k`` (kernel size), ``cout``,
``stride``, ``padding``, ``dilation``, ``groups`` (with a ``prefix`` where a task names them
``conv_stride``...), and ``kernel_size``/``stride``/``padding``/``ceil_mode`` for pooling.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from kbx.suite.task import Case


def pair(v: int | Sequence[int]) -> tuple[int, int]:
    """An int or a pair as a pair (kernel sizes, strides, paddings of 2-D operators)."""
    if isinstance(v, int):
        return v, v
    a, b = v
    return a, b


def window_out(
    n: int, k: int, stride: int = 1, padding: int = 0, dilation: int = 1, ceil_mode: bool = False
) -> int:
    """Output length of a window of size ``k`` sliding over ``n`` (convolution and pooling); with
    ``ceil_mode`` the last window must still start inside the input or the left padding."""
    span = n + 2 * padding - dilation * (k - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= n + padding:
        out -= 1
    return out


def conv_hw(c: Case, prefix: str = "") -> tuple[int, int]:
    """(OH, OW) of a 2-D convolution of an (N, C_in, H, W) case; ``k``, stride and dilation are
    ints or pairs, padding also ``"same"`` or ``"valid"``."""
    p = c.params
    pad = p.get(prefix + "padding", 0)
    if pad == "same":
        return c.shape[2], c.shape[3]
    (kh, kw), (ph, pw) = pair(p["k"]), pair(0 if pad == "valid" else pad)
    (sh, sw), (dh, dw) = pair(p.get(prefix + "stride", 1)), pair(p.get(prefix + "dilation", 1))
    return window_out(c.shape[2], kh, sh, ph, dh), window_out(c.shape[3], kw, sw, pw, dw)


def contraction(c: Case, prefix: str = "") -> int:
    """A 2-D convolution's contraction length: C_in / groups * kH * kW."""
    kh, kw = pair(c.params["k"])
    return c.shape[1] // c.params.get(prefix + "groups", 1) * kh * kw


def conv_geometry(c: Case, prefix: str = "") -> tuple[int, int, int]:
    """(OH, OW, contraction length) of a 2-D convolution."""
    return (*conv_hw(c, prefix), contraction(c, prefix))


def conv_numel(c: Case, prefix: str = "") -> int:
    """Elements of a 2-D convolution's output: N * C_out * OH * OW."""
    oh, ow = conv_hw(c, prefix)
    return c.shape[0] * c.params["cout"] * oh * ow


def conv_transpose_hw(c: Case) -> tuple[int, int]:
    """(OH, OW) of a 2-D transposed convolution (``output_padding`` as well)."""
    p = c.params
    s, pad, dil = p.get("stride", 1), p.get("padding", 0), p.get("dilation", 1)
    extra = dil * (p["k"] - 1) + p.get("output_padding", 0) + 1
    h, w = ((x - 1) * s - 2 * pad + extra for x in c.shape[2:])
    return h, w


def pool_out(c: Case) -> tuple[int, ...]:
    """Output sizes of an average pool over the dims after (N, C): ``kernel_size``, ``stride``
    (None or absent: the kernel size), ``padding``, ``ceil_mode``."""
    p = c.params
    k = p["kernel_size"]
    s, pad, ceil = p.get("stride") or k, p.get("padding", 0), bool(p.get("ceil_mode"))
    return tuple(window_out(n, k, s, pad, ceil_mode=ceil) for n in c.shape[2:])


def adaptive_hw(c: Case) -> tuple[int, int]:
    """(OH, OW) of an adaptive pool: ``output_size`` is an int or a pair, None keeps the input's."""
    size = c.params["output_size"]
    oh, ow = (size, size) if isinstance(size, int) else size
    h, w = c.shape[-2:]
    return (h if oh is None else oh), (w if ow is None else ow)


def resized_hw(c: Case, size: str, factor: str) -> tuple[int, int]:
    """(OH, OW) of a resize or a fractional pool of the last two dims: the parameter named
    ``size`` (an int or a pair) when given, else each input size times the parameter named
    ``factor`` (a number or a pair), rounded down."""
    if c.params.get(size) is not None:
        return pair(c.params[size])
    f = c.params[factor]
    fh, fw = (f, f) if isinstance(f, float | int) else f
    return math.floor(c.shape[-2] * fh), math.floor(c.shape[-1] * fw)


def planes(c: Case) -> int:
    """The number of (H, W) planes of a case: every dim but the last two."""
    return math.prod(c.shape[:-2])


def tiled_numel(shape: Sequence[int], dims: Sequence[int]) -> int:
    """Elements of ``torch.tile(x, dims)`` for x of ``shape`` (the shorter one padded with 1s)."""
    k = max(len(dims), len(shape))
    full = [1] * (k - len(shape)) + list(shape)
    reps = [1] * (k - len(dims)) + list(dims)
    return math.prod(s * r for s, r in zip(full, reps, strict=True))


def tensordot_sizes(a: Sequence[int], b: Sequence[int], dims: Any) -> tuple[int, int, int]:
    """(rows, contraction length, columns) of ``torch.tensordot`` of shapes ``a`` and ``b``:
    ``dims`` is an int (the last dims of a) or a pair of index lists."""
    ka = range(len(a) - dims, len(a)) if isinstance(dims, int) else dims[0]
    k = math.prod(a[i] for i in ka)
    return math.prod(a) // k, k, math.prod(b) // k


def window_in(
    n: int, k: int, stride: int = 1, padding: int = 0, dilation: int = 1, ceil_mode: bool = False
) -> int:
    """How many of ``n`` input positions some window reads (``window_out``'s windows): a stride
    beyond the window's span, or a last window that stops short, leaves positions unread."""
    out = window_out(n, k, stride, padding, dilation, ceil_mode)
    return len(window_reads(n, k, stride, padding, dilation, range(out)))


def conv_in_hw(c: Case, prefix: str = "") -> tuple[int, int]:
    """(rows, columns) of a 2-D convolution's input that its windows read (``window_in``)."""
    p = c.params
    pad = p.get(prefix + "padding", 0)
    if pad == "same":
        return c.shape[2], c.shape[3]
    (kh, kw), (ph, pw) = pair(p["k"]), pair(0 if pad == "valid" else pad)
    (sh, sw), (dh, dw) = pair(p.get(prefix + "stride", 1)), pair(p.get(prefix + "dilation", 1))
    return window_in(c.shape[2], kh, sh, ph, dh), window_in(c.shape[3], kw, sw, pw, dw)


def window_reads(
    n: int, k: int, stride: int, padding: int, dilation: int, outs: Sequence[int] | range
) -> set[int]:
    """The positions of ``n`` inputs that the windows at output positions ``outs`` read."""
    read = {o * stride - padding + j * dilation for o in outs for j in range(k)}
    return {i for i in read if 0 <= i < n}
