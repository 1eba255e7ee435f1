"""Enums, TensorInfo and ConstTensor: the value types of the IR.

Enum values are the schema's (schema/ArmnnSchema.fbs), so the writer and
reader map them without a table.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np


class DataType(IntEnum):
    Float16 = 0
    Float32 = 1
    QuantisedAsymm8 = 2
    Signed32 = 3
    Boolean = 4
    # the 20.08 format on (ENUM_SINCE): symmetric int16 (TFLite's 16x8 mode), int8 with one
    # offset, and symmetric int8 (per-axis weights)
    QSymmS16 = 7
    QAsymmS8 = 8
    QSymmS8 = 9

    @property
    def np_dtype(self) -> np.dtype:
        return _NP_DTYPES[self]

    @property
    def is_quantized(self) -> bool:
        return self in (DataType.QuantisedAsymm8, DataType.QAsymmS8, DataType.QSymmS8, DataType.QSymmS16)

    @classmethod
    def from_numpy(cls, dtype) -> "DataType":
        got = _FROM_NUMPY.get(dtype)  # (every ConstTensor asks: answered once per dtype)
        if got is not None:
            return got
        dtype = np.dtype(dtype)
        for dt, npdt in _NP_DTYPES.items():
            if npdt == dtype:
                if isinstance(dtype, np.dtype):
                    _FROM_NUMPY[dtype] = dt
                return dt
        raise ValueError(f"no Arm NN data type for numpy dtype {dtype}")


_FROM_NUMPY: dict = {}  # numpy dtype -> the DataType from_numpy gives it
_NP_DTYPES = {
    DataType.Float16: np.dtype(np.float16),
    DataType.Float32: np.dtype(np.float32),
    DataType.QuantisedAsymm8: np.dtype(np.uint8),
    DataType.Signed32: np.dtype(np.int32),
    DataType.Boolean: np.dtype(np.bool_),
    DataType.QAsymmS8: np.dtype(np.int8),
    DataType.QSymmS8: np.dtype(np.int8),
    DataType.QSymmS16: np.dtype(np.int16),
}


class DataLayout(IntEnum):
    NHWC = 0
    NCHW = 1
    NDHWC = 2  # the 23.08 format on (ENUM_SINCE): 5-D, for Convolution3d and Pooling3d
    NCDHW = 3


class ActivationFunction(IntEnum):
    Sigmoid = 0
    TanH = 1
    Linear = 2
    ReLu = 3
    BoundedReLu = 4
    SoftReLu = 5
    LeakyReLu = 6
    Abs = 7
    Sqrt = 8
    Square = 9
    HardSwish = 11  # the 20.08 format on (ENUM_SINCE): x * min(max(x + 3, 0), 6) / 6


class PoolingAlgorithm(IntEnum):
    Max = 0
    Average = 1
    L2 = 2


class OutputShapeRounding(IntEnum):
    Floor = 0
    Ceiling = 1


class PaddingMethod(IntEnum):
    IgnoreValue = 0
    Exclude = 1


class NormalizationAlgorithmChannel(IntEnum):
    Across = 0
    Within = 1


class NormalizationAlgorithmMethod(IntEnum):
    LocalBrightness = 0
    LocalContrast = 1


class LayerType(IntEnum):
    Addition = 0
    Input = 1
    Multiplication = 2
    Output = 3
    Pooling2d = 4
    Reshape = 5
    Softmax = 6
    Convolution2d = 7
    DepthwiseConvolution2d = 8
    Activation = 9
    Permute = 10
    FullyConnected = 11
    Constant = 12
    SpaceToBatchNd = 13
    BatchToSpaceNd = 14
    Division = 15
    Minimum = 16
    Equal = 17
    Maximum = 18
    Normalization = 19
    Pad = 20
    Rsqrt = 21
    Floor = 22
    BatchNormalization = 23
    Greater = 24
    ResizeBilinear = 25
    Subtraction = 26
    StridedSlice = 27
    Gather = 28
    Mean = 29
    Merger = 30
    L2Normalization = 31
    # the 20.08 format (the values are its LayerType enum's)
    Quantize = 35
    Dequantize = 36
    ArgMinMax = 47
    LogSoftmax = 51
    Comparison = 52
    ElementwiseUnary = 54
    Prelu = 41
    TransposeConvolution2d = 42
    # structural layers of the 20.08 format (issue 16, direct layers)
    Concat = 39
    Resize = 43
    Transpose = 55
    # the 23.08 format (gather worktree: embedding lookups and attention)
    Cast = 61
    BatchMatMul = 68
    # recurrent layers: one LSTM time step (20.08 format), a whole sequence (23.08)
    Lstm = 34
    UnidirectionalSequenceLstm = 63
    # 3-D convolution and pooling (the 23.08 format)
    Convolution3d = 65
    Pooling3d = 66
    # the 23.08 format: reductions, logical operators, Reverse and Tile
    LogicalBinary = 59
    Reduce = 60
    ReverseV2 = 70
    Tile = 71
    GatherNd = 67
    ElementwiseBinary = 69
    SpaceToDepth = 40
    DepthToSpace = 49
    InstanceNormalization = 50
    Stack = 44
    Splitter = 32


from .enums_release import (  # noqa: F401 (re-exported: the IR's enums are all in types)
    ArgMinMaxFunction, ResizeMethod, PaddingMode, ComparisonOperation, UnaryOperation, ReduceOperation, LogicalBinaryOperation,
    BinaryOperation)


# Enum values that a later format added to an enum of an earlier one, by (enum, value):
# IntEnum members of different enums with the same value are equal as dict keys.
ENUM_SINCE = {(UnaryOperation, int(v)): "23.08" for v in (UnaryOperation.LogicalNot, UnaryOperation.Log,
                                                         UnaryOperation.Sin, UnaryOperation.Ceil)}
ENUM_SINCE.update({(DataType, int(v)): "20.08" for v in (DataType.QAsymmS8, DataType.QSymmS8,
                                                              DataType.QSymmS16)})
ENUM_SINCE.update({(DataLayout, int(v)): "23.08" for v in (DataLayout.NDHWC, DataLayout.NCDHW)})
ENUM_SINCE[(ActivationFunction, int(ActivationFunction.HardSwish))] = "20.08"


class ConstTensorData(IntEnum):
    """Storage kinds of the schema's ConstTensorData union (values = union tags)."""
    ByteData = 1
    ShortData = 2
    IntData = 3
    LongData = 4


