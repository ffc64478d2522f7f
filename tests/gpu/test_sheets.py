"""The data-sheet table: every listed GPU found by the names torch gives it, none by another's."""

import pytest

from kbx.gpu.sheets import SHEETS, sheet_for

NAMES = {
    "NVIDIA A100-SXM4-40GB": "A100 SXM4 40GB",
    "NVIDIA A100-SXM4-80GB": "A100 SXM4 80GB",
    "NVIDIA A100-PCIE-40GB": "A100 PCIe 40GB",
    "NVIDIA A100 80GB PCIe": "A100 PCIe 80GB",
    "NVIDIA H100 80GB HBM3": "H100 SXM",
    "NVIDIA H100 PCIe": "H100 PCIe",
    "NVIDIA H100 NVL": "H100 NVL",
    "NVIDIA H200": "H200 SXM",
    "NVIDIA H200 NVL": "H200 NVL",
    "NVIDIA L40S": "L40S",
    "NVIDIA L4": "L4",
    "NVIDIA GeForce RTX 4090": "GeForce RTX 4090",
    "NVIDIA GeForce RTX 5090": "GeForce RTX 5090",
    "NVIDIA B200": "B200",
}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_each_listed_gpu_is_found_by_its_device_name(name):
    sheet = sheet_for(name)
    assert sheet is not None and sheet.model == NAMES[name]


@pytest.mark.parametrize(
    "name", ["NVIDIA L40", "NVIDIA GH200 480GB", "Tesla V100-SXM2-16GB", "NVIDIA A10G", ""]
)
def test_a_gpu_the_table_lacks_is_not_taken_for_another(name):
    assert sheet_for(name) is None


def test_every_row_has_a_source_and_the_five_precisions():
    assert {s.model for s in SHEETS} == set(NAMES.values())
    for sheet in SHEETS:
        assert sheet.source and sheet.bandwidth_gbs > 0
        assert set(sheet.tflops) == {"fp32", "tf32", "fp16", "bf16", "int8"}
        assert sheet.tflops["fp32"] <= sheet.tflops["tf32"] <= sheet.tflops["fp16"]
        assert sheet.tflops["fp16"] <= sheet.tflops["int8"]


def test_figures_of_the_sheets():
    """A few figures as the vendor publishes them (dense)."""
    assert sheet_for("NVIDIA H100 80GB HBM3").bandwidth_gbs == 3350  # type: ignore[union-attr]
    assert sheet_for("NVIDIA A100-SXM4-80GB").bandwidth_gbs == 2039  # type: ignore[union-attr]
    assert sheet_for("NVIDIA H200").tflops["bf16"] == 989.5  # type: ignore[union-attr]
    assert sheet_for("NVIDIA L40S").tflops["fp32"] == 91.6  # type: ignore[union-attr]
