"""The network's edges: the ONNX graph inputs as Input layers (their shapes pinned, checked and
written back for shape inference), and the graph outputs as Output layers."""
from __future__ import annotations

from onnx import TensorProto, helper

from armnn_import.errors import (ConversionError, GraphError, InputValueError, LoadError, Problem,
                                 UnsupportedModelError, printable)
from armnn_import.input_values import check_names, fixed_value, record
from armnn_import.ir.descriptors import ReshapeDescriptor
from armnn_import.ir.graph import Port
from armnn_import.ir.types import DataType, LayerType, TensorInfo
from armnn_import.lowering import Unsupported

from .context import MAX_RANK

INPUT_TYPES = {TensorProto.FLOAT: DataType.Float32, TensorProto.INT32: DataType.Signed32,
               TensorProto.INT64: DataType.Signed32, TensorProto.BOOL: DataType.Boolean}


def fix_inputs(conv) -> None:
    """The inputs given a value (armnn_import.input_values) become constants of the input's
    dtype and shape (--input-shape, else the model's), written back for shape inference."""
    given = conv.options.input_values or {}
    g = conv.model.graph
    check_names(given, [i.name for i in g.input if i.name not in conv.values])
    for vi in g.input:
        if vi.name not in given:
            continue
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is None or tt.elem_type in (TensorProto.UNDEFINED, TensorProto.STRING) or \
                tt.elem_type not in TensorProto.DataType.values():
            raise InputValueError(f"input value for {printable(vi.name)!r}: the input is not a numeric tensor")
        shape = (conv.options.input_shapes or {}).get(vi.name)
        if shape is None and tt.HasField("shape"):
            shape = tuple(int(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else None
                          for d in tt.shape.dim)
        value = fixed_value(vi.name, given[vi.name], helper.tensor_dtype_to_np_dtype(tt.elem_type), shape)
        del tt.shape.dim[:]
        for d in value.shape:
            tt.shape.dim.add().dim_value = d
        conv.values[vi.name] = value
        record(conv.report, vi.name, value)


def add_inputs(conv) -> None:
    g, opts = conv.model.graph, conv.options
    pinned = dict(opts.input_shapes or {})
    runtime = [i for i in g.input if i.name not in conv.values]
    names = [i.name for i in runtime]
    for k in pinned:
        if k not in names and k not in (opts.input_values or {}):
            raise ConversionError(f"--input-shape names {k!r}, which is not an input of the model "
                                  f"(inputs: {', '.join(names) or 'none'})")
    bad = []
    for vi in runtime:
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is None:
            bad.append(Problem("input", vi.name, "is not a tensor (sequences, maps and optionals "
                                                  "cannot be network inputs)", code="unsupported-type"))
            continue
        dtype = INPUT_TYPES.get(tt.elem_type)
        q = None
        if tt.elem_type == TensorProto.UINT8 and conv.g.target.has(LayerType.Dequantize):  # (float output: 20.08 on)
            q = _uint8_input(conv, vi.name, bad)
            if q is None:
                continue
            dtype = DataType.QuantisedAsymm8  # (the uint8 values as they are, with the DequantizeLinear's scale)
        if dtype is None:
            bad.append(Problem("input", vi.name, f"has element type "
                               f"{TensorProto.DataType.Name(tt.elem_type) if tt.elem_type in TensorProto.DataType.values() else tt.elem_type}; "
                               "Arm NN inputs here can be float32 (or int32/int64 indices, bool)",
                               "convert the model to float32", code="unsupported-type"))
            continue
        if tt.elem_type == TensorProto.INT64:
            conv.report.warn(f"input {vi.name!r} is int64 in ONNX; it becomes a Signed32 (int32) input")
        shape = _input_shape(conv, vi, tt, pinned.get(vi.name))
        if len(shape) > MAX_RANK:
            bad.append(Problem("input", vi.name, f"has {len(shape)} dimensions; Arm NN tensors have at most 5"))
            continue
        if any(d <= 0 for d in shape):
            bad.append(Problem("input", vi.name, f"has an empty shape {shape}"))
            continue
        # write the pinned shape back so that shape inference sees it
        del tt.shape.dim[:]
        for d in shape:
            tt.shape.dim.add().dim_value = d
        if dtype == DataType.Float32:
            q = conv.quant.input_quant(vi.name)
            if q is not None:  # a float input feeding QuantizeLinear only: the network takes uint8
                dtype = DataType.QuantisedAsymm8
        if dtype == DataType.Boolean and _bool_as_numbers(conv, vi.name):
            port = _bool_numbers_input(conv, vi.name, shape)
        else:
            port = conv.g.add_input(vi.name, TensorInfo(shape or (1,), dtype, *(q or (1.0, 0))))
            if not shape:
                conv.scalars.add(port)
        conv.values[vi.name] = port
        if conv.anchor is None and dtype == DataType.Float32 and len(shape) <= 4:
            conv.anchor = port
    if bad:
        raise UnsupportedModelError(bad)


# ONNX operators whose Boolean operands Arm NN's Boolean layers take as they are (Comparison,
# LogicalBinary); any other reader of a boolean input (Cast, Where, a Reshape, ...) needs numbers
_BOOLEAN_READERS = {"And", "Or", "Xor", "Not", "Equal"}


def _bool_as_numbers(conv, name: str) -> bool:
    """Whether a bool model input becomes a uint8 network input with a float 0/1 mask after it
    (a Dequantize of scale 1: exact, from the 20.08 format on). CpuRef computes nothing from a
    Boolean tensor but Boolean layers, and 23.08's Cast takes none."""
    users = conv.quant.consumers.get(name, [])
    return conv.g.target.has(LayerType.Dequantize) and any(u.op_type not in _BOOLEAN_READERS for u in users)


def _uint8_input(conv, name: str, bad: list):
    """The (scale, zero point) of the DequantizeLinear nodes that alone read a uint8 input, else None
    (with the problem in bad)."""
    q = None if conv.quant.dequantize else conv.quant.before(name)
    if q is None:
        bad.append(Problem("input", name, "is uint8; a uint8 network input must feed only "
                           "DequantizeLinear nodes with one constant per-tensor scale and zero point"
                           + (" (not with --dequantize)" if conv.quant.dequantize else ""),
                           "convert the model to float32", code="unsupported-type"))
        return None
    conv.report.quantization.append({"tensor": name, "decision": "uint8 model input read by "
                                     "DequantizeLinear: feed its uint8 values", "scale": q[0], "offset": q[1]})
    return q


def _bool_numbers_input(conv, name: str, shape) -> Port:
    """A uint8 network input of scale 1 (the booleans' 0/1 bytes as they are) and the float 0/1
    mask that stands for the booleans (a Dequantize: ops/logic.py)."""
    conv.report.quantization.append({"tensor": name, "decision": "bool model input used as numbers: a "
                                     "uint8 network input, feed 0 or 1", "scale": 1.0, "offset": 0})
    port = conv.g.add_input(name, TensorInfo(shape or (1,), DataType.QuantisedAsymm8, 1.0, 0))
    mask = conv.b.add(LayerType.Dequantize, f"{name}_mask", [port])
    conv.bool_float.add(mask)
    if not shape:
        conv.scalars.update((port, mask))
    return mask


def _input_shape(conv, vi, tt, pinned) -> tuple[int, ...]:
    # (names are escaped: the hints must stay on one line, whatever the model calls its inputs)
    if pinned is not None:
        try:
            shape = tuple(int(d) for d in pinned)
        except (TypeError, ValueError):
            raise ConversionError(f"--input-shape {printable(vi.name)}: dimensions must be integers, "
                                  f"got {pinned!r}") from None
        if tt.HasField("shape") and len(tt.shape.dim) != len(shape):
            raise ConversionError(f"--input-shape {printable(vi.name)}: the input has {len(tt.shape.dim)} "
                                  f"dimensions, {len(shape)} given")
        if any(d <= 0 for d in shape):
            raise ConversionError(f"--input-shape {printable(vi.name)}: dimensions must be positive, got {shape}")
        for i, d in enumerate(tt.shape.dim if tt.HasField("shape") else []):
            if d.HasField("dim_value") and d.dim_value > 0 and d.dim_value != shape[i]:
                raise ConversionError(f"--input-shape {printable(vi.name)}: dimension {i} is fixed to "
                                      f"{d.dim_value} in the model, {shape[i]} given")
        return shape
    if not tt.HasField("shape"):
        raise ConversionError(f"input {vi.name!r} has no shape in the model; give it with "
                              f"--input-shape {printable(vi.name)}=d0,d1,...", code="dynamic-shape")
    shape = []
    for i, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value") and d.dim_value > 0:
            shape.append(int(d.dim_value))
        elif i == 0:
            what = f"symbolic ({d.dim_param!r})" if d.dim_param else "unknown"
            conv.report.warn(f"input {vi.name!r}: the {what} batch dimension is set to 1 "
                             f"(use --input-shape {printable(vi.name)}=... to choose another)")
            conv.guessed_dim0.add(vi.name)
            shape.append(1)
        else:
            what = f"symbolic ({d.dim_param!r})" if d.dim_param else "unknown"
            raise ConversionError(f"input {vi.name!r}: dimension {i} is {what}; Arm NN needs static "
                                  f"shapes, give them with --input-shape {printable(vi.name)}=d0,d1,...",
                                  code="dynamic-shape")
    return tuple(shape)


def add_outputs(conv) -> None:
    for vi in conv.model.graph.output:
        v = conv.values.get(vi.name)
        if conv.problems:
            continue  # the conversion fails anyway: problems are what matters now
        if v is None:
            raise LoadError(f"graph output {vi.name!r} is produced by no node, input or initializer")
        if isinstance(v, list):
            conv.problems.append(Problem("output", vi.name, "is a sequence; Arm NN outputs are tensors",
                                         code="unsupported-type"))
            continue
        try:
            if not isinstance(v, Port):
                v = conv.materialize(v, f"{vi.name}_value")
            elif v in conv.bool_float:  # a float 0/1 mask standing for a boolean output
                half = conv.b.fill_like(v, 0.5, f"{vi.name}_half")
                v = conv.b.binary(LayerType.Greater, v, half, f"{vi.name}_bool")
            elif v.layer.type == LayerType.Input:
                # Arm NN wants a layer between an input and an output
                v = conv.g.add(LayerType.Reshape, f"{vi.name}_copy", [v],
                               ReshapeDescriptor(v.info.shape)).out()
        except Unsupported as e:
            conv.problems.append(Problem("output", vi.name, e.reason, e.hint, code=e.code))
            continue
        except GraphError as e:
            conv.problems.append(Problem("output", vi.name, f"cannot be produced: {e}"))
            continue
        _free_name(conv, vi.name)
        conv.g.add_output(vi.name, v)


def _free_name(conv, name: str) -> None:
    """Output layers keep the ONNX output names: rename an inner layer that took one."""
    for layer in conv.g.layers:
        if layer.name == name and layer.type not in (LayerType.Input, LayerType.Output):
            conv.g.rename(layer, conv.g.unique_name(f"{name}_op"))
