"""Math/bitwise_and_binomial: Binomial(total_count, p) samples times (input & other), judged
statistically (random output) and by seed determinism."""

import math

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input, other, total_count, probs=None, logits=None):
    draws = torch.distributions.Binomial(total_count=total_count, probs=probs, logits=logits)
    return draws.sample() * torch.bitwise_and(input, other)


def make_inputs(case: Case, device: str) -> Inputs:
    """case.shape: the output shape, which total_count (shape n) and p (shape p) broadcast to;
    `other` has shape y (default: the output shape)."""
    p = case.params
    draw = Draw(case, device)
    shapes = (case.shape, p.get("y", case.shape))
    if case.dtype == torch.bool:
        x, y = (draw.integers(s, 0, 2, dtype=torch.bool) for s in shapes)
    else:
        lo, hi = max(-1000, torch.iinfo(case.dtype).min), min(1001, torch.iinfo(case.dtype).max)
        x, y = (draw.integers(s, lo, hi, dtype=case.dtype) for s in shapes)
    n = draw.integers(p["n"], 0, p.get("n_max", 24) + 1, dtype=p.get("n_dtype", torch.float32))
    if p.get("logits"):
        q = draw.tensor(p["p"], dtype=torch.float32, scale=2.0, dist="normal")
    else:
        q = draw.uniform(p["p"], 0.0, 1.0, dtype=torch.float32)
    if case.dist == "corner":  # some certain outcomes: p = 0, p = 1, total_count = 0
        edge = draw.uniform(p["p"], 0.0, 1.0, dtype=torch.float64)
        q = torch.where(edge < 0.05, 0.0, torch.where(edge > 0.95, 1.0, q))
        n = torch.where(draw.uniform(p["n"], 0.0, 1.0, dtype=torch.float64) < 0.05, 0, n).to(
            n.dtype
        )
    kind = "logits" if p.get("logits") else "probs"
    return Inputs((x, y, n), {kind: q})


def check(inputs: Inputs, got: torch.Tensor) -> str | None:
    """Each value is B * (input & other) with B a whole number in [0, n]; B ~ Binomial(n, p):
    mean, variance, the histogram of B and the lag-1 correlation within 5 sigma.  Evaluated on
    the inputs' device: on one CPU thread the benchmark cases took 46 s (H200, 2026-11-30)."""
    x, y, n = inputs.args
    kw = inputs.kwargs
    p = torch.sigmoid(kw["logits"].double()) if "logits" in kw else kw["probs"].double()
    a, n, p = torch.broadcast_tensors(torch.bitwise_and(x, y).double(), n.double(), p)
    g = got.to(a.device).double()
    nz = a != 0
    if not bool((g[~nz] == 0).all()):
        return "output is not 0 where input & other is 0"
    b = g[nz] / a[nz]
    n, p = n[nz], p[nz]
    if not bool(((b == b.round()) & (b >= 0) & (b <= n)).all()):  # also rejects NaN / inf
        return "output / (input & other) is not a whole number in [0, total_count]"
    if not bool(((p > 0) | (b == 0)).all() and ((p < 1) | (b == n)).all()):
        return "p = 0 must give 0 successes and p = 1 must give total_count"
    mu, var = n * p, n * p * (1 - p)
    live = var > 0
    b, n, p, mu, var = b[live], n[live], p[live], mu[live], var[live]
    z = (b - mu).sum() / var.sum().sqrt()
    if abs(z) > 5:
        return f"sample mean off by {z.item():.1f} sigma"
    fourth = var * (1 + 3 * (n - 2) * p * (1 - p))  # central 4th moment of Binomial(n, p)
    zv = ((b - mu) ** 2 - var).sum() / (fourth - var**2).sum().sqrt()
    if abs(zv) > 5:
        return f"sample variance off by {zv.item():.1f} sigma"
    r = (b - mu) / var.sqrt()
    lag = (r[1:] * r[:-1]).mean() * math.sqrt(r.numel() - 1)
    if abs(lag) > 5:
        return f"consecutive draws are correlated ({lag.item():.1f} sigma)"
    if b.numel() > 1 << 17:  # histogram on a spread-out subsample
        pick = torch.unique(
            torch.randint(b.numel(), (1 << 17,), generator=torch.Generator().manual_seed(0))
        ).to(b.device)
        b, n, p = b[pick], n[pick], p[pick]
    ks = torch.arange(int(n.max()) + 1, dtype=torch.float64, device=b.device)
    pmf = torch.distributions.Binomial(n[:, None], p[:, None]).log_prob(
        torch.minimum(ks, n[:, None])
    ).exp() * (ks <= n[:, None])
    expect, spread = pmf.sum(0), (pmf * (1 - pmf)).sum(0).sqrt()
    seen = (b[:, None] == ks).sum(0)
    off = (seen - expect).abs() > 5 * spread + 2
    if off.any():
        k = int(off.nonzero()[0])
        return f"{int(seen[k])} draws equal {k}, expected {expect[k].item():.1f}: not binomial"
    return None


