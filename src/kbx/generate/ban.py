"""KernelAgent's scan for PyTorch fallbacks (methods.md 3.3): a regex scan of the kernel with
comments and docstrings removed.  A hit is the round's error message."""

from __future__ import annotations

import io
import re
import tokenize

BANNED: tuple[tuple[str, str], ...] = (
    (r"\btorch\.nn\b|^\s*(from|import)\s+torch\.nn\b|\bnn\.Module\b", "torch.nn"),
    (r"(?<![\w.])F\.\w+\s*\(", "torch.nn.functional (F.*)"),
    (r"\.forward\s*\(", "a module's .forward()"),
    (r"\btorch\.conv\w*", "torch.conv*"),
    (
        r"\btorch\.(relu|sigmoid|tanh|softmax|log_softmax|gelu|mish|hardtanh|"
        r"max_pool\w*|avg_pool\w*|adaptive_\w+pool\w*)\b",
        "a torch activation or pooling helper",
    ),
    (r"\btorch\.ops\.aten\b", "torch.ops.aten"),
    (r"\btorch\.(matmul|mm|bmm|addmm|baddbmm)\b", "torch.matmul/mm/bmm"),
    (r"(?<!torch)\.(matmul|mm|bmm)\s*\(|\s@\s", "a Tensor matmul (.matmul/.mm/.bmm or @)"),
    (r"\beinsum\b", "einsum"),
    (
        r"^\s*(import|from)\s+inspect\b|\bsys\._getframe\b|\bf_locals\b|\bf_globals\b|"
        r"\bglobals\(\)|\blocals\(\)",
        "frame introspection",
    ),
)
PATTERNS = [(re.compile(p, re.MULTILINE), what) for p, what in BANNED]


def strip_comments(code: str) -> str:
    """The code without comments and docstrings (strings that stand as statements)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return re.sub(r"#.*", "", code)
    kept, previous = [], tokenize.NEWLINE
    for tok in tokens:
        docstring = tok.type == tokenize.STRING and previous in (
            tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.NL,
        )  # fmt: skip
        if tok.type == tokenize.COMMENT or docstring:
            kept.append(tok._replace(string='""' if docstring else ""))
        else:
            kept.append(tok)
        if tok.type not in (tokenize.COMMENT, tokenize.NL):
            previous = tok.type
    return tokenize.untokenize(kept)


def scan(code: str) -> str | None:
    """The violation message, or None when the kernel uses no banned PyTorch."""
    text = strip_comments(code)
    hits = [what for pattern, what in PATTERNS if pattern.search(text)]
    return f"Disallowed PyTorch usage detected: {', '.join(hits)}" if hits else None
