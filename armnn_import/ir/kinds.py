"""LAYER_KINDS: for each layer type, the schema table, the descriptor it carries, its constant
tensors (in schema order) and the first release whose format has it. The writer and the reader
are driven by this table; UNION_ORDER is the schema's `union Layer` order, which gives the tags."""
import dataclasses
from dataclasses import fields
from enum import IntEnum
from typing import NamedTuple

from .descriptors import (ActivationDescriptor, ArgMinMaxDescriptor, BatchMatMulDescriptor,
                          BatchNormalizationDescriptor, BatchToSpaceNdDescriptor, ComparisonDescriptor,
                          Convolution2dDescriptor, Convolution3dDescriptor, DepthToSpaceDescriptor,
                          DepthwiseConvolution2dDescriptor, ElementwiseBinaryDescriptor, ElementwiseUnaryDescriptor,
                          FullyConnectedDescriptor, GatherDescriptor, InstanceNormalizationDescriptor,
                          L2NormalizationDescriptor, LSTM_TENSORS, LogSoftmaxDescriptor,
                          LogicalBinaryDescriptor, LstmDescriptor, MeanDescriptor,
                          NormalizationDescriptor, OriginsDescriptor, PadDescriptor, PermuteDescriptor,
                          Pooling2dDescriptor, Pooling3dDescriptor, ReduceDescriptor,
                          ReshapeDescriptor, ResizeBilinearDescriptor, ResizeDescriptor,
                          SoftmaxDescriptor, SpaceToBatchNdDescriptor, SpaceToDepthDescriptor,
                          StackDescriptor, StridedSliceDescriptor, TileDescriptor,
                          TransposeConvolution2dDescriptor, TransposeDescriptor,
                          UnidirectionalSequenceLstmDescriptor)
from .descriptors import ViewsDescriptor
from .types import LayerType


def since(thing) -> str:
    """The first release whose format has a layer type, a descriptor field or an enum value."""
    from .types import ENUM_SINCE
    if isinstance(thing, LayerType):
        return LAYER_KINDS[thing].since
    if isinstance(thing, IntEnum):
        return ENUM_SINCE.get((type(thing), int(thing)), "19.02")
    if isinstance(thing, dataclasses.Field):
        return thing.metadata.get("since", "19.02")
    raise TypeError(f"no release for {thing!r}")



class LayerKind(NamedTuple):
    table: str                  # schema table name, e.g. "Convolution2dLayer"
    descriptor: type | None     # descriptor dataclass, or None
    tensors: tuple[str, ...]    # constant tensor fields, schema order
    optional: tuple[str, ...] = ()  # constant tensor fields that may be absent
    since: str = "19.02"        # the first release whose format has it
    descriptor_since: str = "19.02"  # the first release whose table has the descriptor (GatherLayer: 20.08)
    params: str = ""            # the nested table holding `tensors` (LstmInputParams), if any


