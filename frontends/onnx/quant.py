"""Quantized ONNX models (QDQ and QOperator) onto QuantisedAsymm8.

Arm NN's format has no Quantize or Dequantize layer, and one network cannot
mix float and quantized tensors, so a quantized model becomes a network
whose every tensor is QuantisedAsymm8 (uint8, one scale and offset):

- A run-time tensor carries its quantization in its Port's TensorInfo.
  QuantizeLinear on a quantized Port is an identity (same parameters) or a
  requantization (Activation Linear into the new ones); DequantizeLinear on a
  quantized Port is an identity: a QuantizeLinear -> DequantizeLinear pair is
  absorbed into the tensor's quantization.
- A float operator whose inputs are quantized (QDQ: between DequantizeLinear
  and QuantizeLinear nodes) is lowered by its quantized converter (REGISTRY.register_quantized,
  in ops/q*.py) computing straight into the quantization of the
  QuantizeLinear that follows it; data-movement operators (MOVES) keep the
  bytes and the quantization.
- DequantizeLinear of a constant is folded; converters read the quantized
  data behind it (weight()) so that per-tensor 8-bit weights stay exact.
- int8 maps exactly to uint8 (q + 128, zero point + 128); from the 20.08 format on,
  keep_int8 then gives the model's int8 tensors back their type (QAsymmS8, lowering/int8.py),
  told by their ONNX element types and zero points. Per-channel weights
  are requantized per tensor, the worst error reported (report.quantization)
  with a warning when large.
- Model edges: a float input whose consumers are all QuantizeLinear nodes with
  one quantization becomes a uint8 input with it; an output made by
  DequantizeLinear is the uint8 tensor behind it. Both are recorded in
  report.quantization.
- options.dequantize: the network is all float. Weights are dequantized,
  DequantizeLinear is an identity, and QuantizeLinear (like the result of a
  QLinear operator) clamps to the range its quantization can hold: quantizers
  fold Relu and Clip into that range, so a plain identity would drop them.
"""
from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from armnn_import.ir.graph import Port
from armnn_import.ir.types import DataType
from armnn_import.lowering import Unsupported
from armnn_import.lowering.quant import DEQUANTIZE_HINT, PER_CHANNEL_EXACT, requantize_weights

MS_DOMAIN = "com.microsoft"
# com.microsoft operators with converters (ops/q*.py); other operators of that domain are refused.
MS_OPS = frozenset({"QLinearAdd", "QLinearMul", "QLinearGlobalAveragePool", "QLinearConcat",
                    "QLinearAveragePool", "QGemm", "QLinearLeakyRelu", "QLinearSigmoid"})
QUANT_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul"}) | MS_OPS
# Float converters that only move bytes: on a quantized input they keep its quantization.
MOVES = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Split", "Slice",
                   "DepthToSpace", "SpaceToDepth"})
# The input holding the zero point of the tensor an operator writes.
ZERO_POINT_INPUT = {"QuantizeLinear": 2, "QLinearConv": 7, "QLinearMatMul": 7, "QLinearAdd": 7, "QLinearMul": 7,
                    "QLinearGlobalAveragePool": 4, "QLinearAveragePool": 4, "QLinearLeakyRelu": 4,
                    "QLinearSigmoid": 4, "QLinearConcat": 1, "QGemm": 8}


def qdq(*ops, since: int = 1, layers: tuple[str, ...] = (), notes: str = ""):
    """Register the quantized converter of float operators in QDQ and QOperator models
    (REGISTRY's quantized entries, listed by `armnn-import ops`)."""
    from .registry import REGISTRY
    return REGISTRY.register_quantized(*ops, since=since, layers=layers,
                                       notes=notes or "quantized inputs (QDQ): computed in 8 bits")


