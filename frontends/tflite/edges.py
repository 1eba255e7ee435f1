"""The model's edges in TFLite's conversion: the network's inputs and outputs, the QUANTIZE and
DEQUANTIZE ops absorbed there (19.02), input shapes given on the command line, and the quantization
decisions the report lists. A mixin of Ctx (convert.py)."""
from __future__ import annotations

import numpy as np

from armnn_import.errors import ConversionError, InputValueError, Problem, UnsupportedModelError
from armnn_import.input_values import check_names, fixed_value, record
from armnn_import.ir.graph import Port
from armnn_import.ir.types import DataType, LayerType, TensorInfo

from .buffers import NP_TYPES
from .model import Tensor
from .types import FLOAT32, INT8, UINT8


def fix_inputs(model, options, report) -> None:
    """The inputs given a value (armnn_import.input_values) become constants of the input's
    type (a quantized input takes its stored integers, as LiteRT is fed) and shape
    (--input-shape, else the model's, its dynamic dimensions unknown)."""
    given = options.input_values or {}
    if not given:
        return
    check_names(given, [model.tensors[i].name for i in model.inputs])
    for i in model.inputs:
        t = model.tensors[i]
        if t.name not in given:
            continue
        if t.type not in NP_TYPES:
            raise InputValueError(f"input value for {t.name!r}: an input of type {t.type_name} cannot be fixed")
        shape = (options.input_shapes or {}).get(t.name)
        if shape is None:
            shape = tuple(None if s < 0 else d for s, d in zip(t.signature or t.shape, t.shape))
        t.data = fixed_value(t.name, given[t.name], NP_TYPES[t.type], shape)
        t.shape = t.data.shape
        t.signature = None
        record(report, t.name, t.data)
    model.inputs = tuple(i for i in model.inputs if model.tensors[i].name not in given)


class Edges:
    """Inputs, outputs and the edge QUANTIZE/DEQUANTIZE ops of Ctx."""

    def _edges(self) -> None:
        """Float inputs that only feed QUANTIZE ops become quantized inputs, and
        outputs made by DEQUANTIZE become the quantized tensors: Arm NN's
        format has no Quantize or Dequantize layer. (From the 20.08 format on the network keeps
        the model's float interface, with Quantize and Dequantize layers: ops/quantize.py.)"""
        if self.dequantize or self.nb.g.target.has(LayerType.Quantize):
            return
        ops = self.m.operators
        for i in self.m.inputs:
            users = self.consumers.get(i, [])
            if self.t(i).type != FLOAT32 or not users or any(ops[u].op != "QUANTIZE" for u in users):
                continue
            outs = [ops[u].outputs[0] for u in users]
            if all(self.is_quant(o) for o in outs) and len({self.qparams(o) for o in outs}) == 1:
                self.skip.update(users)
                self.input_alias[i] = outs
        for o in self.m.outputs:
            p = self.producer.get(o)
            if p is None or ops[p].op != "DEQUANTIZE" or self.consumers.get(o):
                continue
            src = ops[p].inputs[0]
            if src >= 0 and self.is_quant(src) and not self.is_const(src):
                self.skip.add(p)
                self.out_source[o] = src

    def _keep_int8(self) -> None:
        """From the 20.08 format on, the model's int8 tensors become QAsymmS8 (lowering/int8.py)."""
        from armnn_import.lowering.int8 import keep_int8
        seeds = {port: self.t(i).type == INT8 for i, port in self.ports.items()
                 if self.is_quant(i) and port.info.dtype == DataType.QuantisedAsymm8}
        keep_int8(self.g, seeds, self.report)

    def _input_shape(self, t: Tensor) -> tuple[int, ...]:
        given = (self.opts.input_shapes or {}).get(t.name)
        if given is not None:
            given = tuple(int(d) for d in given)
            if len(given) != len(t.shape) or any(d <= 0 for d in given) or any(
                    s not in (-1, d) for s, d in zip(t.signature or t.shape, given)):
                raise ConversionError(f"input {t.name!r}: shape {list(given)} does not fit the model's "
                                      f"{list(t.signature or t.shape)}")
            if given != t.shape:
                self.overridden = True
            return given
        if t.signature and any(d < 0 for d in t.signature):
            self.report.warn(f"input {t.name!r} has dynamic dimensions {list(t.signature)}; using "
                             f"{list(t.shape)} (set --input-shape to choose)")
        if any(d == 0 for d in t.shape):
            raise ConversionError(f"input {t.name!r} has an empty dimension {list(t.shape)}")
        return t.shape or (1,)

    def _add_input(self, name: str, info: TensorInfo) -> Port:
        # in the model's NHWC: --layout nchw is the core's (the plugin's io_layout, passes/io_layout.py)
        return self.g.add_input(name, info)

    def _inputs(self) -> None:
        for i in self.m.inputs:
            t = self.t(i)
            shape = self._input_shape(t)
            if i in self.input_alias:
                q_out = self.input_alias[i][0]
                scale, offset = self.qparams(q_out)
                port = self._add_input(t.name, TensorInfo(shape, DataType.QuantisedAsymm8, scale, offset))
                for o in self.input_alias[i]:
                    self.ports[o] = port
                self.report.quantization.append({
                    "tensor": t.name, "decision": "float32 model input replaced by the quantized tensor "
                    "its QUANTIZE op made: feed uint8 values", "scale": scale, "offset": offset})
                continue
            dtype = self.dtype_of(i)
            q = self.qparams(i) if self.is_quant(i) else (1.0, 0)
            self.ports[i] = self._add_input(t.name, TensorInfo(shape, dtype, *q))
            self._note_io(i, "input")

    def _note_io(self, i: int, kind: str) -> None:
        t = self.t(i)
        if t.type == INT8 and self.is_quant(i):
            scale, offset = self.qparams(i)
            self.report.quantization.append({
                "tensor": t.name, "decision": f"int8 model {kind} becomes uint8 (value + 128)",
                "scale": scale, "offset": offset})
        elif t.type in (INT8, UINT8) and self.dequantize:
            self.report.quantization.append({
                "tensor": t.name, "decision": f"quantized model {kind} becomes float32 (--dequantize)"})

    def _outputs(self) -> None:
        for o in self.m.outputs:
            t = self.t(o)
            src = self.out_source.get(o, o)
            if src not in self.ports:
                if src in self.folded and np.size(self.folded[src]) == 0:
                    raise UnsupportedModelError([Problem(
                        "output", t.name, f"the output is empty (shape {list(np.shape(self.folded[src]))}, "
                        "as TFLite computes it); Arm NN tensors have no zero-size dimension", code="inexpressible")])
                if self.is_const(src):
                    raise UnsupportedModelError([Problem("output", t.name, "the output is a constant; "
                                                         "Arm NN networks compute every output",
                                                         code="inexpressible")])
                raise ConversionError(f"output {t.name!r} is not computed by any operator")
            port = self.ports[src]
            if port.layer.type == LayerType.Input:  # Arm NN wants a layer between Input and Output
                port = self.nb.linear(port, 1.0, 0.0, f"{t.name}_identity")
            self.g.add_output(t.name, port)
            if src != o:
                scale, offset = self.qparams(src)
                self.report.quantization.append({
                    "tensor": t.name, "decision": "float32 model output left quantized (its DEQUANTIZE "
                    "op is dropped): read uint8 values", "scale": scale, "offset": offset})
                if self.t(src).type == INT8:
                    self.report.quantization[-1]["decision"] += " (int8 + 128)"
            else:
                self._note_io(o, "output")
