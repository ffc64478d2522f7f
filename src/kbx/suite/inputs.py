"""Seeded input generation shared by the trusted evaluator and the candidate's child process.

Inputs are drawn from generators seeded by the case, so the parent and the child build
bit-identical tensors without exchanging them.  Tensors of up to ``DEVICE_DRAW_NUMEL`` elements are
drawn on the CPU in float64 and moved, so a CPU run and a GPU run see the same numbers; larger ones
(benchmark sizes) are drawn directly on a CUDA device in float32, since drawing a gigabyte on the
CPU costs seconds per case.  Nothing the candidate imports can shift these draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from kbx.suite.task import Case

DEFAULT_SPECIALS = (0.0, -0.0, 1e4, -1e4, 1e-30)
DEVICE_DRAW_NUMEL = 1 << 22


def spectral_norm(x: torch.Tensor) -> torch.Tensor:
    """The largest singular value of each matrix of ``x`` (shape ``x.shape[:-2]``), for inputs
    scaled to known singular-value bounds.  On CUDA through cuSOLVER's gesvda: torch's default
    there calls gesvdj once per matrix above 32x32, hundreds of times slower for many small
    matrices, with the same value (docs/design/throughput.md, Inputs)."""
    if x.is_cuda:
        return torch.linalg.svdvals(x, driver="gesvda")[..., 0]
    return torch.linalg.matrix_norm(x, ord=2)


class Draw:
    """Sequential draws for one case: the n-th call always returns the same tensor."""

    def __init__(self, case: Case, device: str) -> None:
        self.case = case
        self.device = device
        self.cpu_gen = torch.Generator().manual_seed(case.seed)
        self.dev_gen: torch.Generator | None = None

    @classmethod
    def sized(cls, case: Case, device: str) -> Draw:
        """For a task that derives its inputs with float64 work of its own (linear algebra, tie
        avoidance): a Draw on the CPU for correctness sizes (the same numbers on every backend), on
        the CUDA device for larger cases (over ``DEVICE_DRAW_NUMEL`` elements in the case's shape),
        where that work on the child's one CPU thread would take tens of seconds while the GPU lock
        is held.  Its ``device`` is where the task's own tensors (``eye``...) belong."""
        big = device.startswith("cuda") and numel(case.shape) > DEVICE_DRAW_NUMEL
        return cls(case, device if big else "cpu")

    def source(self, shape: Sequence[int]) -> tuple[torch.Generator, str, torch.dtype]:
        """Where to draw: the CPU in float64, or the CUDA device in float32 for large tensors."""
        if numel(shape) > DEVICE_DRAW_NUMEL and self.device.startswith("cuda"):
            if self.dev_gen is None:
                self.dev_gen = torch.Generator(device=self.device).manual_seed(self.case.seed)
            return self.dev_gen, self.device, torch.float32
        return self.cpu_gen, "cpu", torch.float64

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
        gen, where, wide = self.source(shape)
        draw: dict[str, Any] = dict(generator=gen, dtype=wide, device=where)
        x = torch.randn(tuple(shape), **draw)
        if dist == "outlier":
            rate = 0.001 + 0.019 * torch.rand((), **draw)
            hit = torch.rand(x.shape, **draw) < rate
            factor = 10 + 10 * torch.rand(x.shape, **draw)
            x = torch.where(hit, x * factor, x)
        x = x * scale + shift
        if dist == "corner" and specials and x.numel():
            pick = torch.rand(x.shape, **draw) < 0.05
            which = torch.randint(len(specials), x.shape, generator=gen, device=where)
            values = torch.tensor(list(specials), dtype=wide, device=where)[which]
            x = torch.where(pick, values, x)
        return x.to(dtype or self.case.dtype).to(self.device)

    def uniform(
        self, shape: Sequence[int], low: float, high: float, *, dtype: torch.dtype | None = None
    ) -> torch.Tensor:
        gen, where, wide = self.source(shape)
        u = torch.rand(tuple(shape), generator=gen, dtype=wide, device=where)
        return (low + (high - low) * u).to(dtype or self.case.dtype).to(self.device)

    def integers(
        self, shape: Sequence[int], low: int, high: int, *, dtype: torch.dtype = torch.int64
    ) -> torch.Tensor:
        """Integers uniform in [low, high)."""
        gen, where, _ = self.source(shape)
        x = torch.randint(low, high, tuple(shape), generator=gen, dtype=torch.int64, device=where)
        return x.to(dtype).to(self.device)

    def permutation(self, n: int) -> torch.Tensor:
        gen, where, _ = self.source((n,))
        return torch.randperm(n, generator=gen, device=where).to(self.device)


def numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
