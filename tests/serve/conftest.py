"""A live ``kbx serve --device cpu`` with tokens and small limits, shared by a module's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.serve.live import Server

TOKEN = "test-token-5b1f"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("serve")
    tokens = root / "tokens.txt"
    tokens.write_text(f"# test tokens\n{TOKEN}\nsha256:{'0' * 64}\n")
    args = ["--tokens", str(tokens), "--max-batch", "8", "--max-queue", "6"]
    args += ["--max-code-bytes", "20000", "--jobs", "2"]
    live = Server(root / "state", args).start()
    yield live
    live.stop()


@pytest.fixture
def auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}
