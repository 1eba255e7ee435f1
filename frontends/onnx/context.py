"""What converters and checks see of the conversion: inputs as Ports or
constants, attributes, logical (ONNX) shapes, and constants made run-time."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.descriptors import ReshapeDescriptor
from armnn_import.ir.graph import Port
from armnn_import.ir.types import ConstTensor, DataType, LayerType
from armnn_import.lowering import Unsupported

MAX_RANK = 5
MAX_ELEMENTS = 2 ** 28  # constants we build in memory (1 GiB of float32); Arm NN's own limit is 2^31


def check_size(shape, what: str) -> None:
    """Refuse absurd sizes (from hostile or broken models) before allocating anything."""
    n = 1
    for d in shape:
        n *= max(int(d), 0)
    if n > MAX_ELEMENTS:
        raise Unsupported(f"{what} would have {n} elements (more than {MAX_ELEMENTS})")


class LoweringContext:
    """Mixed into the Converter; needs self.values, self.scalars, self.bool_float,
    self.anchor, self.g, self.b and self.report. With them the Converter satisfies
    armnn_import.context.ConverterContext (the contract shared with TFLite's Ctx)."""

    @property
    def target(self):
        """The Arm NN format written (armnn_import.target.Target)."""
        return self.g.target

    def has(self, node, i) -> bool:
        return i < len(node.inputs) and node.inputs[i] != ""

    def is_const(self, node, i) -> bool:
        return self.has(node, i) and not isinstance(self.values.get(node.inputs[i]), Port)

    def value(self, node, i):
        v = self.values.get(node.inputs[i]) if self.has(node, i) else None
        return v if isinstance(v, np.ndarray) else None

    def readers(self, name: str) -> list:
        """The nodes that read tensor `name`, and None for a graph output (as the pre-scan's)."""
        return [n for n in self.nodes if name in n.inputs] + (
            [None] if any(o.name == name for o in self.model.graph.output) else [])

    def val(self, node, i):
        """Input i: a Port (runtime), a numpy array (constant) or None (absent)."""
        return self.values[node.inputs[i]] if self.has(node, i) else None

    def const(self, node, i, what: str = "") -> np.ndarray:
        v = self.val(node, i)
        if isinstance(v, Port):
            raise Unsupported(f"input {i} ({node.inputs[i]!r}{', ' + what if what else ''}) must be a constant, "
                              "but it is computed at run time",
                              "Arm NN has no runtime weights or shape parameters", "needs-constant")
        if v is None or isinstance(v, list):
            raise Unsupported(f"input {i} ({what or 'required'}) is missing", code="bad-model")
        return v

    def port(self, node, i, dtypes=(DataType.Float32,)) -> Port:
        """Input i as a runtime tensor (a constant is materialised)."""
        v = self.val(node, i)
        if v is None:
            raise Unsupported(f"input {i} is missing", code="bad-model")
        if not isinstance(v, Port):
            v = self.materialize(v, self.name(node, f"in{i}"))
        if v.info.dtype == DataType.Boolean and not dtypes:
            # data movement of a boolean: CpuRef moves no Boolean tensors, so move its 0/1 mask
            from .ops.logic import float01
            v = float01(self, v, self.name(node, f"in{i}_mask"))
        if dtypes and v.info.dtype not in dtypes:
            raise Unsupported(f"input {i} is a {v.info.dtype.name} tensor at run time; this lowering needs "
                              + "/".join(d.name for d in dtypes), code="unsupported-type")
        return v

    def shape(self, node, i) -> tuple:
        v = self.val(node, i)
        return self.lshape(v) if isinstance(v, Port) else tuple(np.shape(v))

    def lshape(self, v) -> tuple:
        """The ONNX (logical) shape of a Port or array."""
        if isinstance(v, Port):
            return () if v in self.scalars else v.info.shape
        return tuple(np.shape(v))

    def attr(self, node, key, default=None):
        return node.attrs.get(key, default)

    def name(self, node, suffix: str = "") -> str:
        return f"{node.name}_{suffix}" if suffix else node.name

    def to_shape(self, x: Port, shape, name: str) -> Port:
        """Reshape x to the logical shape `shape` (rank 0 is stored as [1])."""
        shape = tuple(int(d) for d in shape)
        y = self.b.reshape(x, shape or (1,), name)
        if not shape:
            if y is x and x not in self.scalars:
                y = self.g.add(LayerType.Reshape, name, [x], ReshapeDescriptor((1,))).out()
            self.scalars.add(y)
        elif y is x and x in self.scalars:
            y = self.g.add(LayerType.Reshape, name, [x], ReshapeDescriptor(shape)).out()
        return y

    def materialize(self, arr, name: str) -> Port:
        """A constant as a runtime tensor: derived from a float input without a
        Constant layer when it is float, else a Constant layer (with a warning)."""
        arr = np.asarray(arr)
        if arr.ndim > MAX_RANK:
            raise Unsupported(f"a {arr.ndim}-D constant; Arm NN tensors have at most {MAX_RANK} dimensions")
        if arr.size == 0:
            raise Unsupported("an empty constant tensor, which Arm NN cannot represent")
        check_size(arr.shape, "the constant")
        if self.b.target.at_least("23.08") and arr.dtype.kind in "fiu":
            # 23.08 reads the Constant layers of its files as they are (serialize/layouts.py):
            # one exact layer, where the FullyConnected below lets a NaN or inf of x through
            return self._constant_layer(arr, name)
        if arr.dtype.kind == "f" and self.anchor is not None:
            p = self.b.constant(self.anchor, arr.astype(np.float32), name)
        elif arr.dtype.kind == "b" and self.anchor is not None:
            # CpuRef has no Boolean Constant: compare a float constant with 0.5
            f = self.b.constant(self.anchor, arr.astype(np.float32), f"{name}_float")
            p = self.b.binary(LayerType.Greater, f, self.b.fill_like(f, 0.5, f"{name}_half"), name)
        else:
            if arr.dtype.kind == "b":
                raise Unsupported("a constant boolean tensor in a network without a float input "
                                  "(CpuRef has no Boolean Constant layer)")
            if arr.dtype.kind not in "fiu":
                raise Unsupported(f"a constant of type {arr.dtype}, which Arm NN cannot hold")
            _check_int32(arr)
            # Arm NN 23.08 reads a Constant of a file without featureVersions as depthwise weights
            # and permutes it: the [1, 1, rows, last] form + Reshape is read right by every release
            data = arr.astype(np.float32 if arr.dtype.kind == "f" else np.int32)
            p = self.b.constant_layer(data.reshape(data.shape or (1,)), name)
            if arr.ndim == 0:
                self.scalars.add(p)
            return p
        if arr.ndim == 0:
            self.scalars.add(p)
        return p

    def _constant_layer(self, arr, name: str) -> Port:
        """A Constant layer of `arr` as float32 or int32."""
        _check_int32(arr)
        data = arr.astype(np.float32 if arr.dtype.kind == "f" else np.int32)
        p = self.g.add(LayerType.Constant, name, tensors={"input": ConstTensor(data.reshape(data.shape or (1,)))}).out()
        if arr.ndim == 0:
            self.scalars.add(p)
        return p


def _check_int32(arr) -> None:
    if arr.dtype.kind in "iu" and arr.size and (arr.min() < -2 ** 31 or arr.max() >= 2 ** 31):
        raise Unsupported("an integer constant outside the int32 range")
