"""Element-wise acceptance tests that property checkers share: closeness to a float64 value, and a
bound on the error with a one-line report of what is off (alongside ``kbx.suite.checks``' rate
bands).

A property checker compares in float64 against values it computes itself, with a rule of its own
(a reduction's error relative to the slice's norm, a sign that is ambiguous near zero), so the
evaluator's element-wise comparison does not fit; these pieces keep the rules' wording and their
NaN handling the same across tasks.
"""

from __future__ import annotations

import torch


def close(got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float) -> torch.Tensor:
    """Where |got - want| <= atol + rtol * |want|, NaN matching NaN (a boolean mask)."""
    same_nan = torch.isnan(got) & torch.isnan(want)
    return ((got - want).abs() <= atol + rtol * want.abs()) | same_nan


def off_by(
    got: torch.Tensor, want: torch.Tensor, bound: torch.Tensor, what: str, claim: str
) -> str | None:
    """None if every |got - want| <= ``bound`` (equal values, infinities and NaNs included), else
    "{what}: {count}/{n} {claim}; worst: ..." naming the element with the largest error."""
    err = (got.double() - want).abs()
    fine = err <= bound
    fine |= (torch.isnan(got) & torch.isnan(want)) | (got.double() == want)
    if bool(fine.all()):
        return None
    i = int(torch.argmax(torch.where(fine, 0.0, err).reshape(-1).nan_to_num(1e300)))
    return (
        f"{what}: {int((~fine).sum())}/{fine.numel()} {claim}; worst: got "
        f"{got.reshape(-1)[i].item():.9g}, exact {want.reshape(-1)[i].item():.9g}"
    )
