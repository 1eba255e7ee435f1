"""verify()'s per-layer-type rules for the 23.08 format's layers (and the 20.08 structural
layers: Concat, Transpose, Resize, Pad), after WorkloadData.cpp and the layers'
ValidateTensorShapesFromInputs of Arm NN 23.08."""
from __future__ import annotations

from .types import DataLayout, DataType, LayerType
from .verify_rules import merger_rule

RULES: dict = {}


def _layout_5d(layer, ins):
    if layer.desc.data_layout not in (DataLayout.NDHWC, DataLayout.NCDHW):
        return [f"data_layout {layer.desc.data_layout.name}; a 3-D layer takes NDHWC or NCDHW"]
    if ins[0].rank != 5:
        return [f"input is {ins[0].shape}, not 5-D"]
    return []


def _conv3d_rule(layer, ins):
    """Convolution3d (23.08): input, weights [kD, kH, kW, I, O] and, with bias_enabled, a bias [O],
    of one float type (the weights as inputs: Convolution3dDescriptor::GetNumInputs)."""
    d, problems = layer.desc, _layout_5d(layer, ins)
    if problems:
        return problems
    want = 3 if d.bias_enabled else 2
    if len(ins) != want:
        return [f"takes {want} inputs (input, weights{', bias' if d.bias_enabled else ''}), got {len(ins)}"]
    x, w = ins[0], ins[1]
    cin = x.shape[1 if d.data_layout == DataLayout.NCDHW else 4]
    if w.rank != 5 or w.shape[3] != cin:
        problems.append(f"weights {w.shape} are not [kD, kH, kW, {cin}, O]")
    elif d.bias_enabled and ins[2].shape != (w.shape[4],):
        problems.append(f"bias {ins[2].shape} is not [{w.shape[4]}]")
    y = layer.outputs[0]
    if x.dtype in (DataType.Float32, DataType.Float16):
        if len({i.dtype for i in ins} | {y.dtype}) != 1:
            problems.append(f"inputs are {[i.dtype.name for i in ins]}; one float type is taken")
    elif not (x.dtype.is_quantized and y.dtype == x.dtype and w.dtype.is_quantized
              and (not d.bias_enabled or ins[2].dtype == DataType.Signed32)):
        problems.append(f"inputs are {[i.dtype.name for i in ins]}: a quantized input takes quantized weights "
                        "and a Signed32 bias (RefLayerSupport IsConvolution3dSupported)")
    if min(d.stride_x, d.stride_y, d.stride_z, d.dilation_x, d.dilation_y, d.dilation_z) < 1:
        problems.append("strides and dilations must be at least 1")
    return problems


def _pool3d_rule(layer, ins):
    d, problems = layer.desc, _layout_5d(layer, ins)
    if min(d.stride_x, d.stride_y, d.stride_z, d.pool_width, d.pool_height, d.pool_depth) < 1:
        problems.append("pool sizes and strides must be at least 1")
    return problems


RULES.update({LayerType.Convolution3d: _conv3d_rule, LayerType.Pooling3d: _pool3d_rule})
# -- the 23.08 format's layers (WorkloadData.cpp and the layers' ValidateTensorShapesFromInputs, 23.08)

def _reduce_rule(layer, ins):
    x, axes = ins[0], tuple(layer.desc.axis)
    if not 1 <= x.rank <= 4:
        return [f"input is {x.rank}-D; Arm NN's Reduce takes 1 to 4 dimensions"]
    if len(set(axes)) != len(axes) or any(a >= x.rank for a in axes):
        return [f"axes {axes} must be distinct dimensions of the rank-{x.rank} input"]
    return []


def _logical_rule(layer, ins):
    if any(i.dtype != DataType.Boolean for i in ins):
        return [f"inputs are {[i.dtype.name for i in ins]}; LogicalBinary takes Boolean tensors"]
    return []


def _reverse_rule(layer, ins):
    x, axes = ins
    if x.rank > 4:
        return [f"input is {x.rank}-D; Arm NN's ReverseV2 takes at most 4 dimensions"]
    if axes.dtype != DataType.Signed32 or axes.rank != 1 or axes.shape[0] > x.rank:
        return [f"axes input is {axes}; ReverseV2 takes a 1-D Signed32 tensor of at most {x.rank} axes"]
    return []


def _tile_rule(layer, ins):
    m = tuple(layer.desc.m_multiples)
    if len(m) != ins[0].rank or any(k < 1 for k in m):
        return [f"multiples {m} must be one positive number per input dimension ({ins[0].rank})"]
    return []


