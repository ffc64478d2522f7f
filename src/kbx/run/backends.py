"""Choosing where candidates run: this machine (``LocalBackend``, the Evaluator's default) or a
Ray cluster (``kbx.run.ray_backend``); the ``--backend`` and ``--ray-address`` options of
``kbx eval`` and ``kbx serve``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kbx.core.config import Tuning

if TYPE_CHECKING:  # the Evaluator imports torch: not for ``kbx --help``
    from kbx.run.evaluator import Backend


def add_backend_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="local: this machine's processes (default); ray: one Evaluator actor per GPU (on "
        "the CPU, per slot) of a Ray cluster (needs the ray extra; docs/serve.md)",
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="the cluster to join, e.g. 10.0.0.1:6379 or auto (default: a local Ray instance)",
    )


def choose(
    name: str, address: str | None, device: str, perf: bool, tuning: Tuning
) -> Backend | None:
    """The backend ``name`` for an Evaluator (None: its local default)."""
    if name == "local":
        return None
    try:
        from kbx.run.ray_backend import RayBackend
    except ModuleNotFoundError as exc:
        raise ValueError(
            f"--backend ray needs {exc.name}: pip install 'kernelbench-x[ray]'"
        ) from None
    return RayBackend(device, perf, tuning, address=address)


def ray_pool(address: str | None, device: str, tuning: Tuning) -> object:
    """A pool of Ray Evaluator actors for ``kbx serve``'s tiers to share."""
    try:
        from kbx.run.ray_backend import RayPool
    except ModuleNotFoundError as exc:
        raise ValueError(
            f"--backend ray needs {exc.name}: pip install 'kernelbench-x[ray]'"
        ) from None
    return RayPool(device, tuning, address)
