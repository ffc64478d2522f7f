"""What each GPU model can do at most, by its vendor's data sheet: the roofline's floor.

A measured copy is no ceiling (a write-only stream beats it, and a repeated row can stay in
the L2), so the floor that decides ``too_fast`` comes from these figures where the GPU is
listed (docs/design/timing.md, Roofline).  Figures are dense (no 2:4 sparsity) per GPU:
memory bandwidth in GB/s and tensor-core (vector for fp32) throughput in TFLOP/s (int8: TOP/s).
Where a sheet gives two figures for one precision (GeForce: FP16 with FP16 or FP32
accumulation) the higher is kept: the floor must never be above what the card can do.

Sources (the figure as the vendor publishes it; a sheet's sparse figure halved):
- A100: "NVIDIA A100 Tensor Core GPU" data sheet,
  https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf
- H100: "NVIDIA H100 Tensor Core GPU" data sheet,
  https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet ;
  the H100 PCIe product brief PB-11133-001 ("greater than 2,000 GBps")
- H200: "NVIDIA H200 Tensor Core GPU" data sheet,
  https://nvdam.widen.net/s/nb5zzzsjdf/hpc-datasheet-sc23-h200-datasheet-3002446
- B200: "NVIDIA HGX B200" specifications, https://www.nvidia.com/en-us/data-center/hgx/
  (per GPU; 8 TB/s as in the DGX B200 data sheet, above the HGX table's 7.7 TB/s)
- L40S: "NVIDIA L40S" data sheet,
  https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413
- L4: "NVIDIA L4 Tensor Core GPU" data sheet,
  https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet
- RTX 4090: "NVIDIA Ada GPU Architecture" whitepaper, appendix A (GeForce RTX 4090),
  https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf
- RTX 5090: "NVIDIA RTX Blackwell GPU Architecture" whitepaper (GeForce RTX 5090),
  https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf
Cross-checked against copies of the sheets' tables (glennklockwood.com/garden/processors/h100
and /B200, resellers' reproductions of the L40S sheet, the HGX B200 table); none of the URLs
above was fetched from the machine that wrote this file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Sheet:
    """One GPU model's data-sheet peaks: ``names`` are sets of words of
    ``torch.cuda.get_device_name()`` (lower case, split at spaces and dashes), any of which
    picks this row."""

    model: str
    names: tuple[tuple[str, ...], ...]
    bandwidth_gbs: float
    tflops: Mapping[str, float]  # fp32, tf32, fp16, bf16, int8 (TOP/s)
    source: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "tflops", MappingProxyType(dict(self.tflops)))

    def best_tflops(self) -> float:
        return max(self.tflops.values())


def peaks(fp32: float, tf32: float, fp16: float, bf16: float, int8: float) -> dict[str, float]:
    return {"fp32": fp32, "tf32": tf32, "fp16": fp16, "bf16": bf16, "int8": int8}


A100 = peaks(19.5, 156, 312, 312, 624)
H100_SXM = peaks(67, 494.5, 989.5, 989.5, 1979)
H100_NVL = peaks(60, 417.5, 835.5, 835.5, 1670.5)
A100_SHEET = "NVIDIA A100 Tensor Core GPU data sheet"

# More specific rows first: the first row whose words all appear in the name wins.
SHEETS: tuple[Sheet, ...] = (
    Sheet(
        "A100 SXM4 80GB",
        (("a100", "sxm4", "80gb"), ("a100", "sxm", "80gb")),
        2039,
        A100,
        A100_SHEET,
    ),
    Sheet(
        "A100 SXM4 40GB",
        (("a100", "sxm4", "40gb"), ("a100", "sxm", "40gb")),
        1555,
        A100,
        A100_SHEET,
    ),
    Sheet("A100 PCIe 80GB", (("a100", "pcie", "80gb"),), 1935, A100, A100_SHEET),
    Sheet("A100 PCIe 40GB", (("a100", "pcie", "40gb"), ("a100", "pcie")), 1555, A100, A100_SHEET),
    Sheet(
        "H100 PCIe",
        (("h100", "pcie"),),
        2000,
        peaks(51, 378, 756.5, 756.5, 1513),
        "NVIDIA H100 Tensor Core GPU data sheet; H100 PCIe product brief PB-11133-001",
    ),
    Sheet("H100 NVL", (("h100", "nvl"),), 3900, H100_NVL, "NVIDIA H100 Tensor Core GPU data sheet"),
    Sheet(
        "H100 SXM",
        (("h100", "hbm3"), ("h100", "sxm5"), ("h100", "sxm")),
        3350,
        H100_SXM,
        "NVIDIA H100 Tensor Core GPU data sheet",
    ),
    Sheet("H200 NVL", (("h200", "nvl"),), 4800, H100_NVL, "NVIDIA H200 Tensor Core GPU data sheet"),
    Sheet("H200 SXM", (("h200",),), 4800, H100_SXM, "NVIDIA H200 Tensor Core GPU data sheet"),
    Sheet(
        "B200",
        (("b200",),),
        8000,
        peaks(80, 1100, 2250, 2250, 4500),
        "NVIDIA HGX B200 specifications, per GPU; DGX B200 data sheet (bandwidth)",
    ),
    Sheet(
        "L40S",
        (("l40s",),),
        864,
        peaks(91.6, 183, 362.05, 362.05, 733),
        "NVIDIA L40S data sheet",
    ),
    Sheet(
        "L4",
        (("l4",),),
        300,
        peaks(30.3, 60, 121, 121, 242.5),
        "NVIDIA L4 Tensor Core GPU data sheet",
    ),
    Sheet(
        "GeForce RTX 4090",
        (("rtx", "4090"),),
        1008,
        peaks(82.6, 82.6, 330.3, 165.2, 660.6),
        "NVIDIA Ada GPU Architecture whitepaper, appendix A",
    ),
    Sheet(
        "GeForce RTX 5090",
        (("rtx", "5090"),),
        1792,
        peaks(104.8, 104.8, 419, 419, 838),
        "NVIDIA RTX Blackwell GPU Architecture whitepaper",
    ),
)


def words(device_name: str) -> set[str]:
    return set(re.split(r"[\s\-_/]+", device_name.lower().strip()))


def sheet_for(device_name: str) -> Sheet | None:
    """The data-sheet row of a GPU by its device name, or None for a GPU not listed."""
    have = words(device_name)
    for sheet in SHEETS:
        if any(set(name) <= have for name in sheet.names):
            return sheet
    return None
