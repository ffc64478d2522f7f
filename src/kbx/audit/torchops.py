"""Record which torch functions a candidate's wrapper calls outside its Triton launches.

Reference solutions may use torch only to allocate, view, reshape and read metadata; everything
else must run in Triton.  ``TorchCalls`` is a ``TorchFunctionMode`` that records the names of the
torch functions and tensor methods called while it is active, except inside a Triton launch
(the launch machinery itself touches tensors).  Used by the audit of ``solutions/reference``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.overrides import TorchFunctionMode

# Allocation (resizing an ``out`` argument included), views and layout, metadata, dtype/device
# moves of whole tensors, and randint: random tasks must draw their kernel seed from torch's
# generator.
ALLOWED = frozenset(
    """
    empty empty_like empty_strided zeros zeros_like ones ones_like full full_like new_empty
    new_zeros new_ones new_full new_empty_strided tensor as_tensor
    view view_as reshape reshape_as permute transpose t contiguous expand expand_as unsqueeze
    squeeze flatten unflatten movedim as_strided narrow select unbind split chunk __getitem__
    view_as_real view_as_complex
    size stride dim ndimension numel nelement element_size data_ptr storage_offset is_contiguous
    is_floating_point is_complex get_device dtype device shape ndim T mT real imag __len__
    requires_grad is_cuda layout __hash__ __eq__ __format__ __repr__ __bool__ __index__ __int__
    to cpu cuda type clone detach copy_ __setitem__ fill_ zero_ __get__ __set__ item tolist
    result_type promote_types can_cast is_tensor broadcast_shapes broadcast_to swapaxes moveaxis
    randint requires_grad_ resize_ resize_as_
    """.split()
)


class TorchCalls(TorchFunctionMode):
    def __init__(self, in_launch: Callable[[], bool] = lambda: False) -> None:
        super().__init__()
        self.calls: dict[str, int] = {}
        self.in_launch = in_launch

    def __torch_function__(
        self, func: Callable[..., Any], types: Any, args: Any = (), kwargs: Any = None
    ) -> Any:
        if not self.in_launch():
            name = getattr(func, "__name__", str(func))
            self.calls[name] = self.calls.get(name, 0) + 1
        return func(*args, **(kwargs or {}))

    def forbidden(self) -> dict[str, int]:
        return {k: v for k, v in self.calls.items() if k not in ALLOWED}
