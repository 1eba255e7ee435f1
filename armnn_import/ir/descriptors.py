"""One descriptor per schema descriptor table, field for field.

Names are the schema's in snake_case, enums are the schema's enums and the
defaults are the schema's defaults (a field without one defaults to 0, False
or the first enum value). Vector fields are tuples.

LAYER_KINDS says, for each of the 32 layer types, which descriptor it carries
and which constant tensors (in schema order). The writer and the reader are
driven by this table.
"""
import dataclasses
import typing
from dataclasses import field, fields
from enum import IntEnum
from typing import NamedTuple

import numpy as np

from .types import (ActivationFunction, ArgMinMaxFunction, ComparisonOperation, DataLayout, LayerType,
                    NormalizationAlgorithmChannel, NormalizationAlgorithmMethod, OutputShapeRounding,
                    PaddingMethod, PoolingAlgorithm, UnaryOperation)
from .types import PaddingMode, ResizeMethod
from .types import LogicalBinaryOperation, ReduceOperation


def _tuple(default=(), elem="uint32"):
    """A vector field; `elem` is the schema's element type ([uint] or [int])."""
    return field(default=tuple(default), metadata={"elem": elem})


def _since(release: str, default):
    """A field that the format of `release` added: not written for older targets,
    where it must keep its default."""
    return field(default=default, metadata={"since": release})


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


_HINTS: dict[type, list] = {}  # class -> [(field, kind, type)]: get_type_hints is slow, and runs per layer
_ENUM, _FLOAT, _BOOL, _INT, _TUPLE = range(5)


def _kinds(cls) -> list:
    out = []
    for f, tp in typing.get_type_hints(cls).items():
        if isinstance(tp, type) and issubclass(tp, IntEnum):
            out.append((f, _ENUM, tp))
        elif tp is float:
            out.append((f, _FLOAT, tp))
        elif tp is bool:
            out.append((f, _BOOL, tp))
        elif tp is int:
            out.append((f, _INT, tp))
        elif typing.get_origin(tp) is tuple:
            out.append((f, _TUPLE, tp))
    return out


def _canonical(self):
    # Coerce every field to its declared type (enums, float32-rounded floats,
    # tuples of ints), so equal descriptors compare equal after a round trip.
    # (A value already of its type, and floats 0 and 1, are kept as they are: the same result.)
    hints = _HINTS.get(type(self))
    if hints is None:
        hints = _HINTS[type(self)] = _kinds(type(self))
    for f, kind, tp in hints:
        v = getattr(self, f)
        if kind == _ENUM or kind == _BOOL or kind == _INT:
            if type(v) is tp:
                continue
            v = tp(v)
        elif kind == _FLOAT:
            if type(v) is float and (v == 0.0 or v == 1.0):
                continue
            v = float(np.float32(v))
        else:
            if type(v) is tuple and all([type(e) is int for e in v]):
                continue  # (a tuple of ints already, as most callers pass: the loop below would copy it)
            v = tuple(tuple(int(x) for x in e) if isinstance(e, (tuple, list, np.ndarray)) else int(e) for e in v)
        setattr(self, f, v)


def dataclass(cls):
    cls.__post_init__ = _canonical
    return dataclasses.dataclass(cls, slots=True)  # (slots: one per layer of networks of 100,000s)


@dataclass
class ActivationDescriptor:
    function: ActivationFunction = ActivationFunction.Sigmoid
    a: float = 0.0
    b: float = 0.0


@dataclass
class Convolution2dDescriptor:
    pad_left: int = 0
    pad_right: int = 0
    pad_top: int = 0
    pad_bottom: int = 0
    stride_x: int = 0
    stride_y: int = 0
    # Slots 6 and 7 of the 19.02 format; from 19.05 on every release reads
    # dilationX/dilationY there and has these two in slots 8 and 9. So in the
    # 19.02 format they are never written and keep their defaults (verify()
    # enforces it): the bias goes in a following layer and NHWC inputs are
    # permuted around an NCHW convolution. Richer targets write all four.
    bias_enabled: bool = _since("20.08", False)
    data_layout: DataLayout = _since("20.08", DataLayout.NCHW)
    dilation_x: int = _since("20.08", 1)
    dilation_y: int = _since("20.08", 1)


@dataclass
class DepthwiseConvolution2dDescriptor:
    pad_left: int = 0
    pad_right: int = 0
    pad_top: int = 0
    pad_bottom: int = 0
    stride_x: int = 0
    stride_y: int = 0
    # Slots 6 and 7 of the 19.02 format; from 19.05 on every release reads
    # dilationX/dilationY there and has these two in slots 8 and 9. So in the
    # 19.02 format they are never written and keep their defaults (verify()
    # enforces it): the bias goes in a following layer and NHWC inputs are
    # permuted around an NCHW convolution. Richer targets write all four.
    bias_enabled: bool = _since("20.08", False)
    data_layout: DataLayout = _since("20.08", DataLayout.NCHW)
    dilation_x: int = _since("20.08", 1)
    dilation_y: int = _since("20.08", 1)


