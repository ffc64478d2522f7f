"""Inputs that task files derive from seeded draws with float64 work of their own: matrices of a
chosen spectrum (the SVD tasks) and the precision such derivations run in (the loss tasks).

A task that needs a property of its inputs (singular values well apart, probabilities that sum to
1) draws raw numbers with ``kbx.suite.inputs.Draw`` and builds the inputs from them in float64,
rounding once at the end, so the property holds to float32 precision however the draws fall.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from kbx.suite.inputs import Draw, numel


def orthonormal(
    d: Draw, batch: Sequence[int], m: int, p: int, dist: str | None = None
) -> torch.Tensor:
    """(*batch, m, p) float64 with orthonormal columns: Q of the QR of a draw in ``dist``."""
    return torch.linalg.qr(d.tensor((*batch, m, p), dtype=torch.float64, dist=dist))[0]


def with_spectrum(
    d: Draw, s: torch.Tensor, m: int, n: int, dist: str | None = None
) -> torch.Tensor:
    """float64 (*batch, m, n) matrices U diag(s) V^T with singular values ``s`` (*batch, p),
    p = min(m, n), and random orthonormal U and V (drawn in that order)."""
    batch, p = s.shape[:-1], s.shape[-1]
    u = orthonormal(d, batch, m, p, dist)
    return u @ torch.diag_embed(s) @ orthonormal(d, batch, n, p, dist).mT


def wide(shape: Sequence[int]) -> torch.dtype:
    """float64 for the derived inputs of correctness sizes, float32 for benchmark sizes (over
    2^22 elements, the size above which ``Draw`` itself draws in float32 on a GPU)."""
    return torch.float64 if numel(shape) <= 1 << 22 else torch.float32
