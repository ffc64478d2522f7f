"""CPU implementations of CUDA libdevice functions for Triton's interpreter.

The interpreter raises on every ``extern_elementwise`` call, so kernels that use
``libdevice.tanh``, ``pow``, ``log1p``, ``lgamma``, ``j1``... cannot run on the CPU.  kbx maps each
``__nv_*`` symbol to a NumPy or PyTorch function computed in float64 (or on the integers) and
casts to the kernel's result type.  Rounding-mode variants (``_rn``, ``_rz``, ...) and ``fast_``
approximations map to the correctly rounded function: results agree with the GPU within the
tolerance of float32 tasks, not bit for bit.

The functions NumPy lacks are torch's (``_t``), and ``extern_elementwise`` runs it
through ``torch_range`` (the launch gate's: kbx's libdevice range, inside ``pristine``'s shield),
with torch's C functions bound here, so that the op recorder leaves kbx's own torch work out and
nothing of the candidate's runs inside it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

_from_numpy, _to_numpy = torch.from_numpy, torch._C.TensorBase.numpy
# NumPy's functions bound before the candidate is imported: the stand-ins run inside kbx's
# libdevice range, where a function the candidate put in NumPy's namespace would compute unseen
_asarray, _float64, _errstate = np.asarray, np.float64, np.errstate
_lgamma, _exp, _floor, _remainder = torch.lgamma, torch.exp, torch.floor, torch.remainder
_lt, _eq, _and, _where, _mul = torch.lt, torch.eq, torch.logical_and, torch.where, torch.mul


def _t(fn: Callable[..., Any], pre: Callable[[np.ndarray], np.ndarray] | None = None) -> Any:
    """A libdevice function computed with torch's function ``fn`` on the float64 array that
    ``pre`` makes of the argument: a plain tuple, which ``extern_elementwise`` runs in kbx's
    libdevice range."""
    return (fn, pre)


def torch_on(op: tuple[Any, Any], x: np.ndarray) -> np.ndarray:
    """``op`` (made by ``_t``) on ``x``, converted with torch's bound C functions."""
    fn, pre = op
    wide = _asarray(x if pre is None else pre(x), dtype=_float64)
    return _to_numpy(fn(_from_numpy(wide)))  # type: ignore[no-any-return]


def _gamma(t: torch.Tensor) -> torch.Tensor:
    """Gamma from lgamma and the sign of the gamma function on negative non-integers."""
    odd = _eq(_remainder(_floor(t), 2), 1)
    sign = _where(_and(_lt(t, 0), odd), -1.0, 1.0)
    return _mul(_exp(_lgamma(t)), sign)  # type: ignore[no-any-return]


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _popc(x: np.ndarray) -> np.ndarray:
    bits = x.dtype.itemsize * 8
    u = x.astype(f"uint{bits}")
    return np.array([bin(int(v)).count("1") for v in u.ravel()]).reshape(x.shape)


def _clz(x: np.ndarray) -> np.ndarray:
    bits = x.dtype.itemsize * 8
    u = x.astype(f"uint{bits}")
    return np.array([bits - int(v).bit_length() for v in u.ravel()]).reshape(x.shape)


def _mulhi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    bits = a.dtype.itemsize * 8
    prod = [(int(x) * int(y)) >> bits for x, y in zip(a.ravel(), b.ravel(), strict=True)]
    return np.array(prod, dtype=object).reshape(a.shape).astype(a.dtype)


UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "exp": np.exp,
    "exp2": np.exp2,
    "exp10": lambda x: np.power(10.0, x),
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "cbrt": np.cbrt,
    "rcbrt": lambda x: 1.0 / np.cbrt(x),
    "rcp": lambda x: 1.0 / x,
    "fabs": np.abs,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "rint": np.rint,
    "nearbyint": np.rint,
    "round": _round_half_away,
    "signbit": lambda x: np.signbit(x),
    "isinf": np.isinf,
    "isnan": np.isnan,
    "finite": np.isfinite,
    "isfinited": np.isfinite,
    "erf": _t(torch.special.erf),
    "erfc": _t(torch.special.erfc),
    "erfinv": _t(torch.special.erfinv),
    "erfcinv": _t(torch.special.erfinv, lambda x: 1 - x),
    "erfcx": _t(torch.special.erfcx),
    "lgamma": _t(torch.lgamma),
    "tgamma": _t(_gamma),
    "j0": _t(torch.special.bessel_j0),
    "j1": _t(torch.special.bessel_j1),
    "y0": _t(torch.special.bessel_y0),
    "y1": _t(torch.special.bessel_y1),
    "cyl_bessel_i0": _t(torch.special.i0),
    "cyl_bessel_i1": _t(torch.special.i1),
    "normcdf": _t(torch.special.ndtr),
    "normcdfinv": _t(torch.special.ndtri),
    "saturate": lambda x: np.clip(x, 0.0, 1.0),
    "logb": lambda x: np.floor(np.log2(np.abs(x))),
    "ilogb": lambda x: np.floor(np.log2(np.abs(x))).astype(np.int32),
    "popc": _popc,
    "popcll": _popc,
    "clz": _clz,
    "clzll": _clz,
    "abs": np.abs,
    "llabs": np.abs,
}

BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "pow": np.power,
    "powi": lambda x, n: np.power(x, n.astype(np.float64)),
    "fmod": np.fmod,
    "remainder": lambda x, y: x - y * np.rint(x / y),
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "fmin": np.fmin,
    "fmax": np.fmax,
    "fdim": lambda x, y: np.maximum(x - y, 0.0),
    "copysign": np.copysign,
    "nextafter": np.nextafter,
    "ldexp": lambda x, n: np.ldexp(x, n),
    "scalbn": lambda x, n: np.ldexp(x, n),
    "div": np.divide,
    "fdiv": np.divide,
    "mul": np.multiply,
    "add": np.add,
    "sub": np.subtract,
    "min": np.minimum,
    "max": np.maximum,
    "umin": np.minimum,
    "umax": np.maximum,
    "llmin": np.minimum,
    "llmax": np.maximum,
    "ullmin": np.minimum,
    "ullmax": np.maximum,
    "mulhi": _mulhi,
    "umulhi": _mulhi,
    "mul64hi": _mulhi,
    "umul64hi": _mulhi,
}

TERNARY: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    "fma": lambda a, b, c: a * b + c,
}

TABLES: tuple[dict[str, Any], ...] = (UNARY, BINARY, TERNARY)
SUFFIXES = ("_rn", "_rz", "_ru", "_rd")


def resolve(symbol: str, n_args: int) -> Callable[..., np.ndarray]:
    """``__nv_tanhf`` -> tanh, ``__nv_fast_powf`` -> pow, ``__nv_fmaf_rn`` -> fma, ..."""
    name = symbol.removeprefix("__nv_").removeprefix("fast_")
    for suffix in SUFFIXES:
        name = name.removesuffix(suffix)
    table = TABLES[n_args - 1] if 1 <= n_args <= 3 else {}
    for candidate in (
        name,
        name.removesuffix("f"),
        name.removesuffix("d"),
        "f" + name,
        name.removeprefix("f").removesuffix("f"),
    ):
        if candidate in table:
            return table[candidate]  # type: ignore[no-any-return]
    raise NotImplementedError(f"libdevice function {symbol} has no CPU implementation in kbx")


def extern_elementwise(
    lib_name: str,
    lib_path: str,
    symbol: str,
    args: list[Any],
    ret_type: Any,
    is_pure: bool,
    torch_range: Callable[..., Any] | None = None,
) -> Any:
    """Replacement for ``InterpreterBuilder.create_extern_elementwise``; ``torch_range(fn, *args)``
    runs a torch-computed function (``_t``) inside kbx's libdevice range."""
    from triton.runtime.interpreter import TensorHandle, _get_np_dtype

    fn = resolve(symbol, len(args))
    scalar = getattr(ret_type, "scalar", ret_type)
    arrays = [_asarray(a.data) for a in args]
    wide = [a.astype(_float64) if a.dtype.kind == "f" else a for a in arrays]
    with _errstate(all="ignore"):
        if type(fn) is tuple:
            run = torch_range if torch_range is not None else (lambda f, *a: f(*a))
            out = _asarray(run(torch_on, fn, *wide))
        else:
            out = _asarray(fn(*wide))
    return TensorHandle(out.astype(_get_np_dtype(scalar)), scalar)