@dataclass
class FullyConnectedDescriptor:
    bias_enabled: bool = False
    transpose_weights_matrix: bool = False


@dataclass
class L2NormalizationDescriptor:
    data_layout: DataLayout = DataLayout.NCHW


@dataclass
class Pooling2dDescriptor:
    pool_type: PoolingAlgorithm = PoolingAlgorithm.Max
    pad_left: int = 0
    pad_right: int = 0
    pad_top: int = 0
    pad_bottom: int = 0
    pool_width: int = 0
    pool_height: int = 0
    stride_x: int = 0
    stride_y: int = 0
    output_shape_rounding: OutputShapeRounding = OutputShapeRounding.Floor
    padding_method: PaddingMethod = PaddingMethod.IgnoreValue
    data_layout: DataLayout = DataLayout.NHWC


@dataclass
class SoftmaxDescriptor:
    beta: float = 0.0
    axis: int = _since("23.08", -1)  # (20.08 reads no axis: the last one)


@dataclass
class ReshapeDescriptor:
    target_shape: tuple[int, ...] = _tuple()


@dataclass
class PermuteDescriptor:
    # dim_mappings[i] is the output dimension that input dimension i goes to
    # (the inverse of numpy.transpose's axes).
    dim_mappings: tuple[int, ...] = _tuple()


@dataclass
class SpaceToBatchNdDescriptor:
    block_shape: tuple[int, ...] = _tuple()
    pad_list: tuple[int, ...] = _tuple()  # flattened (before, after) pairs
    data_layout: DataLayout = DataLayout.NHWC


@dataclass
class BatchToSpaceNdDescriptor:
    block_shape: tuple[int, ...] = _tuple()
    crops: tuple[int, ...] = _tuple()  # flattened (begin, end) pairs
    data_layout: DataLayout = DataLayout.NHWC


@dataclass
class NormalizationDescriptor:
    norm_channel_type: NormalizationAlgorithmChannel = NormalizationAlgorithmChannel.Across
    norm_method_type: NormalizationAlgorithmMethod = NormalizationAlgorithmMethod.LocalBrightness
    norm_size: int = 0
    alpha: float = 0.0
    beta: float = 0.0
    k: float = 0.0
    data_layout: DataLayout = DataLayout.NCHW


@dataclass
class MeanDescriptor:
    axis: tuple[int, ...] = _tuple()
    keep_dims: bool = False


@dataclass
class PadDescriptor:
    pad_list: tuple[int, ...] = _tuple()  # flattened (before, after) pairs
    # CpuRef fills with pad_value encoded at scale 1, offset 0 (Pad.cpp): a raw value for
    # quantized outputs
    pad_value: float = _since("20.08", 0.0)
    padding_mode: PaddingMode = _since("23.08", PaddingMode.Constant)


@dataclass
class BatchNormalizationDescriptor:
    eps: float = 0.0
    data_layout: DataLayout = DataLayout.NHWC


@dataclass
class ResizeBilinearDescriptor:
    target_width: int = 0
    target_height: int = 0
    data_layout: DataLayout = DataLayout.NHWC


@dataclass
class StridedSliceDescriptor:
    begin: tuple[int, ...] = _tuple(elem="int32")
    end: tuple[int, ...] = _tuple(elem="int32")
    stride: tuple[int, ...] = _tuple(elem="int32")
    begin_mask: int = 0
    end_mask: int = 0
    shrink_axis_mask: int = 0
    ellipsis_mask: int = 0
    new_axis_mask: int = 0
    data_layout: DataLayout = DataLayout.NHWC


@dataclass
class OriginsDescriptor:
    concat_axis: int = 0
    num_views: int = 0
    num_dimensions: int = 0
    view_origins: tuple[tuple[int, ...], ...] = _tuple()


# -- the 20.08 format's descriptors ---------------------------------------------

@dataclass
class ArgMinMaxDescriptor:
    arg_min_max_function: ArgMinMaxFunction = ArgMinMaxFunction.Min
    axis: int = 0


@dataclass
class ComparisonDescriptor:
    operation: ComparisonOperation = ComparisonOperation.Equal


@dataclass
class ElementwiseUnaryDescriptor:
    operation: UnaryOperation = UnaryOperation.Abs


@dataclass
class LogSoftmaxDescriptor:
    beta: float = 1.0
    axis: int = -1


@dataclass
class TransposeDescriptor:
    # dim_mappings[i] is the input dimension that output dimension i takes (numpy.transpose's
    # axes; armnnUtils::TransposeTensorShape): the inverse of PermuteDescriptor's
    dim_mappings: tuple[int, ...] = _tuple()


@dataclass
class ResizeDescriptor:
    target_height: int = 0
    target_width: int = 0
    method: ResizeMethod = ResizeMethod.NearestNeighbor
    data_layout: DataLayout = DataLayout.NHWC
    align_corners: bool = False
    half_pixel_centers: bool = False


@dataclass
class GatherDescriptor:
    # (the 19.02 GatherLayer has no descriptor: LayerKind.descriptor_since; 20.08's CpuRef runs axis 0 only)
    axis: int = _since("20.08", 0)


