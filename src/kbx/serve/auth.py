"""Bearer tokens: read from a file, kept only as SHA-256 digests, never logged.

The file holds one token a line, either as the token itself or as ``sha256:<hex digest>`` (so
that the file need not hold a secret: ``printf %s TOKEN | sha256sum``); blank lines and lines
starting with ``#`` are skipped.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

PREFIX = "sha256:"


class TokenError(ValueError):
    """A tokens file kbx cannot use; the message names the file and the line."""


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Tokens:
    """The digests of the tokens that may use the service."""

    def __init__(self, digests: set[str]) -> None:
        self.digests = frozenset(digests)

    @classmethod
    def read(cls, path: Path) -> Tokens:
        try:
            lines = path.read_text().splitlines()
        except OSError as exc:
            raise TokenError(f"{path}: cannot read the tokens file ({exc.strerror})") from None
        digests = set()
        for number, raw in enumerate(lines, start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith(PREFIX):
                hexdigest = line.removeprefix(PREFIX).lower()
                if len(hexdigest) != 64 or any(c not in "0123456789abcdef" for c in hexdigest):
                    raise TokenError(f"{path}:{number}: not a sha256 digest (64 hex digits)")
                digests.add(hexdigest)
            else:
                digests.add(digest(line))
        if not digests:
            raise TokenError(f"{path}: no tokens in the file")
        return cls(digests)

    def allows(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header carries one of the tokens."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return False
        presented = digest(token.strip())
        return any(hmac.compare_digest(presented, known) for known in self.digests)
