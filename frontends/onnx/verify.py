"""The ONNX source model in onnxruntime, for `armnn-import verify` (the plugin's
source_runner; onnxruntime is the optional `verify` extra)."""
from __future__ import annotations

import os

import numpy as np

from armnn_import.verify_source import IoSpec, Node, VerifyError, model_bytes, need_runtime

# Where the output quantization of an ONNX quantized operator is: (scale input, zero point input)
QPARAMS = {"QuantizeLinear": (1, 2), "QLinearConv": (6, 7), "QLinearMatMul": (6, 7), "QLinearAdd": (6, 7),
           "QLinearMul": (6, 7), "QGemm": (7, 8), "QLinearGlobalAveragePool": (3, 4),
           "QLinearAveragePool": (3, 4), "QLinearConcat": (0, 1), "QLinearLeakyRelu": (3, 4),
           "QLinearSigmoid": (3, 4)}
# Operators whose 8-bit output keeps their input's quantization
KEEPS = {"MaxPool", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Slice", "Split", "Identity",
         "DepthToSpace", "SpaceToDepth", "Concat"}


def _model_bytes(source) -> bytes:
    if hasattr(source, "SerializeToString"):  # an onnx.ModelProto
        return source.SerializeToString()
    return model_bytes(source)


class OnnxSource:
    runtime = "onnxruntime"

    def __init__(self, source):
        self.ort = need_runtime("onnxruntime", "onnxruntime", "ONNX")
        self.path = os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
        self.data = None if self.path else _model_bytes(source)
        # A QDQ graph as written (DequantizeLinear, float operator, QuantizeLinear) is the
        # model's own arithmetic. onnxruntime's optimizer fuses it into integer kernels whose
        # results depend on the CPU: without VNNI, int8 activations saturate an int16 step
        # and land several levels off (seen on AVX2 machines), so those are not the reference.
        self.qdq = self._is_qdq()
        if self.qdq:
            self.runtime = "onnxruntime (QDQ graph as written, optimizations off)"
        self.session = self._session(self.path or self.data, optimize=not self.qdq)
        self.inputs = [self._spec(v) for v in self.session.get_inputs()]
        self.outputs = [self._spec(v) for v in self.session.get_outputs()]
        self._nodes = None

    def _session(self, model, optimize=True):
        opts = self.ort.SessionOptions()
        opts.log_severity_level = 3
        if not optimize:  # keep every node, so each intermediate tensor is the node's own
            opts.graph_optimization_level = self.ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        try:
            return self.ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001 - onnxruntime raises its own exception types
            raise VerifyError(f"onnxruntime cannot load the model: {str(e).splitlines()[0]}") from None

    @staticmethod
    def _spec(v) -> IoSpec:
        dtypes = {"float": np.float32, "float16": np.float16, "double": np.float64, "int64": np.int64,
                  "int32": np.int32, "int8": np.int8, "uint8": np.uint8, "bool": np.bool_}
        kind = v.type[len("tensor("):-1] if v.type.startswith("tensor(") else v.type
        if kind not in dtypes:
            raise VerifyError(f"input or output {v.name!r} has type {v.type}, which verify cannot feed")
        shape = tuple(d if isinstance(d, int) and d > 0 else None for d in v.shape)
        return IoSpec(v.name, shape, np.dtype(dtypes[kind]), None)

    def run(self, arrays) -> list[np.ndarray]:
        try:
            return self.session.run(None, {s.name: a for s, a in zip(self.inputs, arrays)})
        except Exception as e:  # noqa: BLE001
            raise VerifyError(f"onnxruntime failed: {str(e).splitlines()[0]}") from None

    def _is_qdq(self) -> bool:
        try:
            nodes = self._model(weights=False).graph.node
        except Exception:  # noqa: BLE001 - an unreadable model: onnxruntime names the problem
            return False
        return any(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in nodes)

    def _model(self, weights=True):
        import onnx
        if self.path:
            return onnx.load(self.path, load_external_data=weights)
        m = onnx.ModelProto()
        m.ParseFromString(self.data)
        return m

    @property
    def nodes(self) -> list[Node]:
        if self._nodes is None:
            graph = self._model().graph
            users: dict[str, list[str]] = {}
            nodes = []
            for i, n in enumerate(graph.node):
                name = n.name or f"{n.op_type}_{i}"  # the ONNX frontend's naming of unnamed nodes
                for t in n.input:
                    users.setdefault(t, []).append(name)
                nodes.append((name, n.op_type, n.output[0] if n.output else "", sum(1 for o in n.output if o)))
            self._nodes = [Node(name, op, out, users.get(out, []), k) for name, op, out, k in nodes if out]
        return self._nodes

    def intermediates(self, arrays) -> dict:
        """Each node's first output: the names become extra graph outputs. An 8-bit tensor
        comes with its quantization (from onnx_quantization)."""
        import onnx

        model = self._model()
        have = {o.name for o in model.graph.output}
        model.graph.output.extend(onnx.ValueInfoProto(name=n.output) for n in self.nodes if n.output not in have)
        session = self._session(model.SerializeToString(), optimize=False)
        names = [o.name for o in session.get_outputs()]
        values = session.run(names, {s.name: a for s, a in zip(self.inputs, arrays)})
        quant = onnx_quantization(model.graph)
        return {k: (v, quant.get(k) if v.dtype in (np.uint8, np.int8) else None)
                for k, v in zip(names, values) if isinstance(v, np.ndarray)}


def onnx_quantization(graph) -> dict:
    """tensor -> (scale, zero point) of the 8-bit tensors an ONNX graph computes, where its
    constants say so (QuantizeLinear and QLinear* outputs, and what keeps their quantization)."""
    from onnx import numpy_helper
    consts = {t.name: t for t in graph.initializer}
    consts.update({n.output[0]: a.t for n in graph.node if n.op_type == "Constant"
                   for a in n.attribute if a.name == "value"})

    def value(name):
        t = consts.get(name) if name else None
        return None if t is None else numpy_helper.to_array(t)

    quant = {}
    for n in graph.node:
        if n.op_type in QPARAMS and n.output:
            si, zi = QPARAMS[n.op_type]
            s = value(n.input[si]) if len(n.input) > si else None
            z = value(n.input[zi]) if len(n.input) > zi else None
            if s is not None and s.size == 1 and (z is None or z.size == 1):
                quant[n.output[0]] = (float(s.reshape(-1)[0]), 0 if z is None else int(z.reshape(-1)[0]))
        elif n.op_type in KEEPS and n.input and n.input[0] in quant:
            for o in n.output:
                quant[o] = quant[n.input[0]]
    return quant
