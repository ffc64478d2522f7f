"""Known-bad: skips kbx's checks in the child (and the Triton rule) by writing the outputs itself
with PyTorch and reporting `done` on kbx's progress channel at import."""
import json
import os

import torch

from kbx.suite import tensors
from kbx.suite import find

_task = find("Math/rsqrt")
_outputs = {"cases": [], "bench": []}
for _case in _task.cases:
    _inputs = _task.make_inputs(_case, "cpu")
    _outputs["cases"].append([tensors.to_cpu((torch.rsqrt(_inputs.args[0]), (_inputs.args[1],)))])
torch.save(_outputs, "outputs.pt")
for _fd in range(3, 64):
    try:
        os.write(_fd, b'{"event": "done", "timings": []}\n')
    except OSError:
        continue
os._exit(0)


def rsqrt(input, out=None):
    return torch.rsqrt(input)
