"""Comparing an .armnn tensor with the source model's: the tolerances, the result of one
comparison, and the ways (as is, NCHW <-> NHWC, reshape) to bring one's shape to the other's.
Used by `verify` for the outputs (verify_cmd.py) and for every layer (verify_layers.py)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .ir.axes import TO_NCHW, TO_NHWC
from .ir.types import TensorInfo


@dataclass(frozen=True)
class Tolerance:
    """Float tensors pass when |got - ref| <= atol + rtol * |ref| everywhere; quantized ones when
    off by at most `lsb` quantization steps. rtol or atol None: the network's default (resolved:
    FLOAT32, or FLOAT16 for a network that computes in Float16)."""
    rtol: float | None = None
    atol: float | None = None
    lsb: float = 1.0
    atol_of_max: bool = False  # atol is that fraction of each tensor's largest finite |ref|

    def resolved(self, float16: bool = False) -> "Tolerance":
        base = FLOAT16 if float16 else FLOAT32
        if self.atol is None:
            return Tolerance(base.rtol if self.rtol is None else self.rtol, base.atol, self.lsb, base.atol_of_max)
        return Tolerance(base.rtol if self.rtol is None else self.rtol, self.atol, self.lsb, self.atol_of_max)

    def atol_for(self, ref: np.ndarray) -> float:
        if not self.atol_of_max:
            return self.atol
        finite = np.abs(ref[np.isfinite(ref)])
        return self.atol * float(finite.max()) if finite.size else self.atol

    def __str__(self):
        t = self.resolved()
        atol = f"{t.atol:g} x max |ref|" if t.atol_of_max else f"{t.atol:g}"
        return f"rtol {t.rtol:g}, atol {atol}, {t.lsb:g} LSB"


FLOAT32 = Tolerance(1e-3, 1e-4)
# A Float16 network's outputs carry its roundings: on the 167 float reference models with --fp16
# (their .npz inputs), Arm NN 20.08 and 23.08 CpuRef are within 0.0091 x max |output| of the
# source runtime's float32 outputs (python scripts/fp16_verify_sweep.py); the default allows
# 2%, plus 1% of each value.
FLOAT16 = Tolerance(1e-2, 2e-2, atol_of_max=True)


@dataclass
class Comparison:
    name: str                  # the output, or the .armnn layer for --per-layer
    shape: tuple
    max_abs: float
    max_rel: float | None      # over elements whose reference exceeds atol in magnitude
    lsb: float | None          # max abs error in quantization steps (quantized tensors)
    ok: bool
    node: str = ""             # --per-layer: the source node and its operator
    op: str = ""
    layer_type: str = ""
    fused: list = field(default_factory=list)  # --per-layer: earlier source nodes computed by the same tensor

    def cells(self) -> tuple[str, ...]:
        return ("x".join(map(str, self.shape)) or "scalar", f"{self.max_abs:.3g}",
                "-" if self.max_rel is None else f"{self.max_rel:.3g}",
                "-" if self.lsb is None else f"{self.lsb:g}", "ok" if self.ok else "FAIL")


def reshapings(shape: tuple, target: tuple, permuted_first: bool = False) -> list:
    """Ways to bring an array of `shape` to `target`: None (as is), a
    transpose (NCHW <-> NHWC), or "reshape" (same elements in order)."""
    ways = [None] if tuple(shape) == tuple(target) else []
    if len(shape) == 4:
        perms = [p for p in (TO_NCHW, TO_NHWC) if tuple(shape[i] for i in p) == tuple(target)]
        ways = perms + ways if permuted_first else ways + perms
    if not ways and int(np.prod(shape)) == int(np.prod(target)):
        ways = ["reshape"]
    return ways


def apply_way(a: np.ndarray, way, target) -> np.ndarray:
    if way is None:
        return a
    if way == "reshape":
        return a.reshape(target)
    return np.ascontiguousarray(a.transpose(way))


def real_values(a: np.ndarray, quant) -> np.ndarray:
    a = np.asarray(a)
    if quant is None:
        return a.astype(np.float64)
    return (a.astype(np.float64) - quant[1]) * quant[0]


def armnn_quant(info: TensorInfo):
    return (info.scale, info.offset) if info.dtype.is_quantized else None


# -- comparing --------------------------------------------------------------------------

def compare(name: str, ref, ref_quant, got, got_info: TensorInfo, tol: Tolerance, ways=(None,),
            float_step: float | None = None) -> Comparison:
    """Compare the .armnn tensor `got` with the source's `ref` in real values,
    under each of `ways` to match their shapes; the closest match counts. `float_step`: the
    quantization step of a float output that a Dequantize wrote (its error counts in steps)."""
    step = got_info.scale if got_info.dtype.is_quantized else (ref_quant[0] if ref_quant else float_step)
    best = None
    for way in ways:
        g = real_values(apply_way(np.asarray(got), inverse(way), np.shape(ref)), armnn_quant(got_info))
        r = real_values(ref, ref_quant)
        c = _errors(name, r, g.reshape(r.shape), tol, step)
        if best is None or (c.ok, -c.max_abs) > (best.ok, -best.max_abs):
            best = c
    return best


def inverse(way):
    if way is None or way == "reshape":
        return way
    return tuple(int(i) for i in np.argsort(way))


def _errors(name, ref: np.ndarray, got: np.ndarray, tol: Tolerance, step) -> Comparison:
    tol = tol.resolved()  # (as given, if already resolved)
    atol = tol.atol_for(ref)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where((ref == got) | (np.isnan(ref) & np.isnan(got)), 0.0, np.abs(got - ref))
    diff = np.where(np.isnan(diff), np.inf, diff)
    max_abs = float(diff.max()) if diff.size else 0.0
    big = np.abs(ref) > atol
    max_rel = float((diff[big] / np.abs(ref[big])).max()) if big.any() else None
    if step:
        lsb = round(max_abs / step, 3)
        # (float outputs of a Dequantize: both sides are level * step rounded to float32, which
        # can make one step 1.001 steps apart; the rounding of the two products is forgiven)
        slack = np.finfo(np.float32).eps * (np.abs(ref) + np.abs(got))
        ok = lsb <= tol.lsb or bool(np.all(diff <= tol.lsb * step + slack))
    else:
        lsb = None
        ok = bool(np.all(diff <= atol + tol.rtol * np.abs(np.nan_to_num(ref))))
    return Comparison(name, tuple(ref.shape), max_abs, max_rel, lsb, ok)