def to_uint8(q: np.ndarray) -> tuple[np.ndarray, int]:
    """Exact int8 -> uint8 of quantized data: (q + 128, the zero point's shift)."""
    if q.dtype == np.int8:
        return (q.astype(np.int16) + 128).astype(np.uint8), 128
    if q.dtype == np.uint8:
        return q, 0
    raise Unsupported(f"{q.dtype} quantized data; Arm NN's format has only 8-bit quantization")


def absent_zero_point(elem_type: int | None) -> np.ndarray:
    """The zero point a QuantizeLinear/DequantizeLinear without one uses: 0 of the quantized type
    (QuantizeLinear's output_dtype since opset 21, uint8 when unset; DequantizeLinear's input type)."""
    if elem_type in (None, 0, 2):  # TensorProto UNDEFINED, UINT8
        return np.zeros((), np.uint8)
    if elem_type == 3:  # TensorProto INT8
        return np.zeros((), np.int8)
    from onnx import TensorProto
    name = TensorProto.DataType.Name(elem_type) if elem_type in TensorProto.DataType.values() else elem_type
    raise Unsupported(f"{name} quantization; Arm NN's format has only 8-bit quantization")


def qparams(scale, zero_point) -> tuple[float, int]:
    """(scale, uint8 offset) of per-tensor quantization parameters given as arrays."""
    scale = np.asarray(scale)
    zp = np.zeros((), np.uint8) if zero_point is None else np.asarray(zero_point)
    if scale.size != 1 or zp.size != 1:
        raise Unsupported("per-channel quantization of a run-time tensor; Arm NN tensors have one scale")
    if zp.dtype not in (np.int8, np.uint8):
        raise Unsupported(f"{zp.dtype} quantization; Arm NN's format has only 8-bit quantization")
    s = float(np.float32(scale.reshape(-1)[0]))
    if not np.isfinite(s) or s <= 0:
        raise Unsupported(f"quantization scale {s}; it must be finite and positive")
    return s, int(zp.reshape(-1)[0]) + (128 if zp.dtype == np.int8 else 0)


def dequantized(q: np.ndarray, scale, zero_point, axis: int = 1) -> np.ndarray:
    """Real values of quantized constant data (per tensor or along `axis`)."""
    scale = np.asarray(scale, np.float64)
    zp = np.zeros(1) if zero_point is None else np.asarray(zero_point, np.float64)
    if scale.size > 1:
        shape = [1] * q.ndim
        shape[axis % q.ndim] = scale.size
        scale, zp = scale.reshape(shape), zp.reshape(shape) if zp.size > 1 else zp.reshape(-1)[0]
    else:
        scale, zp = scale.reshape(-1)[0], zp.reshape(-1)[0]
    return ((q.astype(np.float64) - zp) * scale).astype(np.float32)


