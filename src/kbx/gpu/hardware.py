"""What a result was measured with (device, GPU, driver, torch, triton, Python, kbx) and what the
GPU can do at best (measured peaks, for the roofline)."""

from __future__ import annotations

import json
import platform
import subprocess
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

import torch

from kbx.core.version import __version__


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def device_problem(device: str) -> str | None:
    """Why ``device`` cannot run here, in one line, or None."""
    if device == "cuda" and not torch.cuda.is_available():
        return "--device cuda: no CUDA GPU is visible here (use --device cpu)"
    return None


@cache
def fingerprint(device: str) -> dict[str, Any]:
    import triton

    info: dict[str, Any] = {
        "device": device,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "kbx": __version__,
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


@dataclass(frozen=True)
class Peaks:
    """What this GPU can do, measured: copy bandwidth and matmul throughput per dtype."""

    bandwidth_gbs: float
    tflops: dict[str, float]

    def floor_ms(self, bytes_moved: float, flops: float) -> float:
        """No kernel can be faster: the bytes at full bandwidth, or the FLOPs at the best peak."""
        memory_ms = bytes_moved / (self.bandwidth_gbs * 1e9) * 1e3
        compute_ms = flops / (max(self.tflops.values()) * 1e12) * 1e3
        return max(memory_ms, compute_ms)

    def dtype_tflops(self, dtype: torch.dtype) -> float:
        """The matmul peak of a case's dtype: fp16 and bf16 their own; float32 the better of
        fp32 and tf32 (Triton's ``tl.dot`` takes tf32 by default); others the best peak."""
        names = {torch.float16: ("fp16",), torch.bfloat16: ("bf16",)}
        wanted = names.get(dtype, ("fp32", "tf32") if dtype == torch.float32 else ())
        got = [self.tflops[n] for n in wanted if n in self.tflops]
        return max(got) if got else max(self.tflops.values())

    def efficiency(
        self, bytes_moved: float, flops: float, dtype: torch.dtype, kernel_ms: float
    ) -> dict[str, float]:
        """A case's achieved bandwidth and FLOP/s as shares of this GPU's peaks for its dtype,
        and its roofline floor at those peaks (``dtype_floor_ms``, for the SOL score)."""
        peak = self.dtype_tflops(dtype)
        memory_ms = bytes_moved / (self.bandwidth_gbs * 1e9) * 1e3
        compute_ms = flops / (peak * 1e12) * 1e3
        seconds = kernel_ms * 1e-3
        return {
            "bandwidth_share": bytes_moved / seconds / 1e9 / self.bandwidth_gbs,
            "compute_share": flops / seconds / 1e12 / peak,
            "dtype_floor_ms": max(memory_ms, compute_ms),
        }


def measure_peaks() -> Peaks:
    """A 1 GiB device copy and 8192^3 matmuls (fp32, tf32, fp16, bf16), best of several."""
    from kbx.gpu.clock import time_call

    src = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    copy = time_call(lambda: dst.copy_(src))
    bandwidth = 2 * src.nbytes / (copy.min_ms * 1e-3) / 1e9
    tflops = {}
    n = 8192
    for name, dtype, tf32 in (
        ("fp32", torch.float32, False),
        ("tf32", torch.float32, True),
        ("fp16", torch.float16, False),
        ("bf16", torch.bfloat16, False),
    ):
        a = torch.randn(n, n, device="cuda").to(dtype)

        def matmul(a: torch.Tensor = a) -> torch.Tensor:
            return a @ a

        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            t = time_call(matmul)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous
        tflops[name] = 2 * n**3 / (t.min_ms * 1e-3) / 1e12
    return Peaks(bandwidth, tflops)


def load_peaks(cache: Path | None) -> Peaks:
    """Peaks of this GPU and software, measured once and cached as JSON next to the baselines."""
    fp = fingerprint("cuda")
    key = "-".join(str(fp[k]) for k in ("gpu", "driver", "torch")).replace(" ", "_")
    path = cache / f"peaks-{key}.json" if cache else None
    if path and path.exists():
        data = json.loads(path.read_text())
        return Peaks(data["bandwidth_gbs"], data["tflops"])
    peaks = measure_peaks()
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(peaks), indent=1))
    return peaks
