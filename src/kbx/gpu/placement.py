"""Where one job's GPU work goes, as one value: the device, which of the process's visible GPUs,
that GPU's lock, the core its timing turns run on, and whether the job is timed. The stages
(reference outputs, the judge, baselines, timing) take it whole, so that none of them can be
handed a lock of one GPU and the index of another."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    device: str = "cpu"
    gpu: int | None = None  # index among the process's visible GPUs; None: the current one
    lock: str | None = None  # the GPU lock's path (``gpulock``); None: no lock (the CPU)
    timing_core: int | None = None  # the core the GPU's timing turns run on (``cores``)
    timed: bool = False  # the candidate's benchmark cases are timed

    @property
    def cuda(self) -> bool:
        return self.device == "cuda"

    @property
    def current(self) -> int | None:
        """The GPU this process's threads make current for the job (``gpuops.on_device``)."""
        return self.gpu if self.cuda else None


CPU = Placement()
