"""Headless Chromium for the report's tests: load a page, return its DOM after load with the
console messages it logged, or take a screenshot.  `make install` installs Debian's chromium.

Run as ``python -m tests.analyze.chromium`` to redraw docs/analysis-report.png from the
synthetic results in tests/analyze/report_data.py."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome")
TIMEOUT_S = 120  # a cold start on a loaded 2-core machine takes a few seconds; this is a hang
WINDOW = (1280, 2400)
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "analysis-report.png"


def find() -> str | None:
    """The browser's path, or None where none is installed."""
    return next((p for p in map(shutil.which, NAMES) if p), None)


@dataclass(frozen=True)
class Page:
    dom: str  # the DOM serialized after the load event
    console: list[str]  # every console message the page logged (Chromium logs them all as INFO)


def _run(browser: str, *args: str) -> subprocess.CompletedProcess[str]:
    # A fresh profile per call, so runs in parallel never share one; --no-sandbox because tests
    # may run as root in a container, where Chromium's sandbox cannot start.
    with tempfile.TemporaryDirectory(prefix="kbx-chromium-") as profile:
        cmd = [
            browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}", *args,
        ]  # fmt: skip
        return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, check=True)


def load(browser: str, page: Path) -> Page:
    done = _run(browser, "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri())
    console = [m.group(1) for m in re.finditer(r":CONSOLE[^\]]*\] (.*)", done.stderr)]
    return Page(dom=done.stdout, console=console)


def screenshot(browser: str, page: Path, png: Path) -> Path:
    width, height = WINDOW
    _run(browser, f"--window-size={width},{height}", f"--screenshot={png}", page.as_uri())
    return png


def png_size(png: Path) -> tuple[int, int]:
    """Width and height from a PNG's header (its IHDR chunk follows the 8-byte signature)."""
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def main() -> int:
    from kbx.analyze.report import write_report
    from tests.analyze.report_data import synthetic_results

    browser = find()
    if browser is None:
        print(
            "no chromium: run `make install` as root, or apt-get install chromium", file=sys.stderr
        )
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        page = write_report(synthetic_results(), Path(tmp) / "report.html")
        print(screenshot(browser, page, SCREENSHOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