# What Arm NN's own serializer writes for each data type; the deserializer
# only reinterprets the bytes, so any kind whose size divides the data works.
DEFAULT_STORAGE = {
    DataType.Float16: ConstTensorData.ShortData,
    DataType.Float32: ConstTensorData.IntData,
    DataType.QuantisedAsymm8: ConstTensorData.ByteData,
    DataType.Signed32: ConstTensorData.IntData,
    DataType.Boolean: ConstTensorData.ByteData,
    DataType.QAsymmS8: ConstTensorData.ByteData,
    DataType.QSymmS8: ConstTensorData.ByteData,
    DataType.QSymmS16: ConstTensorData.ShortData,
}


@dataclass(frozen=True, slots=True)  # (slots: many thousands of them in a large network)
class TensorInfo:
    """Shape, data type and quantization of one tensor: per tensor (scale, offset), or
    per axis (the 20.08 format on: `scales`, one per index of dimension `quant_dim`,
    offset 0; `scale` is then scales[0], as Arm NN's TensorInfo reports it)."""
    shape: tuple[int, ...]
    dtype: DataType = DataType.Float32
    scale: float = 1.0
    offset: int = 0
    scales: tuple[float, ...] | None = None
    quant_dim: int = 0

    def __post_init__(self):
        # (fast paths for what most tensors hold: the checks cost less than the conversions)
        object.__setattr__(self, "shape", tuple(map(int, self.shape)))
        if type(self.dtype) is not DataType:
            object.__setattr__(self, "dtype", DataType(self.dtype))
        if type(self.scale) is not float or self.scale != 1.0:
            object.__setattr__(self, "scale", float(np.float32(self.scale)))
        if type(self.offset) is not int:
            object.__setattr__(self, "offset", int(self.offset))
        if self.scales is not None:
            object.__setattr__(self, "scales", tuple(float(v) for v in np.asarray(self.scales, np.float32)))
        if type(self.quant_dim) is not int:
            object.__setattr__(self, "quant_dim", int(self.quant_dim))

    @classmethod
    def per_axis(cls, shape, dtype: "DataType", scales, quant_dim: int = 0) -> "TensorInfo":
        scales = tuple(float(v) for v in np.asarray(scales, np.float32).reshape(-1))
        return cls(shape, dtype, scales[0] if scales else 1.0, 0, scales, quant_dim)

    @property
    def per_axis_quantized(self) -> bool:
        return self.scales is not None

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def num_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def with_shape(self, shape) -> "TensorInfo":
        # (the other fields are canonical already: only the shape is converted; shapes.py asks per layer)
        shape = tuple(map(int, shape))
        if shape == self.shape:
            return self  # (immutable: an elementwise layer's output shares its input's info)
        new = object.__new__(TensorInfo)
        put = object.__setattr__
        put(new, "shape", shape)
        put(new, "dtype", self.dtype)
        put(new, "scale", self.scale)
        put(new, "offset", self.offset)
        put(new, "scales", self.scales)
        put(new, "quant_dim", self.quant_dim)
        return new

    def with_dtype(self, dtype: DataType) -> "TensorInfo":
        if dtype.is_quantized:
            return TensorInfo(self.shape, dtype, self.scale, self.offset, self.scales, self.quant_dim)
        return TensorInfo(self.shape, dtype)

    def __str__(self):
        dims = "x".join(str(d) for d in self.shape) or "scalar"
        q = f" q=({self.scale:g},{self.offset})" if self.dtype.is_quantized else ""
        if self.scales is not None:
            q = f" q=({len(self.scales)} scales on axis {self.quant_dim})"
        return f"{dims} {self.dtype.name}{q}"