@dataclass
class BatchMatMulDescriptor:
    # (the 23.08 format; adjoint and the NHWC/NDHWC layouts are never written by the frontends)
    transpose_x: bool = False
    transpose_y: bool = False
    adjoint_x: bool = False
    adjoint_y: bool = False
    data_layout_x: DataLayout = DataLayout.NCHW
    data_layout_y: DataLayout = DataLayout.NCHW


@dataclass
class LstmDescriptor:
    # activation_func: the Android NN code of the cell activation (LstmUtils SetActivationParameters:
    # 0 none, 1 ReLu, 3 ReLu6, 4 TanH, 6 Sigmoid); the gates always use Sigmoid
    activation_func: int = 0
    clipping_thres_cell: float = 0.0
    clipping_thres_proj: float = 0.0
    cifg_enabled: bool = True
    peephole_enabled: bool = False
    projection_enabled: bool = False
    layer_norm_enabled: bool = False


@dataclass
class UnidirectionalSequenceLstmDescriptor:
    activation_func: int = 0
    clipping_thres_cell: float = 0.0
    clipping_thres_proj: float = 0.0
    cifg_enabled: bool = True
    peephole_enabled: bool = False
    projection_enabled: bool = False
    layer_norm_enabled: bool = False
    time_major: bool = False


@dataclass
class Convolution3dDescriptor:
    pad_left: int = 0
    pad_right: int = 0
    pad_top: int = 0
    pad_bottom: int = 0
    pad_front: int = 0
    pad_back: int = 0
    stride_x: int = 0
    stride_y: int = 0
    stride_z: int = 0
    dilation_x: int = 1
    dilation_y: int = 1
    dilation_z: int = 1
    bias_enabled: bool = False
    data_layout: DataLayout = DataLayout.NDHWC


@dataclass
class Pooling3dDescriptor:
    pool_type: PoolingAlgorithm = PoolingAlgorithm.Max
    pad_left: int = 0
    pad_right: int = 0
    pad_top: int = 0
    pad_bottom: int = 0
    pad_front: int = 0
    pad_back: int = 0
    pool_width: int = 0
    pool_height: int = 0
    pool_depth: int = 0
    stride_x: int = 0
    stride_y: int = 0
    stride_z: int = 0
    output_shape_rounding: OutputShapeRounding = OutputShapeRounding.Floor
    padding_method: PaddingMethod = PaddingMethod.IgnoreValue
    data_layout: DataLayout = DataLayout.NHWC


# The fields of the schema's LstmInputParams table, in its order; the first nine are always present.
LSTM_TENSORS = (
    "input_to_forget_weights", "input_to_cell_weights", "input_to_output_weights",
    "recurrent_to_forget_weights", "recurrent_to_cell_weights", "recurrent_to_output_weights",
    "forget_gate_bias", "cell_bias", "output_gate_bias",
    "input_to_input_weights", "recurrent_to_input_weights", "cell_to_input_weights", "input_gate_bias",
    "projection_weights", "projection_bias", "cell_to_forget_weights", "cell_to_output_weights",
    "input_layer_norm_weights", "forget_layer_norm_weights", "cell_layer_norm_weights",
    "output_layer_norm_weights",
)
# -- the 23.08 format's descriptors ---------------------------------------------

@dataclass
class ReduceDescriptor:
    keep_dims: bool = False
    axis: tuple[int, ...] = _tuple()
    reduce_operation: ReduceOperation = ReduceOperation.Sum


@dataclass
class LogicalBinaryDescriptor:
    operation: LogicalBinaryOperation = LogicalBinaryOperation.LogicalAnd


@dataclass
class TileDescriptor:
    m_multiples: tuple[int, ...] = _tuple()   # (the schema's field is named m_Multiples)


@dataclass
class SpaceToDepthDescriptor:
    block_size: int = 0
    data_layout: DataLayout = DataLayout.NHWC


@dataclass
class DepthToSpaceDescriptor:
    block_size: int = 0
    data_layout: DataLayout = DataLayout.NHWC


@dataclass
class InstanceNormalizationDescriptor:
    gamma: float = 0.0
    beta: float = 0.0
    eps: float = 0.0
    data_layout: DataLayout = DataLayout.NHWC


@dataclass
class StackDescriptor:
    axis: int = 0
    num_inputs: int = 0
    input_shape: tuple[int, ...] = _tuple()


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
}

LAYER_KINDS.update({
    LayerType.Reduce: LayerKind("ReduceLayer", ReduceDescriptor, (), since="23.08"),
    LayerType.LogicalBinary: LayerKind("LogicalBinaryLayer", LogicalBinaryDescriptor, (), since="23.08"),
    LayerType.Tile: LayerKind("TileLayer", TileDescriptor, (), since="23.08"),
    # the axes to reverse are a second input (a Signed32 tensor), not a descriptor
    LayerType.ReverseV2: LayerKind("ReverseV2Layer", None, (), since="23.08"),
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
