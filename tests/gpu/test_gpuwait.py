"""gpuwait: processes wait for the GPU asleep, and spin only while they hold the timing turn."""

from __future__ import annotations

from kbx.gpu import gpulock, gpuwait


class FakeDriver:
    """The four driver calls gpuwait makes, on ``n`` devices whose flags it records."""

    def __init__(self, n: int = 2, flags: int = 0x10 | gpuwait.SPIN) -> None:
        self.flags = [flags] * n
        self.sets: list[tuple[int, int]] = []

    def cuDeviceGetCount(self, count):  # noqa: N802 - the driver's names
        count._obj.value = len(self.flags)
        return 0

    def cuDeviceGet(self, dev, ordinal):  # noqa: N802
        dev._obj.value = ordinal
        return 0

    def cuDevicePrimaryCtxGetState(self, dev, flags, active):  # noqa: N802
        flags._obj.value = self.flags[dev.value]
        active._obj.value = 1
        return 0

    def cuDevicePrimaryCtxSetFlags_v2(self, dev, flags):  # noqa: N802
        self.flags[dev.value] = flags
        self.sets.append((dev.value, flags))
        return 0


def use(monkeypatch, drv):
    monkeypatch.setattr(gpuwait, "CONTEXTS", gpuwait.Contexts(lambda: drv))


def test_asleep_sets_blocking_sync_on_every_device_and_keeps_other_flags(monkeypatch):
    drv = FakeDriver()
    use(monkeypatch, drv)
    assert gpuwait.asleep()
    assert drv.flags == [0x10 | gpuwait.BLOCKING] * 2
    assert gpuwait.asleep() and len(drv.sets) == 2  # already asleep: no more driver calls


def test_the_timing_turn_spins_and_then_sleeps_again(monkeypatch, tmp_path):
    drv = FakeDriver(n=1)
    use(monkeypatch, drv)
    gpuwait.asleep()
    lock = str(tmp_path / "gpu0.lock")
    with gpulock.shared(lock, "check"):
        assert drv.flags == [0x10 | gpuwait.BLOCKING]  # shared work waits asleep
    with gpulock.exclusive(lock, "timing"):
        assert drv.flags == [0x10 | gpuwait.SPIN]
        with gpulock.exclusive(lock, "inner"):  # re-entered: no switch of its own
            pass
        assert drv.flags == [0x10 | gpuwait.SPIN]
    assert drv.flags == [0x10 | gpuwait.BLOCKING]
    assert [f for _, f in drv.sets] == [
        0x10 | gpuwait.BLOCKING,
        0x10 | gpuwait.SPIN,
        0x10 | gpuwait.BLOCKING,
    ]


def test_a_process_that_never_went_asleep_is_left_as_it_is(monkeypatch, tmp_path):
    """The fork server and CPU runs: an exclusive hold never touches (or initialises) the
    driver."""
    drv = FakeDriver(n=1)
    use(monkeypatch, drv)
    with gpulock.exclusive(str(tmp_path / "gpu0.lock"), "timing"):
        pass
    assert drv.sets == [] and not gpuwait.CONTEXTS.loaded


def test_without_a_driver_nothing_happens(monkeypatch, tmp_path):
    use(monkeypatch, None)
    assert not gpuwait.asleep()
    with gpulock.exclusive(str(tmp_path / "gpu0.lock"), "timing"):
        pass
    assert not gpuwait.begin_turn()
