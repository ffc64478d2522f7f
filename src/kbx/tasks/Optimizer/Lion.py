"""Optimizer/Lion: one Lion step (sign of an interpolated momentum), updating state in place."""

import torch

from kbx.suite.bounds import close
from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

RTOL, ATOL = 1e-5, 1e-6


def reference(param, grad, exp_avg, lr=1e-4, beta1=0.9, beta2=0.99, weight_decay=0.0):
    update = exp_avg * beta1 + grad * (1 - beta1)
    param.mul_(1 - lr * weight_decay).add_(torch.sign(update), alpha=-lr)
    exp_avg.mul_(beta2).add_(grad, alpha=1 - beta2)
    return param, exp_avg


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    param, grad = draw.tensor(case.shape), draw.tensor(case.shape)
    kwargs = dict(case.params)
    if kwargs.pop("fresh", False):
        exp_avg = torch.zeros(case.shape, device=device)
    else:
        exp_avg = draw.tensor(case.shape, scale=0.5)
    return Inputs((param, grad, exp_avg), kwargs)


def check(inputs: Inputs, out) -> str | None:
    """Compare with a float64 evaluation; where the interpolated update is within rounding of 0,
    its sign is ambiguous in float32, and any of the three possible parameters is accepted
    (u = 0 from m = g = 0 is exact in any arithmetic: there the sign must be 0).  Evaluated on
    the inputs' device: at the benchmark sizes (2^26 elements) it took 76 s on one CPU thread
    (the H200's warm run, 2026-11-30), where the GPU takes milliseconds."""
    p, g, m = (a.detach().double() for a in inputs.args)
    kw = {"lr": 1e-4, "beta1": 0.9, "beta2": 0.99, "weight_decay": 0.0, **inputs.kwargs}
    lr, b1, b2, wd = kw["lr"], kw["beta1"], kw["beta2"], kw["weight_decay"]
    u = m * b1 + g * (1 - b1)
    mag = (m * b1).abs() + (g * (1 - b1)).abs()
    ambiguous = (u.abs() <= 1e-6 * mag) & (mag > 0)  # exact zeros (m = g = 0) need sign 0
    decayed = p * (1 - lr * wd)
    want_m = m * b2 + g * (1 - b2)
    (ret_p, ret_m), (fin_p, fin_m, fin_g) = out
    for name, got in (("returned param", ret_p), ("param", fin_p)):
        got = got.detach().to(p.device).double()
        ok = close(got, decayed - lr * torch.sign(u), RTOL, ATOL)
        for s in (-1.0, 0.0, 1.0):
            ok |= ambiguous & close(got, decayed - lr * s, RTOL, ATOL)
        if not bool(ok.all()):
            i = int((~ok).reshape(-1).nonzero()[0])
            want = (decayed - lr * torch.sign(u)).reshape(-1)[i].item()
            return (
                f"{name}: {int((~ok).sum())} elements wrong, first at flat {i}: "
                f"got {got.reshape(-1)[i].item():.9g}, expected {want:.9g}"
            )
    for name, got, want in (
        ("returned exp_avg", ret_m, want_m),
        ("exp_avg", fin_m, want_m),
        ("grad", fin_g, g),
    ):
        ok = close(got.detach().to(p.device).double(), want, RTOL, ATOL)
        if not bool(ok.all()):
            return f"{name}: {int((~ok).sum())} elements differ (rtol={RTOL:g} atol={ATOL:g})"
    return None


TASK = Task(
    entry="lion_step",
    aliases=("Lion",),
    signature=(
        "lion_step(param, grad, exp_avg, lr=1e-4, beta1=0.9, beta2=0.99, weight_decay=0.0) "
        "-> tuple[torch.Tensor, torch.Tensor]"
    ),
    description=(
        "One Lion optimizer step. param, grad and exp_avg (momentum) are float32 tensors of "
        "one shape (1-D or 2-D). In this order: u = beta1*exp_avg + (1-beta1)*grad; param = "
        "param*(1 - lr*weight_decay) - lr*sign(u) (sign(0) = 0); exp_avg = beta2*exp_avg + "
        "(1-beta2)*grad (the momentum uses beta2, the update beta1). param and exp_avg are "
        "updated in place and returned as a tuple; grad must not change. Cases: a fresh zero "
        "momentum, corner values (zeros give u = 0), several lr, betas and weight_decay values."
    ),
    math=r"u = \beta_1 m + (1-\beta_1) g;\ \theta \leftarrow \theta(1-\eta\lambda) - "
    r"\eta\,\mathrm{sign}(u);\ m \leftarrow \beta_2 m + (1-\beta_2) g",
    precision=(
        "float32 in and out, computed in float32. Judged against a float64 evaluation with "
        "rtol=1e-5, atol=1e-6; where |u| is within 1e-6 of its terms' magnitudes the sign "
        "depends on rounding, and any sign (or 0) is accepted there."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, dist="corner", params={"fresh": True, "lr": 1e-3}),
        Case((37, 1023), seed=2, dist="outlier", params={"lr": 3e-3, "weight_decay": 0.1}),
        Case((3001,), seed=3, dist="corner", params={"lr": 1e-3, "weight_decay": 1.0}),
        Case((129, 65), seed=4, params=dict(lr=0.01, beta1=0.95, beta2=0.98, weight_decay=0.5)),
        Case((511, 17), seed=5, dist="corner", params={"lr": 2e-3}),
    ),
    bench=(
        Case((1 << 25,), seed=11),
        Case((8191, 8193), seed=12, params={"lr": 3e-4, "weight_decay": 0.1}),
    ),
    flops=lambda c: 10.0 * numel(c.shape),
    bytes_moved=lambda c: 20.0 * numel(c.shape),  # read 3 tensors, write 2, float32
    tolerance=Tolerance(rtol=RTOL, atol=ATOL),  # used through check()
    check=check,
    inplace=(0, 2, 1),
)