_PLAIN: dict = {}  # DataType -> TensorInfo((), it)


class ConstTensor:
    """A constant tensor: a TensorInfo plus a numpy array (`data`, C-contiguous).

    `storage` is the ConstTensorData kind the writer uses; by default the one
    Arm NN's serializer uses for the data type.

    A strided view (a transposed weight, say) is kept as it is until `data` is
    first read: the writer copies it straight into the output buffer, so a
    large model's weights are not held twice (see `stored`).
    """
    __slots__ = ("info", "_data", "storage")

    def __init__(self, data: np.ndarray, info: TensorInfo | None = None,
                 storage: ConstTensorData | None = None):
        data = np.asarray(data)
        if info is None:  # (a prototype per data type given the shape: cheaper than TensorInfo())
            dt = DataType.from_numpy(data.dtype)
            info = (_PLAIN.get(dt) or _PLAIN.setdefault(dt, TensorInfo((), dt))).with_shape(data.shape)
        want = info.dtype.np_dtype
        if data.dtype != want:
            raise ValueError(f"constant data is {data.dtype}, TensorInfo says {info.dtype.name}")
        if tuple(data.shape) != info.shape:
            data = data.reshape(info.shape)
        self.info = info
        self._data = data
        self.storage = ConstTensorData(storage) if storage is not None else DEFAULT_STORAGE[info.dtype]

    @classmethod
    def quantized(cls, data: np.ndarray, scale: float, offset: int) -> "ConstTensor":
        data = np.asarray(data, dtype=np.uint8)
        return cls(data, TensorInfo(data.shape, DataType.QuantisedAsymm8, scale, offset))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.info.shape

    @property
    def data(self) -> np.ndarray:
        if not self._data.flags.c_contiguous:
            self._data = np.ascontiguousarray(self._data)
        return self._data

    @property
    def stored(self) -> np.ndarray:
        """The array as given, possibly a strided view (for the writer's single copy)."""
        return self._data

    def transposed(self, axes) -> "ConstTensor":
        """The same values with their axes permuted (numpy.transpose): a view, copied once by the
        writer. Per-tensor quantization and the storage kind carry over."""
        view = self._data.transpose(axes)
        return ConstTensor(view, self.info.with_shape(view.shape), self.storage)

    def dequantized(self) -> np.ndarray:
        """The values as float32 (dequantized if quantized)."""
        if self.info.scales is not None:  # per axis: offset 0, one scale per index of quant_dim
            shape = [1] * self.data.ndim
            shape[self.info.quant_dim] = len(self.info.scales)
            return (self.data.astype(np.float32) * np.asarray(self.info.scales, np.float32).reshape(shape))
        if self.info.dtype.is_quantized:
            return ((self.data.astype(np.float32) - self.info.offset) * np.float32(self.info.scale)).astype(np.float32)
        return self.data.astype(np.float32)

    def __eq__(self, other):
        # bytes, not values: NaN weights equal themselves, and -0.0 differs from 0.0 as in the file
        return (isinstance(other, ConstTensor) and self.info == other.info
                and self.storage == other.storage and self.data.tobytes() == other.data.tobytes())

    def __repr__(self):
        return f"ConstTensor({self.info}, storage={self.storage.name})"
