"""Constant folding of single ONNX nodes with onnx.reference (numpy for the
few shape operators that also fold on runtime tensors, whose shapes are static)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from armnn_import.errors import ArmnnImportError
from armnn_import.limits import check_shape
from armnn_import.lowering import Unsupported

from .context import check_size


def shape_of(node, shape: tuple) -> np.ndarray:
    """Shape(x) (with the opset-15 start/end attributes) of a tensor of static `shape`."""
    rank = len(shape)
    start = node.attrs.get("start", 0)
    end = node.attrs.get("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return np.array(shape[start:end], dtype=np.int64)


def shape_value(node, shape: tuple, dtype) -> np.ndarray:
    """The value of a SHAPE_OPS node on a tensor of static `shape`; `dtype` its output's numpy type
    (EyeLike: the dtype attribute's, or its input's)."""
    if node.op == "Shape":
        return shape_of(node, shape)
    if node.op == "Size":
        return np.array(int(np.prod(shape)), np.int64)
    if len(shape) != 2:
        raise Unsupported(f"EyeLike of a {len(shape)}-D tensor (needs 2-D)", code="bad-model")
    return np.eye(shape[0], shape[1], k=int(node.attrs.get("k", 0)), dtype=dtype)


def constant_value(node) -> np.ndarray:
    """The value of a Constant node, in any of its attribute forms."""
    from onnx import numpy_helper

    from .nodes import sparse_to_dense

    (key, v), = node.attrs.items() if len(node.attrs) == 1 else ((None, None),)
    if key == "value":
        check_shape(v.dims, f"Constant {node.name!r}")  # numpy would read a -1 as "infer this dimension"
        return numpy_helper.to_array(v)
    if key == "sparse_value":
        return sparse_to_dense(v)
    forms = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64,
             "value_ints": np.int64, "value_string": object, "value_strings": object}
    if key not in forms:
        raise Unsupported(f"a Constant needs exactly one value attribute, got {sorted(node.attrs)}")
    return np.array(v, dtype=forms[key])


def fold(node, values: dict, opset: int, implicit=()) -> list:
    """Evaluate `node` (a armnn_import_frontends.onnx.nodes.Node) on constant inputs.
    `values` maps input names (explicit and implicit) to numpy arrays."""
    if node.op in ("QuantizeLinear", "DequantizeLinear") and node.domain in ("", "ai.onnx"):
        from .quant import fold_quant
        return fold_quant(node, values)
    if node.op == "Constant" and node.domain in ("", "ai.onnx"):
        try:
            return [constant_value(node)]
        except (Unsupported, ArmnnImportError, MemoryError):
            raise
        except Exception as e:  # noqa: BLE001 - malformed tensor data
            raise Unsupported(f"the constant cannot be read ({type(e).__name__}: {e})") from None
    names = [n for n in list(node.inputs) + list(implicit) if n]
    names = list(dict.fromkeys(names))
    inputs = []
    for n in names:
        if isinstance(values[n], list):  # a sequence (SequenceConstruct and friends)
            inputs.append(helper.make_tensor_sequence_value_info(n, onnx.TensorProto.UNDEFINED, None))
            continue
        v = np.asarray(values[n])
        try:
            elem = helper.np_dtype_to_tensor_dtype(v.dtype)
        except (KeyError, TypeError, ValueError):
            elem = onnx.TensorProto.STRING if v.dtype == object else onnx.TensorProto.UNDEFINED
        inputs.append(helper.make_tensor_value_info(n, elem, list(v.shape)))
    outputs = [helper.make_tensor_value_info(n, onnx.TensorProto.UNDEFINED, None) for n in node.outputs if n]
    graph = helper.make_graph([node.proto], "fold", inputs, outputs)
    try:
        from onnx.reference import ReferenceEvaluator

        ev = ReferenceEvaluator(graph, opsets={"": opset})
        res = ev.run(None, {n: values[n] if isinstance(values[n], list) else np.asarray(values[n])
                            for n in names})
    except MemoryError:  # never a refusal: convert() reports it
        raise
    except Exception as e:  # noqa: BLE001 - any failure of the reference runtime
        raise Unsupported(f"constant folding failed ({type(e).__name__}: {str(e)[:200]})") from None
    out, it = [], iter(res)
    for n in node.outputs:
        v = next(it) if n else None
        out.append(v if v is None or isinstance(v, list) else np.asarray(v))
    return out


def fold_size_guard(node, values: dict, inferred: dict) -> None:
    """Refuse to fold into absurdly large constants (a hostile ConstantOfShape, Range,
    Expand or Tile would otherwise exhaust the memory)."""
    for o in node.outputs:
        if o and inferred.get(o) is not None and None not in inferred[o]:
            check_size(inferred[o], f"the folded value of {o!r}")
    v = [values.get(i) if i else None for i in node.inputs]
    try:
        if node.op == "ConstantOfShape" and v and isinstance(v[0], np.ndarray):
            check_size(v[0].reshape(-1).tolist(), "ConstantOfShape's result")
        elif node.op == "Range" and len(v) == 3 and all(isinstance(a, np.ndarray) for a in v):
            start, limit, delta = (float(np.asarray(a).reshape(-1)[0]) for a in v)
            if delta == 0 or not np.isfinite([start, limit, delta]).all():
                raise Unsupported("Range with a zero or non-finite step or bound")
            check_size([max(np.ceil((limit - start) / delta), 0)], "Range's result")
        elif node.op in ("Expand", "Tile") and len(v) >= 2 and isinstance(v[1], np.ndarray):
            shape, arg = np.shape(v[0]), v[1].reshape(-1).astype(np.int64).tolist()
            if node.op == "Tile":
                check_size([d * r for d, r in zip(shape, arg)], "Tile's result")
            else:
                check_size(np.broadcast_shapes(tuple(shape), tuple(max(a, 0) for a in arg)), "Expand's result")
    except (ValueError, OverflowError, TypeError):
        raise Unsupported("invalid shape arguments") from None