class QuantState:
    """What the conversion knows about a model's quantization (the converter's `quant`)."""

    def __init__(self, model, values: dict, options, report):
        self.dequantize = bool(options.dequantize)
        self.report = report
        # From the 20.08 format on (set by the converter) the network keeps the model's float
        # inputs and outputs, with Quantize and Dequantize layers at its edges
        self.float_edges = False
        self.graph_outputs = {o.name for o in model.graph.output}
        self.active = any(node.op_type in QUANT_OPS for node in model.graph.node)
        # The indexes below are built when first asked for: a float model (nearly every one) never
        # asks, and for a large one they would hold an entry per node and tensor while it converts.
        self._model, self._index = model, None
        self._const_names = [k for k, v in values.items() if isinstance(v, np.ndarray)]
        self._values = values
        if self.dequantize:
            for node in model.graph.node:
                if node.op_type == "DequantizeLinear" and node.input[0] in self.constants:
                    self.note_dequantized(node.input[0])

    def _indexes(self) -> tuple[dict, dict, dict]:
        """(producer, consumers, constants): each tensor's producing node, its consuming nodes, and the
        constant values (the initializers, as they were when the conversion began, and Constant nodes)."""
        if self._index is None:
            producer, consumers = {}, {}
            constants = {k: self._values[k] for k in self._const_names}
            for node in self._model.graph.node:
                for o in node.output:
                    producer[o] = node
                for i in node.input:
                    consumers.setdefault(i, []).append(node)
                if node.op_type == "Constant" and len(node.attribute) == 1 and node.attribute[0].name == "value":
                    try:
                        constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
                    except Exception:  # noqa: BLE001 - a malformed constant is reported when folded
                        pass
            self._index = (producer, consumers, constants)
            self._const_names = self._values = None
        return self._index

    @property
    def producer(self) -> dict:
        return self._indexes()[0]

    @property
    def consumers(self) -> dict:
        return self._indexes()[1]

    @property
    def constants(self) -> dict:
        return self._indexes()[2]

    # -- the pre-scan and the conversion ask ---------------------------------------------------
    def allows_domain(self, node) -> bool:
        return node.domain == MS_DOMAIN and node.op in MS_OPS

    def converter(self, ctx, node):
        """The quantized converter of a float operator whose inputs are quantized, or None
        (the operator's own converter applies)."""
        if self.dequantize or not self.active or node.op in QUANT_OPS:
            return None
        if not any(isinstance(v, Port) and v.info.dtype.is_quantized
                   for v in (ctx.values.get(i) for i in node.inputs if i)):
            return None
        from .registry import REGISTRY
        entry = REGISTRY.lookup_quantized(node.op, ctx.opset)
        if entry is not None:
            return entry
        if node.op in MOVES:
            return None
        raise Unsupported(f"no quantized lowering of {node.op}, whose input is quantized", DEQUANTIZE_HINT)

    def _q_params_of(self, node) -> tuple[float, int] | None:
        """Constant per-tensor parameters of a QuantizeLinear node (None when not known statically)."""
        ins = list(node.input) + ["", ""]
        if ins[1] not in self.constants or (ins[2] and ins[2] not in self.constants):
            return None
        attrs = {a.name: a.i for a in node.attribute if a.type == a.INT}
        if attrs.get("block_size"):
            return None
        try:
            zp = self.constants[ins[2]] if ins[2] else absent_zero_point(attrs.get("output_dtype"))
            return qparams(self.constants[ins[1]], zp)
        except Unsupported:
            return None

    def after(self, tensor: str) -> tuple[float, int] | None:
        """The quantization of the QuantizeLinear nodes that every consumer of `tensor` is."""
        users = self.consumers.get(tensor, [])
        if not users or any(u.op_type != "QuantizeLinear" or u.input[0] != tensor for u in users):
            return None
        params = {self._q_params_of(u) for u in users}
        return params.pop() if len(params) == 1 and None not in params else None

    def before(self, tensor: str) -> tuple[float, int] | None:
        """The quantization of the DequantizeLinear nodes that every consumer of a uint8 `tensor` is."""
        users = self.consumers.get(tensor, [])
        if not users or any(u.op_type != "DequantizeLinear" or u.input[0] != tensor for u in users):
            return None
        params = {self._q_params_of(u) for u in users}  # (an absent zero point: uint8's 0)
        return params.pop() if len(params) == 1 and None not in params else None

    def out_quant(self, node, keep: Port | None = None) -> tuple[float, int]:
        """Output quantization of a float operator lowered on quantized inputs: the
        QuantizeLinear's that follows it, else (operators that cannot leave their input's
        range, given as `keep`) the input's."""
        q = self.after(node.outputs[0])
        if q is not None:
            return q
        if keep is not None:
            return keep.info.scale, keep.info.offset
        raise Unsupported(f"the result of {node.op} on quantized inputs is used as a float tensor "
                          "(no QuantizeLinear follows it); Arm NN cannot mix float and quantized tensors",
                          DEQUANTIZE_HINT)

    def input_quant(self, name: str) -> tuple[float, int] | None:
        """A float model input that only feeds QuantizeLinear nodes becomes a uint8 input."""
        if self.dequantize or not self.active or self.float_edges:
            return None
        q = self.after(name)
        if q is not None:
            self.report.quantization.append({
                "tensor": name, "decision": "float32 model input replaced by the quantized tensor its "
                "QuantizeLinear made: feed uint8 values", "scale": q[0], "offset": q[1]})
        return q

    def note_outputs(self, graph) -> None:
        """Quantized network outputs (in report.quantization)."""
        for layer in graph.output_layers:
            info = layer.inputs[0].info
            if not (info.dtype.is_quantized and self.active):
                continue
            src = self.producer.get(layer.name)
            dq = src is not None and src.op_type == "DequantizeLinear"
            zp = self.constants.get(src.input[2]) if dq and len(src.input) > 2 else None
            self.report.quantization.append({
                "tensor": layer.name, "decision": "float32 model output left quantized (its DequantizeLinear "
                "is dropped): read uint8 values" if dq else "quantized model output: read uint8 values",
                "scale": info.scale, "offset": info.offset})
            if zp is not None and zp.dtype == np.int8:
                self.report.quantization[-1]["decision"] += " (the int8 values + 128)"

    def keep_int8(self, graph, values: dict, elem_types: dict) -> None:
        """From the 20.08 format on, the model's int8 tensors become QAsymmS8 (lowering/int8.py):
        the element types shape inference gives the tensors, and the zero points of the
        operators that write quantized tensors, tell which are int8."""
        if self.dequantize or not self.active:
            return
        from armnn_import.lowering.int8 import keep_int8
        kinds = {n: t == 3 for n, t in elem_types.items() if t in (2, 3)}  # TensorProto UINT8, INT8
        for name, node in self.producer.items():
            at = ZERO_POINT_INPUT.get(node.op_type)
            zp = self.constants.get(node.input[at]) if at is not None and len(node.input) > at else None
            if zp is not None and zp.dtype in (np.int8, np.uint8) and name == node.output[0]:
                kinds.setdefault(name, zp.dtype == np.int8)
        seeds = {v: kinds[n] for n, v in values.items()
                 if n in kinds and isinstance(v, Port) and v.info.dtype == DataType.QuantisedAsymm8}
        keep_int8(graph, seeds, self.report)

    # -- constants -----------------------------------------------------------------------------
    def weight(self, ctx, name: str):
        """(quantized data, scale, zero point, axis) behind a constant made by DequantizeLinear, or None."""
        node = self.producer.get(name)
        if node is None or node.op_type != "DequantizeLinear":
            return None
        ins = list(node.input) + ["", ""]
        q, s = ctx.values.get(ins[0]), ctx.values.get(ins[1])
        zp = ctx.values.get(ins[2]) if ins[2] else None
        if not all(isinstance(v, np.ndarray) for v in (q, s)) or (ins[2] and not isinstance(zp, np.ndarray)):
            return None
        if q.dtype not in (np.int8, np.uint8):
            return None
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        return q, np.asarray(s), (np.zeros(1, q.dtype) if zp is None else np.asarray(zp)), axis

    def weights_u8(self, layer: str, tensor: str, real: np.ndarray, src=None, axis: int = 0):
        """uint8 weights and their (scale, offset) for float weights `real` whose quantized
        form `src` = (q, scale, zero point, ...) in the same layout may be known: exact for
        one scale and zero point, else requantized per tensor along output axis `axis` (and
        reported)."""
        if src is not None:
            q, scale, zp = src[:3]
            s, z = np.asarray(scale, np.float32).reshape(-1), np.asarray(zp).reshape(-1)
            if np.all(s == s[0]) and np.all(z == z[0]) and np.isfinite(s[0]) and s[0] > 0:
                data, shift = to_uint8(np.asarray(q))
                return data, (float(s[0]), int(z[0]) + shift)
        decision = ("per-channel 8-bit weights requantized to per-tensor uint8" if src is not None
                    else "float weights quantized to per-tensor uint8")
        data, s, offset = requantize_weights(self.report, layer, tensor, np.asarray(real, np.float32), axis,
                                             decision)
        return data, (s, offset)

    def conv_weights(self, layer: str, tensor: str, real: np.ndarray, src=None):
        """weights_u8 for OIHW convolution weights, except that per-channel 8-bit weights (one
        scale per output channel, one zero point) stay exact: (data, (scales, offset), fallback)
        for quant_conv2d_nchw, which splits the layer by scale, or calls fallback() for
        weights_u8's requantized ones where it cannot. fallback is None for per-tensor weights."""
        if src is not None:
            q, scale, zp, axis = src[:4]
            s, z = np.asarray(scale, np.float32).reshape(-1), np.asarray(zp).reshape(-1)
            if (s.size > 1 and s.size == np.shape(q)[0] and axis % np.ndim(q) == 0 and np.all(z == z[0])
                    and np.asarray(q).dtype in (np.int8, np.uint8)):
                data, shift = to_uint8(np.asarray(q))
                entry = {"layer": layer, "tensor": tensor, "decision": PER_CHANNEL_EXACT}
                self.report.quantization.append(entry)

                def fallback():
                    self.report.quantization.remove(entry)
                    return self.weights_u8(layer, tensor, real, src, 0)
                return data, (s, int(z[0]) + shift), fallback
        return self.weights_u8(layer, tensor, real, src, 0) + (None,)

    def note_dequantized(self, tensor: str) -> None:
        self.report.quantization.append({"tensor": tensor,
                                         "decision": "8-bit constant dequantized to float32 (--dequantize)"})


