"""Random/rand: uniform [0, 1) float32 samples, judged statistically and by seed determinism."""

import math

import torch

from kbx.suite.inputs import numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(
    *size,
    generator=None,
    out=None,
    dtype=None,
    layout=torch.strided,
    device=None,
    requires_grad=False,
    pin_memory=False,
):
    return torch.rand(
        *size,
        generator=generator,
        out=out,
        dtype=dtype,
        layout=layout,
        device=device,
        requires_grad=requires_grad,
        pin_memory=pin_memory,
    )


def make_inputs(case: Case, device: str) -> Inputs:
    return Inputs(tuple(case.shape), {"device": device, "dtype": torch.float32})


# Serial independence: a uniform lattice, frac(s + i * a), passes every one-value test and,
# for a = (3 - sqrt(3)) / 6, the lag-1 correlation too (tests/exploits/lattice_rand); its values
# some steps apart are strongly correlated and its pairs lie on lines
LAGS = (1, 2, 3, 4, 5, 8, 13)
PAIR_BINS = 8
PAIR_CHI2 = 160  # 63 degrees of freedom: mean 63, sd 11.2; P(chi2 > 160) ~ 1e-10


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """Range, moments, histogram, correlations at several lags, a histogram of consecutive
    pairs and resolution (5-sigma rules)."""
    x = out.flatten()
    n = x.numel()
    if not bool(((x >= 0) & (x < 1)).all()):  # also rejects NaN
        return f"values outside [0, 1): min {x.min().item():.6g}, max {x.max().item():.6g}"
    y = x.double() - 0.5
    mean, var = y.mean().item(), y.var(correction=0).item()
    if abs(mean) > 5 * math.sqrt(1 / 12 / n):
        return f"mean {mean + 0.5:.6f} is off 1/2 by more than 5 sigma"
    if abs(var - 1 / 12) > 5 * math.sqrt(1 / 180 / n):  # Var(sample variance) = (1/80-1/144)/n
        return f"variance {var:.6f} is off 1/12 by more than 5 sigma"
    counts = torch.histc(x, bins=16, min=0.0, max=1.0).double()
    chi2 = ((counts - n / 16) ** 2 / (n / 16)).sum().item()
    if chi2 > 80:  # 15 degrees of freedom: mean 15, P(chi2 > 80) ~ 1e-10
        return f"16-bin histogram chi-square {chi2:.1f} > 80: not uniform"
    for lag in LAGS:
        if n <= lag:
            break
        corr = (y[:-lag] * y[lag:]).mean().item() / var
        if abs(corr) > 5 / math.sqrt(n - lag):
            return f"lag-{lag} autocorrelation {corr:.4f}: values {lag} apart are correlated"
    reason = pairs_reason(x)
    if reason:
        return reason
    if n > 1 << 17:  # distinct values among a spread-out sample of 2^16 positions
        pick = torch.randint(n, (1 << 16,), generator=torch.Generator().manual_seed(0))
        x = x[torch.unique(pick)]
    distinct = torch.unique(x).numel() / x.numel()
    if distinct < 0.9:
        return f"only {100 * distinct:.1f}% of the values are distinct: too coarse a generator"
    return None


def pairs_reason(x: torch.Tensor) -> str | None:
    """Disjoint pairs (x_2i, x_2i+1) spread over an 8x8 grid as independent values do (chi-square),
    else why not; None for too few pairs to judge."""
    m = x.numel() // 2
    if m < 20 * PAIR_BINS**2:
        return None
    cell = (x[: 2 * m] * PAIR_BINS).long().clamp(0, PAIR_BINS - 1).view(m, 2)
    pairs = torch.bincount(cell[:, 0] * PAIR_BINS + cell[:, 1], minlength=PAIR_BINS**2)
    expected = m / PAIR_BINS**2
    chi2 = ((pairs.double() - expected) ** 2 / expected).sum().item()
    if chi2 > PAIR_CHI2:
        return (
            f"{PAIR_BINS}x{PAIR_BINS} histogram of consecutive pairs: chi-square {chi2:.1f} > "
            f"{PAIR_CHI2}: each value follows from the one before"
        )
    return None


TASK = Task(
    entry="rand",
    signature=(
        "rand(*size, generator=None, out=None, dtype=None, layout=torch.strided, device=None, "
        "requires_grad=False, pin_memory=False) -> torch.Tensor"
    ),
    description=(
        "Return a float32 tensor of the given size (positional ints) on `device`, filled with "
        "independent samples uniform on [0, 1), like torch.rand. The cases pass the size as "
        "positional ints plus device=... and dtype=torch.float32; no generator or out. The output "
        "cannot match PyTorch's own random stream, so it is judged statistically: every value in "
        "[0, 1), mean, variance, a 16-bin histogram, the autocorrelations at lags 1 to 13 and an "
        "8x8 histogram of consecutive pairs within bounds of a true uniform, and almost all values "
        "distinct. The kernel's seed must be drawn from "
        "torch's default generator (e.g. torch.randint on it), so that after torch.manual_seed(s) "
        "two calls return bit-identical tensors and a different s gives a different tensor."
    ),
    precision="float32 out; any generator with at least 2^20 distinct levels in [0, 1) suffices.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((100003,), seed=1),
        Case((257, 513), seed=2),
        Case((7, 61, 129), seed=3),
        Case((3, 5, 11, 401), seed=4),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8191, 16411), seed=12),
    ),
    flops=lambda c: 0.0,
    bytes_moved=lambda c: 4.0 * numel(c.shape),
    tolerance=Tolerance(rtol=0.0, atol=0.0),
    check=check,
    random=True,
    exempt_probes=("noise",),  # uniform noise on [0, 1) is exactly what rand must return
    version=2,  # serial tests: lags 1 to 13 and a histogram of consecutive pairs (2026-12-06)
)
