"""Seeded input generation shared by the trusted evaluator and the candidate's child process.

Inputs are drawn on the CPU from a generator seeded by the case, then moved to the device, so the
parent and the child build bit-identical tensors without exchanging them, and a CPU run and a GPU
run see the same numbers.  Nothing the candidate imports can shift these draws.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from kbx.task import Case

DEFAULT_SPECIALS = (0.0, -0.0, 1e4, -1e4, 1e-30)


class Draw:
    """Sequential draws for one case: the n-th call always returns the same tensor."""

    def __init__(self, case: Case, device: str) -> None:
        self.case = case
        self.device = device
        self.gen = torch.Generator().manual_seed(case.seed)

    def tensor(
        self,
        shape: Sequence[int],
        *,
        dtype: torch.dtype | None = None,
        dist: str | None = None,
        specials: Sequence[float] = DEFAULT_SPECIALS,
        scale: float = 1.0,
        shift: float = 0.0,
    ) -> torch.Tensor:
        """A floating tensor in the case's distribution (normal, outlier or corner values)."""
        dist = dist or self.case.dist
        x = torch.randn(tuple(shape), generator=self.gen, dtype=torch.float64)
        if dist == "outlier":
            rate = 0.001 + 0.019 * torch.rand((), generator=self.gen, dtype=torch.float64)
            hit = torch.rand(x.shape, generator=self.gen, dtype=torch.float64) < rate
            factor = 10 + 10 * torch.rand(x.shape, generator=self.gen, dtype=torch.float64)
            x = torch.where(hit, x * factor, x)
        x = x * scale + shift
        if dist == "corner" and specials and x.numel():
            pick = torch.rand(x.shape, generator=self.gen, dtype=torch.float64) < 0.05
            which = torch.randint(len(specials), x.shape, generator=self.gen)
            values = torch.tensor(list(specials), dtype=torch.float64)[which]
            x = torch.where(pick, values, x)
        return x.to(dtype or self.case.dtype).to(self.device)

    def uniform(
        self, shape: Sequence[int], low: float, high: float, *, dtype: torch.dtype | None = None
    ) -> torch.Tensor:
        u = torch.rand(tuple(shape), generator=self.gen, dtype=torch.float64)
        return (low + (high - low) * u).to(dtype or self.case.dtype).to(self.device)

    def integers(
        self, shape: Sequence[int], low: int, high: int, *, dtype: torch.dtype = torch.int64
    ) -> torch.Tensor:
        """Integers uniform in [low, high)."""
        x = torch.randint(low, high, tuple(shape), generator=self.gen, dtype=torch.int64)
        return x.to(dtype).to(self.device)

    def permutation(self, n: int) -> torch.Tensor:
        return torch.randperm(n, generator=self.gen).to(self.device)


def numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