LAYER_KINDS: dict[LayerType, LayerKind] = {
    LayerType.Activation: LayerKind("ActivationLayer", ActivationDescriptor, ()),
    LayerType.Addition: LayerKind("AdditionLayer", None, ()),
    LayerType.BatchToSpaceNd: LayerKind("BatchToSpaceNdLayer", BatchToSpaceNdDescriptor, ()),
    LayerType.BatchNormalization: LayerKind("BatchNormalizationLayer", BatchNormalizationDescriptor,
                                            ("mean", "variance", "beta", "gamma")),
    LayerType.Constant: LayerKind("ConstantLayer", None, ("input",)),
    LayerType.Convolution2d: LayerKind("Convolution2dLayer", Convolution2dDescriptor,
                                       ("weights", "biases"), ("biases",)),
    LayerType.DepthwiseConvolution2d: LayerKind("DepthwiseConvolution2dLayer",
                                                DepthwiseConvolution2dDescriptor,
                                                ("weights", "biases"), ("biases",)),
    LayerType.FullyConnected: LayerKind("FullyConnectedLayer", FullyConnectedDescriptor,
                                        ("weights", "biases"), ("biases",)),
    LayerType.Input: LayerKind("InputLayer", None, ()),
    LayerType.Multiplication: LayerKind("MultiplicationLayer", None, ()),
    LayerType.Output: LayerKind("OutputLayer", None, ()),
    LayerType.Permute: LayerKind("PermuteLayer", PermuteDescriptor, ()),
    LayerType.Pooling2d: LayerKind("Pooling2dLayer", Pooling2dDescriptor, ()),
    LayerType.Reshape: LayerKind("ReshapeLayer", ReshapeDescriptor, ()),
    LayerType.Softmax: LayerKind("SoftmaxLayer", SoftmaxDescriptor, ()),
    LayerType.SpaceToBatchNd: LayerKind("SpaceToBatchNdLayer", SpaceToBatchNdDescriptor, ()),
    LayerType.Division: LayerKind("DivisionLayer", None, ()),
    LayerType.Minimum: LayerKind("MinimumLayer", None, ()),
    LayerType.Equal: LayerKind("EqualLayer", None, ()),
    LayerType.Maximum: LayerKind("MaximumLayer", None, ()),
    LayerType.Normalization: LayerKind("NormalizationLayer", NormalizationDescriptor, ()),
    LayerType.Pad: LayerKind("PadLayer", PadDescriptor, ()),
    LayerType.Rsqrt: LayerKind("RsqrtLayer", None, ()),
    LayerType.Floor: LayerKind("FloorLayer", None, ()),
    LayerType.Greater: LayerKind("GreaterLayer", None, ()),
    LayerType.ResizeBilinear: LayerKind("ResizeBilinearLayer", ResizeBilinearDescriptor, ()),
    LayerType.Subtraction: LayerKind("SubtractionLayer", None, ()),
    LayerType.StridedSlice: LayerKind("StridedSliceLayer", StridedSliceDescriptor, ()),
    LayerType.Gather: LayerKind("GatherLayer", GatherDescriptor, (), descriptor_since="20.08"),
    LayerType.Mean: LayerKind("MeanLayer", MeanDescriptor, ()),
    LayerType.Merger: LayerKind("MergerLayer", OriginsDescriptor, ()),
    LayerType.L2Normalization: LayerKind("L2NormalizationLayer", L2NormalizationDescriptor, ()),
    LayerType.Quantize: LayerKind("QuantizeLayer", None, (), since="20.08"),
    LayerType.Dequantize: LayerKind("DequantizeLayer", None, (), since="20.08"),
    LayerType.ArgMinMax: LayerKind("ArgMinMaxLayer", ArgMinMaxDescriptor, (), since="20.08"),
    LayerType.LogSoftmax: LayerKind("LogSoftmaxLayer", LogSoftmaxDescriptor, (), since="20.08"),
    LayerType.Comparison: LayerKind("ComparisonLayer", ComparisonDescriptor, (), since="20.08"),
    # (in the 20.08 format too, but the 20.08 deserializer cannot read it: its GetBaseLayer has
    # no case for ElementwiseUnaryLayer, "Layer type 7 not recognized"; so the 23.08 target on)
    LayerType.ElementwiseUnary: LayerKind("ElementwiseUnaryLayer", ElementwiseUnaryDescriptor, (),
                                          since="23.08"),
    # Concat is the 19.02 Merger under its later name: the deserializers of 20.08 and 23.08 parse
    # both with ParseConcat (so the same runtime layer)
    LayerType.Concat: LayerKind("ConcatLayer", OriginsDescriptor, (), since="20.08"),
    LayerType.Transpose: LayerKind("TransposeLayer", TransposeDescriptor, (), since="20.08"),
    LayerType.Resize: LayerKind("ResizeLayer", ResizeDescriptor, (), since="20.08"),
    LayerType.Cast: LayerKind("CastLayer", None, (), since="23.08"),
    LayerType.BatchMatMul: LayerKind("BatchMatMulLayer", BatchMatMulDescriptor, (), since="23.08"),
    LayerType.Lstm: LayerKind("LstmLayer", LstmDescriptor, LSTM_TENSORS, LSTM_TENSORS[9:], since="20.08",
                              params="LstmInputParams"),
    LayerType.UnidirectionalSequenceLstm: LayerKind("UnidirectionalSequenceLstmLayer",
                                                    UnidirectionalSequenceLstmDescriptor, LSTM_TENSORS,
                                                    LSTM_TENSORS[9:], since="23.08", params="LstmInputParams"),
    # (weights [kD, kH, kW, I, O] and the bias are inputs 1 and 2: 23.08 takes them as tensors)
    LayerType.Convolution3d: LayerKind("Convolution3dLayer", Convolution3dDescriptor, (), since="23.08"),
    LayerType.Pooling3d: LayerKind("Pooling3dLayer", Pooling3dDescriptor, (), since="23.08"),
    LayerType.SpaceToDepth: LayerKind("SpaceToDepthLayer", SpaceToDepthDescriptor, (), since="20.08"),
    LayerType.DepthToSpace: LayerKind("DepthToSpaceLayer", DepthToSpaceDescriptor, (), since="20.08"),
    LayerType.InstanceNormalization: LayerKind("InstanceNormalizationLayer", InstanceNormalizationDescriptor, (),
                                               since="20.08"),
    LayerType.Stack: LayerKind("StackLayer", StackDescriptor, (), since="20.08"),
    # (input, alpha): x < 0 ? alpha * x : x, alpha broadcast (PreluImpl.cpp of both releases)
    LayerType.Prelu: LayerKind("PreluLayer", None, (), since="20.08"),
    # one input, one output slot per view (SplitterLayer.cpp; RefSplitterWorkload copies each view)
    LayerType.Splitter: LayerKind("SplitterLayer", ViewsDescriptor, (), since="20.08"),
    # output (in - 1) * stride + k - pads (TransposeConvolution2dLayer.cpp of both releases)
    LayerType.TransposeConvolution2d: LayerKind("TransposeConvolution2dLayer", TransposeConvolution2dDescriptor,
                                                ("weights", "biases"), ("biases",), since="20.08"),
}

