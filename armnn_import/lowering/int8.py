"""int8 activations as QAsymmS8 (the 20.08 format on), instead of uint8 shifted by 128.

The frontends lower every 8-bit tensor onto QuantisedAsymm8 (int8 data as q + 128 with zero
point z + 128, exact). Where the target has QAsymmS8, keep_int8() then gives back the int8
tensors of the model their own type and zero point: every QuantisedAsymm8 tensor of a
component that the model holds as int8 becomes QAsymmS8, data - 128 and offset - 128.

Why a whole component, and why this is exact:
- CpuRef wants one 8-bit type on the input, output and (FullyConnected) weights of a layer, so
  the type changes for everything the quantized tensors of a layer connect: its quantized
  inputs, outputs and constant tensors. A component meets float only through Quantize and
  Dequantize (and integer or Boolean results), which take either type.
- Shifting a tensor's data and offset together keeps every real value ((q - 128) - (z - 128) =
  q - z) and every rounding (clamp(round(x / s) + z - 128, -128, 127) = the uint8 result -
  128), so each layer that computes on real values gives the same bytes less 128. The one
  layer that writes raw bytes is Pad: its fill value (raw 0 in the 19.02 decompositions) moves
  to -128 through PadDescriptor.pad_value, which both richer formats carry.
- A component holding a tensor the model has as uint8 (a uint8 model, or a uint8 interface
  around int8 layers) stays QuantisedAsymm8 as today: one type per component.

Which layers each release's CpuRef runs on QAsymmS8 (RefLayerSupport.cpp of Arm NN 20.08
and 23.08, proven on the runtimes by tests/test_q8.py) is S8_LAYERS; keep_int8 leaves a
component with any other layer (a layer type not proven yet) as uint8 + 128, recorded in
report.quantization, so the file always runs.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ir.graph import Graph, Port
from ..ir.types import ConstTensor, DataType, LayerType, TensorInfo
from ..report import Report

U8, S8 = DataType.QuantisedAsymm8, DataType.QAsymmS8

# The layer types that both CpuRefs (20.08 and 23.08) run on QAsymmS8 tensors, giving the bytes
# of the QuantisedAsymm8 network less 128 exactly (tests/test_q8.py runs every layer case of
# tests/layer_cases.py both ways on both runtimes). RefLayerSupport.cpp of both releases lists
# QAsymmS8 for each (Equal, Greater and Rsqrt run as Comparison and ElementwiseUnary there).
# The other layer types run no 8-bit type at all on CpuRef (Floor, LogSoftmax) or cannot be
# read from these formats (Gather without an axis): a quantized network never holds them.
S8_LAYERS = frozenset({
    LayerType.Input, LayerType.Output, LayerType.Constant, LayerType.Activation, LayerType.Addition,
    LayerType.Multiplication, LayerType.Subtraction, LayerType.Division, LayerType.Maximum,
    LayerType.Minimum, LayerType.Convolution2d, LayerType.DepthwiseConvolution2d,
    LayerType.FullyConnected, LayerType.Pooling2d, LayerType.Softmax, LayerType.Reshape,
    LayerType.Permute, LayerType.Merger, LayerType.StridedSlice, LayerType.Pad,
    LayerType.SpaceToBatchNd, LayerType.BatchToSpaceNd, LayerType.Mean, LayerType.BatchNormalization,
    LayerType.Normalization, LayerType.L2Normalization, LayerType.ResizeBilinear, LayerType.Quantize,
    LayerType.Dequantize, LayerType.Equal, LayerType.Greater, LayerType.Rsqrt, LayerType.ArgMinMax,
    LayerType.Comparison, LayerType.ElementwiseUnary, LayerType.Prelu, LayerType.TransposeConvolution2d,
    # the richer formats' structural layers (tests/test_q8.py runs their cases both ways too)
    LayerType.Concat, LayerType.Transpose, LayerType.Resize, LayerType.SpaceToDepth, LayerType.DepthToSpace,
    LayerType.Stack, LayerType.Gather, LayerType.Tile, LayerType.ReverseV2, LayerType.Reduce, LayerType.GatherNd,
    LayerType.Splitter,  # (Splitter.cpp: each view decoded and encoded with the same quantization)
})


class _Components:
    """Union-find over a graph's QuantisedAsymm8 output ports."""

    def __init__(self):
        self.parent: dict = {}

    def find(self, k):
        self.parent.setdefault(k, k)
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def union(self, a, b):
        self.parent[self.find(a)] = self.find(b)


