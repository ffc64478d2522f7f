"""stderrs: the one-line reason of a child's stderr."""

from pathlib import Path

from kbx.sandbox import stderrs


def reason(tmp_path: Path, text: str) -> str:
    return stderrs.summary(text, tmp_path)


def test_a_long_exception_keeps_its_headline(tmp_path):
    message = "CUDA out of memory. Tried to allocate 20.00 MiB. " + "GPU 0 is full. " * 60
    frames = 'Traceback (most recent call last):\n  File "x.py", line 1, in f\n'
    text = f"{frames}torch.OutOfMemoryError: {message}\n"
    got = reason(tmp_path, text)
    assert got.startswith("torch.OutOfMemoryError: CUDA out of memory") and len(got) == 400
    assert stderrs.lacked_memory(got)


def test_the_fault_handler_names_the_candidate_line(tmp_path):
    text = (
        "Fatal Python error: Segmentation fault\n\nCurrent thread:\n"
        f'  File "{tmp_path}/candidate.py", line 20 in rsqrt\n'
    )
    assert (
        reason(tmp_path, text)
        == "Fatal Python error: Segmentation fault (candidate.py, line 20 in rsqrt)"
    )


def test_without_an_exception_the_last_lines(tmp_path):
    assert reason(tmp_path, "one\ntwo\nthree\nfour\n") == "two | three | four"
    assert not stderrs.lacked_memory("two | three | four")


def test_nothing_written_no_reason(tmp_path):
    assert stderrs.summary("", tmp_path) == ""


def test_a_full_disk_is_told_apart():
    assert stderrs.lacked_space("OSError: [Errno 28] No space left on device: 'cases-0'")
    assert stderrs.lacked_space("sqlite3.OperationalError: database or disk is full")
    assert not stderrs.lacked_space("two | three | four")
