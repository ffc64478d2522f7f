"""Two model answers for the reward examples: kbx's own Triton relu in a markdown fence (as a
model would write it) and a relu with no Triton kernel, which kbx rejects."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = "Activation/relu"
GOOD = (
    "Here is my kernel:\n```python\n"
    + (ROOT / "solutions/reference/Activation/relu.py").read_text()
    + "```\n"
)
BAD = "```python\nimport torch\n\ndef relu(x):\n    return torch.relu(x)\n```\n"
