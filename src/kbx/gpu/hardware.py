"""What a result was measured with (device, GPU, driver, torch, triton, Python, kbx) and what the
GPU can do at best: measured peaks (for the efficiency figures) and, for the roofline's floor,
the physical peaks of its data sheet (``kbx.gpu.sheets``)."""

from __future__ import annotations

import json
import logging
import platform
import subprocess
from dataclasses import asdict, dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import torch

from kbx.core.version import __version__
from kbx.gpu.sheets import sheet_for

LOG = logging.getLogger("kbx.gpu.hardware")
# A GPU missing from the data-sheet table: its floor takes this many times its measured copy
# bandwidth and matmul peak, far above any kernel, so that it never gives a false too_fast.
UNKNOWN_FACTOR = 2.0


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
class Limits:
    """The physical peaks the roofline's floor takes, what they rest on, and a one-line warning
    where they are not the data sheet's (an unlisted GPU, a sheet row below a measurement)."""

    bandwidth_gbs: float
    tflops: float
    basis: str
    warning: str | None = None


def physical_limits(gpu: str, bandwidth_gbs: float, tflops: dict[str, float]) -> Limits:
    """The floor's peaks for ``gpu`` (``torch.cuda.get_device_name()``) measured at
    ``bandwidth_gbs`` and ``tflops``: the larger of its data sheet's and the measured ones (a
    measurement above the sheet means the row is wrong: a warning says so), or, for a GPU the
    table lacks, the measured ones times UNKNOWN_FACTOR, with a warning."""
    best = max(tflops.values())
    sheet = sheet_for(gpu)
    if sheet is None:
        return Limits(
            bandwidth_gbs * UNKNOWN_FACTOR,
            best * UNKNOWN_FACTOR,
            f"measured x{UNKNOWN_FACTOR:g}",
            f"{gpu or 'this GPU'} is not in kbx's data-sheet table (kbx/gpu/sheets.py): the "
            f"too_fast floor takes {UNKNOWN_FACTOR:g}x its measured copy bandwidth and matmul "
            "peak",
        )
    above = [f"{bandwidth_gbs:.0f} GB/s"] if bandwidth_gbs > sheet.bandwidth_gbs else []
    above += [f"{v:.0f} TFLOP/s {k}" for k, v in tflops.items() if v > sheet.tflops.get(k, v)]
    warning = None
    if above:
        warning = (
            f"{gpu} measured {', '.join(above)}, above its data sheet ({sheet.model}, "
            "kbx/gpu/sheets.py): the row looks wrong; the floor takes the measured figure"
        )
    return Limits(
        max(sheet.bandwidth_gbs, bandwidth_gbs),
        max(sheet.best_tflops(), best),
        f"data sheet: {sheet.model}",
        warning,
    )


@dataclass(frozen=True)
class Peaks:
    """What this GPU can do, measured: copy bandwidth and matmul throughput per dtype, for the
    efficiency figures; ``gpu`` (its device name) finds its data sheet for the floor."""

    bandwidth_gbs: float
    tflops: dict[str, float]
    gpu: str = ""

    @cached_property
    def limits(self) -> Limits:
        return physical_limits(self.gpu, self.bandwidth_gbs, self.tflops)

    def floor_ms(self, bytes_moved: float, flops: float) -> float:
        """No kernel can be faster: the bytes at the GPU's physical bandwidth, or the FLOPs at
        its best physical peak of any precision (``limits``; docs/design/timing.md, Roofline)."""
        memory_ms = bytes_moved / (self.limits.bandwidth_gbs * 1e9) * 1e3
        compute_ms = flops / (self.limits.tflops * 1e12) * 1e3
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
    return Peaks(bandwidth, tflops, torch.cuda.get_device_name())


def load_peaks(cache: Path | None) -> Peaks:
    """Peaks of this GPU and software, measured once and cached as JSON next to the baselines."""
    fp = fingerprint("cuda")
    key = "-".join(str(fp[k]) for k in ("gpu", "driver", "torch")).replace(" ", "_")
    path = cache / f"peaks-{key}.json" if cache else None
    if path and path.exists():
        data = json.loads(path.read_text())
        peaks = Peaks(data["bandwidth_gbs"], data["tflops"], str(fp["gpu"]))
    else:
        peaks = measure_peaks()
        if path:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(asdict(peaks), indent=1))
    if peaks.limits.warning:
        LOG.warning(peaks.limits.warning)
    return peaks