_GATHER_ND_TYPES = (DataType.Float32, DataType.Float16, DataType.QAsymmS8, DataType.QuantisedAsymm8,
                    DataType.QSymmS16, DataType.Signed32)  # (RefLayerSupport::IsGatherNdSupported)


def _gather_nd_rule(layer, ins):
    x, idx = ins
    if idx.dtype != DataType.Signed32:
        return [f"indices (input 1) are {idx.dtype.name}; GatherNd takes Signed32"]
    if x.dtype not in _GATHER_ND_TYPES:
        return [f"params are {x.dtype.name}; Arm NN 23.08's CpuRef GatherNd takes "
                f"{', '.join(t.name for t in _GATHER_ND_TYPES)}"]
    return []


RULES.update({LayerType.Reduce: _reduce_rule, LayerType.LogicalBinary: _logical_rule,
               LayerType.ReverseV2: _reverse_rule, LayerType.Tile: _tile_rule,
               LayerType.GatherNd: _gather_nd_rule})


def _transpose(layer, ins):
    m = layer.desc.dim_mappings
    if sorted(m) != list(range(ins[0].rank)):
        return [f"dim_mappings {tuple(m)} is not a permutation of 0..{ins[0].rank - 1}"]
    return []


def _resize(layer, ins):
    d = layer.desc
    if ins[0].rank != 4:
        return [f"needs a 4-D input, got {ins[0].shape}"]
    if d.align_corners and d.half_pixel_centers:  # Resize.cpp asserts they are not both set
        return ["align_corners and half_pixel_centers are both set; Arm NN takes at most one"]
    if d.target_height < 1 or d.target_width < 1:
        return [f"target size {d.target_height}x{d.target_width} is empty"]
    return []


def _pad(layer, ins):
    """PadQueueDescriptor: one (before, after) pair per dimension; MirrorPad.cpp (23.08): a
    reflected pad at most the dimension - 1, a symmetric one at most the dimension."""
    from .types import PaddingMode
    d, shape = layer.desc, ins[0].shape
    if len(d.pad_list) != 2 * len(shape):
        return [f"pad_list has {len(d.pad_list)} entries for a rank-{len(shape)} input"]
    if d.padding_mode != PaddingMode.Constant:
        edge = 1 if d.padding_mode == PaddingMode.Reflect else 0
        if any(v > n - edge for i, n in enumerate(shape) for v in d.pad_list[2 * i:2 * i + 2]):
            return [f"{d.padding_mode.name} padding {d.pad_list} is larger than the input {shape} allows"]
    return []


def _four_d(layer, ins):
    return [] if ins[0].rank == 4 else [f"needs a 4-D input, got {ins[0].shape}"]


RULES.update({LayerType.Concat: merger_rule, LayerType.Transpose: _transpose, LayerType.Resize: _resize,
               LayerType.Pad: _pad, LayerType.InstanceNormalization: _four_d})
# -- the 23.08 format: Cast and BatchMatMul (gather worktree) --------------------------------
def _cast_rule(layer, ins):
    """CastQueueDescriptor::Validate (23.08): no Boolean on either side."""
    x, y = ins[0], layer.outputs[0]
    if DataType.Boolean in (x.dtype, y.dtype):
        return [f"casts {x.dtype.name} to {y.dtype.name}; Arm NN's Cast takes no Boolean"]
    return []


def _batch_matmul_rule(layer, ins):
    """BatchMatMulQueueDescriptor::Validate (23.08): float or quantized inputs and output of one
    type; transpose and adjoint not both set."""
    d, y = layer.desc, layer.outputs[0]
    if len({i.dtype for i in ins} | {y.dtype}) > 1 or y.dtype in (DataType.Signed32, DataType.Boolean):
        return [f"inputs {[i.dtype.name for i in ins]} and output {y.dtype.name}: BatchMatMul needs one "
                "float or quantized type"]
    if (d.transpose_x and d.adjoint_x) or (d.transpose_y and d.adjoint_y):
        return ["transpose and adjoint cannot both be set for one input"]
    return []


RULES.update({LayerType.Cast: _cast_rule, LayerType.BatchMatMul: _batch_matmul_rule})


def _stack_rule(layer, ins):
    if ins[0].rank > 4:  # Stack.cpp indexes at most 4 input dimensions
        return [f"stacks {ins[0].rank}-D inputs; Arm NN's Stack takes at most 4-D"]
    if len({i.dtype for i in ins}) > 1:
        return [f"inputs mix data types {[i.dtype.name for i in ins]}; Arm NN needs them equal"]
    return []


RULES[LayerType.Stack] = _stack_rule
