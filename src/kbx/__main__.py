"""``python -m kbx``: the ``kbx`` command, for a source tree that is not installed."""

from kbx.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
