"""What the stages of one process share across candidates: the fork servers its children come
from and the reference outputs its checks compute.  A scheduler owns one for its lifetime; the
pipeline takes it with each candidate, and a candidate evaluated alone gets one of its own."""

from __future__ import annotations

from dataclasses import dataclass, field

from kbx.evaluate.references import References
from kbx.sandbox.servers import ForkServers


@dataclass
class Context:
    servers: ForkServers | None = None  # None: each child is a fresh interpreter
    refs: References = field(default_factory=References)

    def close(self) -> None:
        if self.servers is not None:
            self.servers.close()
        self.refs.close()