LAYER_KINDS.update({
    LayerType.Reduce: LayerKind("ReduceLayer", ReduceDescriptor, (), since="23.08"),
    LayerType.LogicalBinary: LayerKind("LogicalBinaryLayer", LogicalBinaryDescriptor, (), since="23.08"),
    LayerType.Tile: LayerKind("TileLayer", TileDescriptor, (), since="23.08"),
    # the axes to reverse are a second input (a Signed32 tensor), not a descriptor
    LayerType.ReverseV2: LayerKind("ReverseV2Layer", None, (), since="23.08"),
    # (params, Signed32 indices [..., ND]): no descriptor (GatherNdLayer.cpp)
    LayerType.GatherNd: LayerKind("GatherNdLayer", None, (), since="23.08"),
    # (two inputs broadcast as the binary layers; written for Power only)
    LayerType.ElementwiseBinary: LayerKind("ElementwiseBinaryLayer", ElementwiseBinaryDescriptor, (), since="23.08"),
})

assert sum(k.since == "19.02" for k in LAYER_KINDS.values()) == 32

# The schema's `union Layer` lists the layer tables in its own order; the tag
# of a table is its 1-based position there.
UNION_ORDER = (
    "ActivationLayer", "AdditionLayer", "BatchToSpaceNdLayer", "BatchNormalizationLayer",
    "ConstantLayer", "Convolution2dLayer", "DepthwiseConvolution2dLayer", "FullyConnectedLayer",
    "InputLayer", "MultiplicationLayer", "OutputLayer", "PermuteLayer", "Pooling2dLayer",
    "ReshapeLayer", "SoftmaxLayer", "SpaceToBatchNdLayer", "DivisionLayer", "MinimumLayer",
    "EqualLayer", "MaximumLayer", "NormalizationLayer", "PadLayer", "RsqrtLayer", "FloorLayer",
    "GreaterLayer", "ResizeBilinearLayer", "SubtractionLayer", "StridedSliceLayer", "GatherLayer",
    "MeanLayer", "MergerLayer", "L2NormalizationLayer",
    # 20.08 (each release's union starts with the previous one's)
    "SplitterLayer", "DetectionPostProcessLayer", "LstmLayer", "QuantizedLstmLayer", "QuantizeLayer",
    "DequantizeLayer", "MergeLayer", "SwitchLayer", "ConcatLayer", "SpaceToDepthLayer", "PreluLayer",
    "TransposeConvolution2dLayer", "ResizeLayer", "StackLayer", "AbsLayer", "ArgMinMaxLayer", "SliceLayer",
    "DepthToSpaceLayer", "InstanceNormalizationLayer", "LogSoftmaxLayer", "ComparisonLayer", "StandInLayer",
    "ElementwiseUnaryLayer", "TransposeLayer", "QLstmLayer", "FillLayer", "RankLayer",
    # 23.08
    "LogicalBinaryLayer", "ReduceLayer", "CastLayer", "ShapeLayer", "UnidirectionalSequenceLstmLayer",
    "ChannelShuffleLayer", "Convolution3dLayer", "Pooling3dLayer", "GatherNdLayer", "BatchMatMulLayer",
    "ElementwiseBinaryLayer", "ReverseV2Layer", "TileLayer",
)
UNION_SIZE = {"19.02": 32, "20.08": 59, "23.08": 72}

# Elementwise binary layers: two inputs, numpy-style broadcasting of equal ranks.
BINARY_LAYERS = frozenset({
    LayerType.Addition, LayerType.Subtraction, LayerType.Multiplication, LayerType.Division,
    LayerType.Minimum, LayerType.Maximum, LayerType.Equal, LayerType.Greater,
})
COMPARISON_LAYERS = frozenset({LayerType.Equal, LayerType.Greater})


def schema_name(snake: str) -> str:
    """pad_left -> PadLeft: the suffix the generated bindings use."""
    return "".join(p[:1].upper() + p[1:] for p in snake.split("_"))


def descriptor_fields(desc_cls) -> list:
    return list(fields(desc_cls))
