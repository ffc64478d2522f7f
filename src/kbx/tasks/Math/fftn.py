"""Math/fftn: N-dimensional discrete Fourier transform (complex64 out), judged against its RMS."""

import math

import torch

from kbx.suite.inputs import Draw
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 100.0, -100.0)  # sparse spikes; inf/NaN would spread to every output
RTOL, ATOL_RMS = 1e-5, 2e-5  # see `precision`


def reference(input, s=None, dim=None, norm=None, out=None):
    wide = input.to(torch.complex128 if input.is_complex() else torch.float64)
    r = torch.fft.fftn(wide, s=s, dim=dim, norm=norm).to(torch.complex64)
    if out is not None:
        out.resize_(r.shape)
        out.copy_(r)
        return out
    return r


def make_inputs(case: Case, device: str) -> Inputs:
    p = case.params
    draw = Draw(case, device)
    x = draw.tensor(case.shape, specials=SPECIALS)
    if p.get("complex"):
        x = torch.complex(x, draw.tensor(case.shape, specials=SPECIALS))
    out = None
    if p.get("out"):
        out = reference(x, p.get("s"), p.get("dim"), p.get("norm")).zero_()
    return Inputs((x, p.get("s"), p.get("dim"), p.get("norm"), out))


def check(inputs: Inputs, got) -> str | None:
    """|got - X| <= 1e-5 |X| + 2e-5 RMS(X) per element (complex modulus), X in float64."""
    x, s, dim, norm, _ = inputs.args
    wide = x.detach().to(torch.complex128 if x.is_complex() else torch.float64)
    want = torch.fft.fftn(wide, s=s, dim=dim, norm=norm)
    rms = want.abs().square().mean().sqrt().item()
    for g in (got[0], got[1][0]):  # the returned tensor and the final contents of `out`
        if g is None:
            continue
        err = (g.detach().to(want.device, torch.complex128) - want).abs()
        bad = ~(err <= RTOL * want.abs() + ATOL_RMS * rms)  # NaN counts as bad
        if bad.any():
            i = tuple(
                int(v) for v in torch.unravel_index(err.nan_to_num(math.inf).argmax(), err.shape)
            )
            return (
                f"{int(bad.sum())}/{bad.numel()} elements differ by more than "
                f"{RTOL:g}|X| + {ATOL_RMS:g} RMS(X) (RMS {rms:.4g}); worst at {i}: got "
                f"{complex(g[i])}, expected {complex(want[i])}"
            )
    return None


def dims_and_sizes(c: Case) -> tuple[list[int], list[int]]:
    """The transformed dimensions of a case and their output lengths."""
    p, nd = c.params, len(c.shape)
    s, dim = p.get("s"), p.get("dim")
    if dim is None:
        dim = range(nd) if s is None else range(nd - len(s), nd)
    dims = [d % nd for d in dim]
    return dims, [c.shape[d] if s is None or s[i] == -1 else s[i] for i, d in enumerate(dims)]


def n_out(c: Case) -> int:
    shape = list(c.shape)
    for d, length in zip(*dims_and_sizes(c), strict=True):
        shape[d] = length
    return math.prod(shape)


def nbytes(c: Case) -> float:
    return (8.0 if c.params.get("complex") else 4.0) * math.prod(c.shape) + 8.0 * n_out(c)


def flops(c: Case) -> float:  # the usual 5 N log2 N count of a complex FFT
    return 5.0 * n_out(c) * math.log2(max(math.prod(dims_and_sizes(c)[1]), 2))


TASK = Task(
    entry="fftn",
    signature="fftn(input, s=None, dim=None, norm=None, out=None)",
    description=(
        "Return the N-dimensional discrete Fourier transform of `input` (float32 or complex64, "
        "any shape) over the dimensions `dim`, like torch.fft.fftn, as a new complex64 tensor: "
        "X[k] = sum_j x[j] exp(-2 pi i sum_d j_d k_d / n_d). `s` gives the transformed lengths "
        "(each dimension zero-padded or truncated to it; -1 keeps the input's length); `dim` "
        "defaults to all dimensions, or the last len(s) when only `s` is given. norm: None or "
        "'backward' (no scaling), 'forward' (1/n), 'ortho' (1/sqrt(n)), n the product of the "
        "transformed lengths. If `out` (complex64, the result's shape) is given, write into it "
        "and return it. Cases: complex64 and float32 inputs of 2 to 4 dimensions with odd, "
        "non-power-of-two lengths (9 to 64), every norm, a dim subset, padding and truncation "
        "through s (with a -1), normal, outlier and corner values (sparse +-100 spikes, zeros), "
        "and one case passing `out`."
    ),
    math=r"X_{k} = \sum_{j} x_{j}\, e^{-2\pi i \sum_d j_d k_d / n_d}",
    precision=(
        "float32 / complex64 in, complex64 out, accumulated in float32; TF32 (or Triton's "
        "default tl.dot precision) is not allowed. A DFT's rounding error is spread evenly "
        "over its outputs, so each element must satisfy |got - X| <= 1e-5 |X| + 2e-5 RMS(X) "
        "(complex modulus, X the float64 transform, RMS over the whole output): a direct "
        "float32 DFT of length 512 stays below 2e-6 RMS, an FFT below 1e-6 RMS, while float16 "
        "inputs alone cost ~2e-4 RMS."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((5, 12, 9), seed=1, params={"complex": True}),
        Case((37, 45), seed=2, dist="outlier", params={"norm": "ortho"}),
        Case(
            (3, 20, 33),
            seed=3,
            params={"complex": True, "dim": (1, 2), "s": (16, 40), "norm": "forward"},
        ),
        Case((6, 7, 10, 11), seed=4, dist="corner", params={"dim": (-1, 0), "norm": "backward"}),
        Case((48, 50), seed=5, params={"complex": True, "s": (-1, 64), "out": True}),
        Case((9, 15, 13), seed=6, dist="corner", params={"complex": True, "norm": "ortho"}),
    ),
    bench=(
        Case((64, 512, 512), seed=11, params={"complex": True, "dim": (1, 2)}),
        Case((256, 256, 256), seed=12, params={"norm": "ortho"}),
    ),
    flops=flops,
    bytes_moved=nbytes,
    tolerance=Tolerance(rtol=RTOL, atol=ATOL_RMS),
    check=check,
    inplace=(4,),
)
