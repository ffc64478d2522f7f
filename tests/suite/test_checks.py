"""The random tasks' shared statistical rules (``suite.checks``): a dropout mask must agree with
itself at every distance checked as independent draws do, not at distance 1 alone."""

import torch

from kbx.suite.checks import pairs_agree


def lattice_mask(n: int, p: float, seed: int, run: int = 4) -> torch.Tensor:
    """One uniform draw per run of ``run`` elements, the rest of the run a lattice from it:
    element k dropped where frac(h + k * p(1-p)) < p (tests/exploits/lattice_dropout)."""
    g = torch.Generator().manual_seed(seed)
    h = torch.rand(n // run + 1, generator=g, dtype=torch.float64).repeat_interleave(run)[:n]
    k = torch.arange(n, dtype=torch.float64) % run
    return torch.frac(h + k * p * (1 - p)) < p


def test_a_lattice_mask_agrees_as_chance_at_distance_1_but_not_2():
    for p in (0.5, 0.3):
        mask = lattice_mask(20_000, p, seed=1)
        clear = torch.ones_like(mask)
        reason = pairs_agree(mask, clear, p, "elements")
        assert reason is not None and "2 apart" in reason, reason
        halves = mask[: mask.numel() // 2 * 2].view(-1, 2)  # distance 1 alone: passes
        rate = float((halves[:, 0] == halves[:, 1]).double().mean())
        assert abs(rate - (p * p + (1 - p) ** 2)) < 0.02


def test_independent_draws_pass_at_every_distance():
    for seed in range(40):
        g = torch.Generator().manual_seed(seed)
        mask = torch.rand(64, 37, generator=g) < 0.3
        clear = torch.rand(64, 37, generator=g) < 0.8
        for dim in (0, 1):
            assert pairs_agree(mask.movedim(dim, 0), clear.movedim(dim, 0), 0.3, "rows") is None
