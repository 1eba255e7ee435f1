"""Padding shared by the frontends: SAME geometry, and the border modes (reflect, symmetric,
edge, wrap) in Arm NN layers."""
from __future__ import annotations

from typing import NamedTuple

from ..ir.graph import Port
from ..ir.types import DataType, PaddingMode
from .builder import NetBuilder, Unsupported
from .copies import repeat


def same_pads(size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """SAME padding of one spatial axis as (before, after): the output has ceil(size / stride)
    elements and the odd element of padding goes after (TensorFlow's SAME, ONNX's SAME_UPPER;
    SAME_LOWER is the same pair the other way round)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


#: what CpuRef's Pad (and so 23.08's MirrorPad) takes of the IR's types (RefLayerSupport::IsPadSupported)
PAD_TYPES = (DataType.Float32, DataType.Float16, DataType.QAsymmS8, DataType.QuantisedAsymm8)  # (and QSymmS16)
#: how far each mode reads into the axis: reflect never repeats the border element
_REACH = {"reflect": 1, "symmetric": 0, "wrap": 0}


class PadNames(NamedTuple):
    """The suffixes (formatted with the axis a) of the layers border_pad adds per padded axis,
    so that each frontend keeps the layer names its files have always had."""
    before: str = "_l{a}"
    after: str = "_r{a}"
    join: str = "_{a}"
    first: str = "_first{a}"  # edge: the border slice that is repeated
    last: str = "_last{a}"


def border_pad(nb: NetBuilder, x: Port, pads, mode: str, name: str, *, names: PadNames = PadNames()) -> Port:
    """numpy.pad(x, pads, mode) for mode "reflect", "symmetric", "edge" or "wrap", exactly;
    pads = [(before, after)] per axis, none negative. Reflect and symmetric are one Pad layer
    (MirrorPad) from the 23.08 format on; otherwise, and for edge and wrap, each padded axis
    is StridedSlices (reversed for reflect and symmetric) joined with x by a Merger."""
    if mode not in ("reflect", "symmetric", "edge", "wrap"):
        raise ValueError(f"border_pad: mode {mode!r}")  # (a caller's bug: the frontends check the mode)
    pads = [(int(b), int(a)) for b, a in pads]
    for axis, (b, a) in enumerate(pads):
        d = x.info.shape[axis]
        # (edge repeats the border element any number of times; an empty axis has none)
        if (b or a) and (d == 0 or mode in _REACH and max(b, a) > d - _REACH[mode]):
            raise Unsupported(f"{mode} padding {b, a} is larger than dimension {axis} ({d}) allows")
    if mode in ("reflect", "symmetric") and nb.target.at_least("23.08") and x.info.dtype in PAD_TYPES:
        return nb.mirror_pad(x, pads, PaddingMode.Reflect if mode == "reflect" else PaddingMode.Symmetric, name)
    if any(b or a for b, a in pads):
        nb.report.decomposition("Pad", f"{mode}: StridedSlices and a Merger per padded axis")
    for axis, (b, a) in enumerate(pads):
        if b or a:
            x = _pad_axis(nb, x, axis, b, a, mode, name, names)
    return x


def _pad_axis(nb: NetBuilder, x: Port, axis: int, before: int, after: int, mode: str, name: str,
              names: PadNames) -> Port:
    d = x.info.shape[axis]
    nm = {k: f"{name}{v.format(a=axis)}" for k, v in names._asdict().items()}
    lo = hi = None
    if mode == "edge":
        if before:
            lo = repeat(nb, nb.take(x, axis, 0, 1, nm["first"]), axis, before, nm["before"])
        if after:
            hi = repeat(nb, nb.take(x, axis, d - 1, d, nm["last"]), axis, after, nm["after"])
    elif mode == "wrap":
        lo = nb.take(x, axis, d - before, d, nm["before"]) if before else None
        hi = nb.take(x, axis, 0, after, nm["after"]) if after else None
    else:  # reflect (e = 1) or symmetric (e = 0): indices before-1+e .. e and d-1-e .. d-after-e, descending
        e = _REACH[mode]
        if before:
            lo = nb.take(x, axis, before - 1 + e, (e - 1) if e else None, nm["before"], -1)
        if after:
            stop = d - 1 - e - after  # (-1 would be read as the last index: the run ends at index 0)
            hi = nb.take(x, axis, d - 1 - e, stop if stop >= 0 else None, nm["after"], -1)
    return nb.concat([p for p in (lo, x, hi) if p is not None], axis, nm["join"])