def check_port(port: Port, q: tuple[float, int], what: str) -> None:
    """A QLinear operator reads its input with the parameters it is given: they must be the
    ones the tensor was written with."""
    if port.info.dtype != DataType.QuantisedAsymm8:
        raise Unsupported(f"{what} is a {port.info.dtype.name} tensor; a quantized one is needed", DEQUANTIZE_HINT)
    if (port.info.scale, port.info.offset) != (float(np.float32(q[0])), q[1]):
        raise Unsupported(f"{what} is read with quantization {q}, but it was written with "
                          f"({port.info.scale:g}, {port.info.offset})")


def fold_quant(node, values: dict) -> list:
    """QuantizeLinear / DequantizeLinear of constants, in numpy (onnx.reference only
    implements their newest versions): round half to even, saturate to the type."""
    ins = list(node.inputs) + ["", ""]
    x, scale = np.asarray(values[ins[0]]), np.asarray(values[ins[1]], np.float32)
    zp = np.asarray(values[ins[2]]) if ins[2] else None
    if node.attrs.get("block_size", 0):
        raise Unsupported("blocked quantization (block_size)")
    axis = int(node.attrs.get("axis", 1))
    if node.op == "DequantizeLinear":
        if x.dtype not in (np.int8, np.uint8, np.int32):
            raise Unsupported(f"dequantizing {x.dtype} data")
        return [dequantized(x, scale, zp, axis if x.ndim else 0)]
    if zp is None:
        zp = absent_zero_point(node.attrs.get("output_dtype"))
    if zp.dtype not in (np.int8, np.uint8):
        raise Unsupported(f"quantizing to {zp.dtype}")
    shape = [1] * x.ndim
    if scale.size > 1:
        shape[axis % x.ndim] = scale.size
    s = scale.reshape(shape if scale.size > 1 else ()).astype(np.float32)
    z = zp.reshape(shape if zp.size > 1 else ()).astype(np.float64)
    info = np.iinfo(zp.dtype)
    q = np.clip(np.round(x.astype(np.float32) / s) + z, info.min, info.max)  # np.round: half to even
    return [q.astype(zp.dtype)]
