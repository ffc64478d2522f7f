"""Trusted comparison of a candidate's outputs with the reference's (runs in the parent only).

Outputs are nested tuples/lists of tensors or Python scalars, and ``Unstored`` placeholders where
the child could not store what the candidate returned (``tensors.Unstored``). Structure and shape
mismatches give ``wrong_shape``, dtype mismatches ``wrong_dtype``, values outside tolerance
``mismatch`` with a summary an author (or a model in a refinement loop) can act on. Nothing a
candidate returns makes these functions raise anything but ``Reject``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from kbx.suite.task import Steps, Tolerance
from kbx.suite.tensors import Unstored
from kbx.suite.verdict import Reject, Verdict

INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class OneStep:
    """One case's allowance at a quantization boundary (``Task.quant``): ``size`` gives the
    step (``Steps``), called only when some element is outside the tolerance; at most ``share``
    of the elements (at least one) may be off by up to one step beyond it."""

    size: Callable[[], Steps]
    share: float

    def allowed(self, n: int) -> int:
        return max(1, int(self.share * n))

    def factors(self) -> tuple[torch.Tensor | float, ...]:
        size = self.size()
        return size if isinstance(size, tuple) else (size,)


def as_tensor(x: Any) -> Any:
    """Python scalars compare like 0-d tensors of torch's default dtype for that scalar; an int
    outside int64 stays an int (it matches no tensor)."""
    if isinstance(x, bool | float) or (isinstance(x, int) and INT64[0] <= x <= INT64[1]):
        return torch.tensor(x)
    return x


def as_tensors(x: Any) -> Any:
    """``as_tensor`` through nested tuples and lists: outputs as a task's check may take them
    once ``compare(..., values=False)`` has found their structure, shapes and dtypes right."""
    if isinstance(x, tuple | list):
        return type(x)(as_tensors(v) for v in x)
    return as_tensor(x)


def compare(
    got: Any,
    want: Any,
    tol: Tolerance,
    where: str = "output",
    values: bool = True,
    step: OneStep | None = None,
) -> None:
    """Raise ``Reject`` unless ``got`` matches ``want`` in structure, shape, dtype and (unless
    ``values`` is False: ``want`` may then be a meta tensor) values; ``step``: a few elements may
    be one quantization step off (tasks with a quantized output: one output tensor)."""
    got, want = as_tensor(got), as_tensor(want)
    if isinstance(want, tuple | list):
        if not isinstance(got, tuple | list) or len(got) != len(want):
            raise Reject(
                Verdict.WRONG_SHAPE,
                f"{where}: expected a sequence of {len(want)} outputs, got {describe(got)}",
            )
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            compare(g, w, tol, f"{where}[{i}]", values, step)
        return
    if want is None:
        if got is not None:
            raise Reject(Verdict.WRONG_SHAPE, f"{where}: expected None, got {describe(got)}")
        return
    if (
        isinstance(got, Unstored)
        and got.dtype not in (None, str(want.dtype))
        and got.shape == tuple(want.shape)
    ):
        raise Reject(
            Verdict.WRONG_DTYPE, f"{where}: dtype {got.dtype} ({got.what}), expected {want.dtype}"
        )
    if not isinstance(got, torch.Tensor):
        raise Reject(Verdict.WRONG_SHAPE, f"{where}: expected a tensor, got {describe(got)}")
    if tuple(got.shape) != tuple(want.shape):
        raise Reject(
            Verdict.WRONG_SHAPE, f"{where}: shape {tuple(got.shape)}, expected {tuple(want.shape)}"
        )
    if got.dtype != want.dtype:
        raise Reject(Verdict.WRONG_DTYPE, f"{where}: dtype {got.dtype}, expected {want.dtype}")
    if not values:
        return
    reason = value_mismatch(got, want, tol, step)
    if reason:
        raise Reject(Verdict.MISMATCH, f"{where}: {reason}")


def describe(x: Any) -> str:
    if isinstance(x, Unstored):
        return x.what
    if isinstance(x, torch.Tensor):
        return f"tensor{tuple(x.shape)} {x.dtype}"
    if isinstance(x, tuple | list):
        return f"{type(x).__name__} of {len(x)}"
    if isinstance(x, str) and x.startswith("<") and x.endswith(">"):
        return x[1:-1]  # what ``tensors.to_cpu`` put in place of a subclass or an object
    return type(x).__name__


def value_mismatch(
    got: torch.Tensor, want: torch.Tensor, tol: Tolerance, step: OneStep | None = None
) -> str | None:
    """None if values agree, else a one-line summary of the disagreement."""
    if want.is_complex():
        return value_mismatch(torch.view_as_real(got), torch.view_as_real(want), tol, step)
    if not want.is_floating_point():
        bad = got.cpu() != want.cpu()
        if not bad.any():
            return None
        g, w = got.cpu().double(), want.cpu().double()
        if step is not None:
            return off_by_steps(bad, g, w, tol, step)
        return summarize(bad, g, w, "exact match required")
    where = "cuda" if want.numel() > 1 << 20 and torch.cuda.is_available() else "cpu"
    g, w = got.detach().to(where).double(), want.detach().to(where).double()
    g_nan, w_nan = torch.isnan(g), torch.isnan(w)
    both_finite = torch.isfinite(g) & torch.isfinite(w)
    close = torch.abs(g - w) <= tol.atol + tol.rtol * torch.abs(w)
    same_special = (g_nan & w_nan) | (~both_finite & ~g_nan & ~w_nan & (g == w))
    bad = ~((both_finite & close) | same_special)
    if not bad.any():
        return None
    if step is not None:
        return off_by_steps(bad, g, w, tol, step)
    return summarize(bad, g, w, f"rtol={tol.rtol:g} atol={tol.atol:g}")


def off_by_steps(
    bad: torch.Tensor, g: torch.Tensor, w: torch.Tensor, tol: Tolerance, step: OneStep
) -> str | None:
    """None when the elements outside the tolerance (``bad``) are few enough and each within
    one quantization step beyond it (finite on both sides: a NaN or an Inf never hides in a
    step), else a one-line reason."""
    size = torch.ones((), dtype=torch.float64, device=g.device)
    for factor in step.factors():
        f = torch.as_tensor(factor, dtype=torch.float64, device=g.device)
        size = size * torch.broadcast_to(f, g.shape)[bad]  # never the whole output's size
    gb, wb = g[bad], w[bad]
    within = torch.isfinite(gb) & torch.isfinite(wb)
    within &= torch.abs(gb - wb) <= size + tol.atol + tol.rtol * torch.abs(wb)
    rule = f"rtol={tol.rtol:g} atol={tol.atol:g}"
    if not within.all():
        far = bad.clone()
        far[bad] = ~within
        worst = int(torch.argmax(torch.where(within, 0.0, (gb - wb).abs().nan_to_num(torch.inf))))
        return summarize(far, g, w, f"{rule} plus one quantization step") + (
            f"; one step there is {size[worst].item():.6g}"
        )
    n_bad, allowed = int(bad.sum()), step.allowed(bad.numel())
    if n_bad > allowed:
        return summarize(bad, g, w, rule) + (
            f"; each within one quantization step, but only {allowed} may be (1 in "
            f"{round(1 / step.share):,} of the elements)"
        )
    return None


def summarize(bad: torch.Tensor, g: torch.Tensor, w: torch.Tensor, rule: str) -> str:
    n_bad, n = int(bad.sum()), bad.numel()
    err = torch.where(
        bad, torch.nan_to_num(torch.abs(g - w), nan=float("inf")), torch.zeros_like(g)
    )
    flat = int(torch.argmax(err.reshape(-1)))
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), bad.shape))
    gv, wv = g.reshape(-1)[flat].item(), w.reshape(-1)[flat].item()
    extra = ""
    nan_new = int((torch.isnan(g) & ~torch.isnan(w)).sum())
    if nan_new:
        extra = f"; {nan_new} NaN where the reference has none"
    where = index if index else "scalar"
    return (
        f"{n_bad}/{n} elements ({100 * n_bad / n:.3g}%) differ ({rule}); worst at {where}: "
        f"got {gv:.6g}, expected {wv:.6g}{extra}"
    )
