"""The roofline's physical peaks: the data sheet's where the GPU is listed, never below a
measurement; an unlisted GPU a conservative floor and a one-line warning."""

import logging

import pytest

from kbx.gpu import hardware
from kbx.gpu.hardware import UNKNOWN_FACTOR, Peaks, physical_limits

MEASURED = {"fp32": 50.0, "tf32": 350.0, "fp16": 700.0, "bf16": 700.0}


def test_a_listed_gpu_takes_its_data_sheet():
    limits = physical_limits("NVIDIA H100 80GB HBM3", 2900.0, MEASURED)
    assert (limits.bandwidth_gbs, limits.tflops) == (3350, 1979)
    assert limits.basis == "data sheet: H100 SXM" and limits.warning is None


def test_a_measurement_above_the_sheet_wins_and_is_reported():
    limits = physical_limits("NVIDIA L4", 320.0, {"fp32": 40.0})
    assert limits.bandwidth_gbs == 320.0 and limits.tflops == 242.5
    assert limits.warning and "320 GB/s" in limits.warning and "40 TFLOP/s fp32" in limits.warning
    assert "\n" not in limits.warning


def test_an_unknown_gpu_gets_a_conservative_floor_and_one_warning_line(monkeypatch, caplog):
    limits = physical_limits("NVIDIA Future X1", 1000.0, MEASURED)
    assert limits.bandwidth_gbs == 1000.0 * UNKNOWN_FACTOR >= 2000.0
    assert limits.tflops == 700.0 * UNKNOWN_FACTOR
    assert limits.warning and "NVIDIA Future X1" in limits.warning and "\n" not in limits.warning
    peaks = Peaks(1000.0, MEASURED, "NVIDIA Future X1")
    copy_ms = 1e9 / 1000e9 * 1e3  # 1 GB at the measured copy bandwidth
    assert peaks.floor_ms(1e9, 0.0) == pytest.approx(copy_ms / UNKNOWN_FACTOR)
    # loading the peaks logs the warning once, in one line
    fp = {"gpu": "NVIDIA Future X1", "driver": "1", "torch": "2"}
    monkeypatch.setattr(hardware, "fingerprint", lambda device: fp)
    monkeypatch.setattr(hardware, "measure_peaks", lambda: peaks)
    with caplog.at_level(logging.WARNING, logger="kbx.gpu.hardware"):
        assert hardware.load_peaks(None) is peaks
    assert [r.getMessage() for r in caplog.records] == [limits.warning]


def test_cached_peaks_find_their_sheet_by_the_fingerprint_s_gpu(monkeypatch, tmp_path):
    """Peaks cached before they carried the GPU's name still find its sheet."""
    fp = {"gpu": "NVIDIA H200", "driver": "580", "torch": "2.11"}
    monkeypatch.setattr(hardware, "fingerprint", lambda device: fp)
    (tmp_path / "peaks-NVIDIA_H200-580-2.11.json").write_text(
        '{"bandwidth_gbs": 4000.0, "tflops": {"fp32": 50.0}}'
    )
    peaks = hardware.load_peaks(tmp_path)
    assert peaks.gpu == "NVIDIA H200" and peaks.limits.bandwidth_gbs == 4800
