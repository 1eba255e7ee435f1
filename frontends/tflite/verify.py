"""The TFLite source model in LiteRT, for `armnn-import verify` (the plugin's
source_runner; ai-edge-litert is the optional `verify` extra)."""
from __future__ import annotations

import numpy as np

from armnn_import.verify_source import IoSpec, Node, VerifyError, model_bytes, native_stderr_silenced, need_runtime


class TFLiteSource:
    runtime = "LiteRT"

    def __init__(self, source):
        self.litert = need_runtime("ai_edge_litert.interpreter", "ai-edge-litert", "TFLite")
        self.data = bytes(source._tab.Bytes) if hasattr(source, "_tab") else model_bytes(source)
        self.it = self._interpreter()
        self.inputs = [self._spec(d) for d in self.it.get_input_details()]
        self.outputs = [self._spec(d) for d in self.it.get_output_details()]
        self._nodes = None

    def _interpreter(self, **kwargs):
        try:
            with native_stderr_silenced():  # LiteRT prints "INFO: Created ... delegate" lines
                it = self.litert.Interpreter(model_content=self.data, **kwargs)
                it.allocate_tensors()
        except Exception as e:  # noqa: BLE001 - LiteRT raises ValueError/RuntimeError
            raise VerifyError(f"LiteRT cannot load the model: {str(e).splitlines()[0]}") from None
        return it

    @staticmethod
    def _spec(d) -> IoSpec:
        sig = d.get("shape_signature")
        dims = sig if sig is not None and len(sig) == len(d["shape"]) else d["shape"]
        scale, zp = d["quantization"]
        return IoSpec(d["name"], tuple(int(x) if x > 0 else None for x in dims), np.dtype(d["dtype"]),
                      (float(scale), int(zp)) if scale else None)

    def _invoke(self, it, arrays):
        details = it.get_input_details()
        if any(tuple(d["shape"]) != a.shape for d, a in zip(details, arrays)):
            for d, a in zip(details, arrays):
                it.resize_tensor_input(d["index"], list(a.shape))
            it.allocate_tensors()
        try:
            for d, a in zip(details, arrays):
                it.set_tensor(d["index"], a)
            it.invoke()
        except Exception as e:  # noqa: BLE001
            raise VerifyError(f"LiteRT failed: {str(e).splitlines()[0]}") from None

    def run(self, arrays) -> list[np.ndarray]:
        self._invoke(self.it, arrays)
        return [self.it.get_tensor(d["index"]).copy() for d in self.it.get_output_details()]

    @property
    def nodes(self) -> list[Node]:
        if self._nodes is None:
            import tflite
            from tflite.BuiltinOperator import BuiltinOperator
            names = {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}
            m = tflite.Model.GetRootAsModel(self.data, 0)
            codes = [max(m.OperatorCodes(i).BuiltinCode(), m.OperatorCodes(i).DeprecatedBuiltinCode())
                     for i in range(m.OperatorCodesLength())]
            sg = m.Subgraphs(0)
            ops = [sg.Operators(i) for i in range(sg.OperatorsLength())]
            users: dict[int, list[str]] = {}
            nodes = []
            for op in ops:
                outs = op.OutputsAsNumpy() if op.OutputsLength() else []
                if not len(outs):
                    continue
                # the TFLite frontend names a node after its first output tensor
                name = sg.Tensors(int(outs[0])).Name().decode("utf-8", "replace")
                for t in (op.InputsAsNumpy() if op.InputsLength() else []):
                    users.setdefault(int(t), []).append(name)
                nodes.append((name, names.get(codes[op.OpcodeIndex()], "CUSTOM"), int(outs[0]), len(outs)))
            self._nodes = [Node(name, opname, out, users.get(out, []), k) for name, opname, out, k in nodes]
        return self._nodes

    def intermediates(self, arrays) -> dict:
        """Each operator's first output, from an interpreter that keeps every
        tensor (and no delegate, which would hide them)."""
        it = self._interpreter(experimental_preserve_all_tensors=True,
                               experimental_op_resolver_type=self.litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        self._invoke(it, arrays)
        details = {d["index"]: d for d in it.get_tensor_details()}
        out = {}
        for n in self.nodes:
            d = details.get(n.output)
            try:
                value = it.get_tensor(n.output)
            except ValueError:
                continue
            scale, zp = d["quantization"] if d else (0.0, 0)
            out[n.output] = (value.copy(), (float(scale), int(zp)) if scale else None)
        return out