TASK = Task(
    entry="bitwise_and_binomial",
    signature=(
        "bitwise_and_binomial(input: torch.Tensor, other: torch.Tensor, total_count: "
        "torch.Tensor, probs: torch.Tensor=None, logits: torch.Tensor=None) -> torch.Tensor"
    ),
    description=(
        "Draw B ~ Binomial(total_count, p) independently per element, with p = probs or "
        "p = sigmoid(logits) (exactly one is given), and return B * (input & other) as a new "
        "float32 tensor of the broadcast shape of input & other, total_count and probs/logits "
        "(torch.distributions.Binomial(...).sample() * torch.bitwise_and(input, other)). B has "
        "the broadcast shape of total_count and p (torch would reuse it along further "
        "dimensions of input & other); every case makes that the full output shape, while "
        "`other` may broadcast against `input`. input "
        "and other: integer (int8, int16, int32, int64) or bool tensors of one dtype with "
        "values in [-1000, 1000]; total_count: whole numbers in [0, 24], float32 or int64; "
        "p = 0 gives B = 0, p = 1 gives B = total_count. The draws cannot match PyTorch's random "
        "stream, so they are judged statistically: every output must be B * (input & other) "
        "with B a whole number in [0, total_count], and B's mean, variance, histogram and lag-1 "
        "correlation must fit Binomial(total_count, p) within 5 sigma. The kernel's seed must "
        "be drawn from torch's default generator (e.g. seed = int(torch.randint(0, 2**31 - 1, "
        "(1,)))), so that the same torch.manual_seed gives a bit-identical output and another "
        "seed gives another. Cases: the five operand dtypes, probs and logits, broadcasting of "
        "total_count and p (rows, columns, 0-d) and of `other`, and corner cases with p in "
        "{0, 1} and "
        "total_count = 0."
    ),
    math=r"\mathrm{out}_i = B_i\,(\mathrm{input}_i \mathbin{\&} \mathrm{other}_i),\quad "
    r"B_i \sim \mathrm{Binomial}(n_i, p_i)",
    precision="float32 out; B exact (a whole number), the product exact.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((151, 113), seed=1, dtype=torch.int32, params={"n": (113,), "p": (151, 113)}),
        Case(
            (29, 611),
            seed=2,
            dtype=torch.int64,
            params={"n": (29, 1), "p": (29, 611), "logits": True, "n_dtype": torch.int64},
        ),
        Case(
            (3, 97, 61),
            seed=3,
            dtype=torch.int8,
            dist="corner",
            params={"n": (3, 97, 61), "p": (97, 61)},
        ),
        Case(
            (1409, 13),
            seed=4,
            dtype=torch.bool,
            params={"n": (), "p": (1409, 13), "y": (13,), "n_max": 20},
        ),
        Case(
            (5, 53, 67),
            seed=5,
            dtype=torch.int16,
            dist="corner",
            params={"n": (5, 53, 67), "p": (53, 1), "y": (53, 67), "logits": True},
        ),
    ),
    bench=(
        Case((4096, 4096), seed=11, dtype=torch.int32, params={"n": (4096,), "p": (4096, 4096)}),
        Case(
            (8192, 2048),
            seed=12,
            dtype=torch.int32,
            params={"n": (8192, 2048), "p": (8192, 1), "logits": True, "n_max": 16},
        ),
    ),
    flops=lambda c: 2.0 * c.params.get("n_max", 24) * numel(c.shape),
    bytes_moved=lambda c: (
        c.dtype.itemsize * (numel(c.shape) + numel(c.params.get("y", c.shape)))
        + 4.0 * numel(c.shape)
        + 4.0 * (numel(c.params["n"]) + numel(c.params["p"]))
    ),
    tolerance=Tolerance(rtol=0.0, atol=0.0),
    check=check,
    random=True,
    # p rounded to 16 bits moves the draws by less than the sampling noise of any affordable case
    # (the output itself is exact): a low-precision reference is a valid sample here.
    exempt_probes=("fp16 compute", "bf16 compute"),
)
