"""One descriptor per schema descriptor table, field for field.

Names are the schema's in snake_case, enums are the schema's enums and the
defaults are the schema's defaults (a field without one defaults to 0, False
or the first enum value). Vector fields are tuples. Which layer type carries
which descriptor is ir/kinds.py's LAYER_KINDS; how fields are declared and
coerced is ir/fields.py.
"""
from .fields import dataclass, since_field, tuple_field
from .types import (ActivationFunction, ArgMinMaxFunction, ComparisonOperation, DataLayout,
                    NormalizationAlgorithmChannel, NormalizationAlgorithmMethod, OutputShapeRounding,
                    PaddingMethod, PoolingAlgorithm, UnaryOperation)
from .types import PaddingMode, ResizeMethod
from .types import BinaryOperation, LogicalBinaryOperation, ReduceOperation


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
    bias_enabled: bool = since_field("20.08", False)
    data_layout: DataLayout = since_field("20.08", DataLayout.NCHW)
    dilation_x: int = since_field("20.08", 1)
    dilation_y: int = since_field("20.08", 1)


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
    bias_enabled: bool = since_field("20.08", False)
    data_layout: DataLayout = since_field("20.08", DataLayout.NCHW)
    dilation_x: int = since_field("20.08", 1)
    dilation_y: int = since_field("20.08", 1)


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
    axis: int = since_field("23.08", -1)  # (20.08 reads no axis: the last one)


@dataclass
class ReshapeDescriptor:
    target_shape: tuple[int, ...] = tuple_field()


@dataclass
class PermuteDescriptor:
    # dim_mappings[i] is the output dimension that input dimension i goes to
    # (the inverse of numpy.transpose's axes).
    dim_mappings: tuple[int, ...] = tuple_field()


@dataclass
class SpaceToBatchNdDescriptor:
    block_shape: tuple[int, ...] = tuple_field()
    pad_list: tuple[int, ...] = tuple_field()  # flattened (before, after) pairs
    data_layout: DataLayout = DataLayout.NHWC


@dataclass
class BatchToSpaceNdDescriptor:
    block_shape: tuple[int, ...] = tuple_field()
    crops: tuple[int, ...] = tuple_field()  # flattened (begin, end) pairs
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
    axis: tuple[int, ...] = tuple_field()
    keep_dims: bool = False


@dataclass
class PadDescriptor:
    pad_list: tuple[int, ...] = tuple_field()  # flattened (before, after) pairs
    # CpuRef fills with pad_value encoded at scale 1, offset 0 (Pad.cpp): a raw value for
    # quantized outputs
    pad_value: float = since_field("20.08", 0.0)
    padding_mode: PaddingMode = since_field("23.08", PaddingMode.Constant)


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
    begin: tuple[int, ...] = tuple_field(elem="int32")
    end: tuple[int, ...] = tuple_field(elem="int32")
    stride: tuple[int, ...] = tuple_field(elem="int32")
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
    view_origins: tuple[tuple[int, ...], ...] = tuple_field()


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
    dim_mappings: tuple[int, ...] = tuple_field()


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
    axis: int = since_field("20.08", 0)


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
    axis: tuple[int, ...] = tuple_field()
    reduce_operation: ReduceOperation = ReduceOperation.Sum


@dataclass
class LogicalBinaryDescriptor:
    operation: LogicalBinaryOperation = LogicalBinaryOperation.LogicalAnd


@dataclass
class ElementwiseBinaryDescriptor:
    operation: BinaryOperation = BinaryOperation.Add


@dataclass
class TileDescriptor:
    m_multiples: tuple[int, ...] = tuple_field()   # (the schema's field is named m_Multiples)


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
    input_shape: tuple[int, ...] = tuple_field()


@dataclass
class ViewsDescriptor:
    """Splitter's: origins.view_origins[i] and view_sizes[i] are view i's corner and shape."""
    origins: OriginsDescriptor = None
    view_sizes: tuple[tuple[int, ...], ...] = tuple_field()


@dataclass
class TransposeConvolution2dDescriptor:
    # the 20.08 format on; weights [O, I, kH, kW] for NCHW, [O, kH, kW, I] for NHWC
    pad_left: int = 0
    pad_right: int = 0
    pad_top: int = 0
    pad_bottom: int = 0
    stride_x: int = 0
    stride_y: int = 0
    bias_enabled: bool = False
    data_layout: DataLayout = DataLayout.NCHW
