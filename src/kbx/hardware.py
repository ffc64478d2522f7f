"""What a result was measured with: device, GPU name, driver, torch, triton, Python, kbx."""

from __future__ import annotations

import platform
import subprocess
from functools import cache
from typing import Any

import torch

import kbx


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


@cache
def fingerprint(device: str) -> dict[str, Any]:
    import triton

    info: dict[str, Any] = {
        "device": device,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "kbx": kbx.__version__,
        "gpu": None,
        "driver": None,
    }
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name()
        info["driver"] = driver_version()
    else:
        info["cpu"] = platform.processor() or platform.machine()
    return info


def driver_version() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else None