def _key(port: Port):
    return id(port.layer), port.slot


def _u8_ports(layer) -> list:
    ports = [p for p in layer.inputs if p.info.dtype == U8]
    ports += [Port(layer, i) for i, o in enumerate(layer.outputs) if o.dtype == U8]
    return ports


def keep_int8(graph: Graph, seeds: dict, report: Report | None = None) -> int:
    """Make the int8 tensors of the model QAsymmS8 (see above). `seeds` maps Ports to True
    (the model holds the tensor as int8) or False (as uint8). Returns how many tensors changed."""
    if not graph.target.has(S8):
        return 0
    uf = _Components()
    for layer in graph.layers:
        ports = _u8_ports(layer)
        for p in ports:
            uf.find(_key(p))
        for a, b in zip(ports, ports[1:]):
            uf.union(_key(a), _key(b))
    verdict: dict = {}  # root -> True (int8 only), False (some uint8)
    for port, is_int8 in seeds.items():
        if port.info.dtype != U8 or _key(port) not in uf.parent:
            continue
        root = uf.find(_key(port))
        verdict[root] = verdict.get(root, True) and bool(is_int8)
    blocked = {}
    for layer in graph.layers:
        ports = _u8_ports(layer)
        if ports and layer.type not in S8_LAYERS:
            root = uf.find(_key(ports[0]))
            if verdict.get(root):
                blocked[root] = layer
    for root, layer in blocked.items():
        verdict[root] = False
        if report is not None:
            report.quantization.append({"layer": layer.name, "decision": f"int8 tensors kept as uint8 + 128: "
                                        f"{layer.type.name} is not proven on QAsymmS8 on Arm NN's CpuRef "
                                        "(lowering/int8.py)"})
    shifted = {k for k in uf.parent if verdict.get(uf.find(k))}
    if not shifted:
        return 0
    return _shift(graph, shifted, report)


def to_int8(graph: Graph) -> int:
    """Every QuantisedAsymm8 tensor of `graph` as QAsymmS8 (data and offset - 128), whatever its
    layers: what the runtime tests use to find which layers CpuRef runs on QAsymmS8."""
    keys = {(id(l), i) for l in graph.layers for i, o in enumerate(l.outputs) if o.dtype == U8}
    return _shift(graph, keys, None)


def _shift(graph: Graph, shifted: set, report: Report | None) -> int:
    memo: dict = {}
    count = 0
    for layer in graph.layers:
        touched = False
        for i, o in enumerate(layer.outputs):
            if o.dtype == U8 and (id(layer), i) in shifted:
                layer.outputs[i] = _s8_info(o)
                touched = True
                count += 1
        touched |= any((id(p.layer), p.slot) in shifted for p in layer.inputs)
        if not touched:
            continue
        for name, t in layer.tensors.items():
            if t.info.dtype == U8:
                if id(t) not in memo:
                    memo[id(t)] = ConstTensor((t.data.astype(np.int16) - 128).astype(np.int8), _s8_info(t.info))
                layer.tensors[name] = memo[id(t)]
        if layer.type == LayerType.Pad and layer.outputs[0].dtype == S8:
            # Pad.cpp writes the fill value raw (scale 1, offset 0): keep the uint8 byte it wrote
            layer.desc = dataclasses.replace(layer.desc, pad_value=float(layer.desc.pad_value) - 128.0)
        if layer.type in (LayerType.Input, LayerType.Output) and report is not None:
            _note_io(report, layer)
    if report is not None and count:
        report.decomposition("int8 tensors", "QAsymmS8 with the model's own zero points (no +128 shift)")
    return count


def _s8_info(info: TensorInfo) -> TensorInfo:
    return TensorInfo(info.shape, S8, info.scale, info.offset - 128, info.scales, info.quant_dim)


def _note_io(report: Report, layer) -> None:
    """Rewrite the report's note on a model input or output that now stays int8."""
    for q in report.quantization:
        if q.get("tensor") == layer.name and "offset" in q:
            q["offset"] = int(q["offset"]) - 128
            q["decision"] = (q["decision"].replace(" (int8 + 128)", "").replace(" (the int8 values + 128)", "")
                             .replace("becomes uint8 (value + 128)", "stays int8 (QAsymmS8)")
                             .replace("uint8 values", "int8 values"))
