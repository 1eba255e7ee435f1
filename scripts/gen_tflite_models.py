#!/usr/bin/env python3
"""Generate the TFLite reference models in test_models/tflite.

TensorFlow is needed only here, never by the package:
    pip install tensorflow-cpu==2.21.0
    python scripts/gen_tflite_models.py            # everything (about a minute on 2 cores)
    python scripts/gen_tflite_models.py --only 'conv|pool'   # regenerate matching names
    python scripts/gen_tflite_models.py --only 'models/'     # all the networks

Writes ops/<op>.<variant>.tflite (one operator each), models/<net>.<variant>.tflite
(small networks with random weights whose outputs clearly depend on the input), a <same>.npz next to each model with
input_0.. and output_0.. (seeded inputs, LiteRT outputs with the reference kernels)
and manifest.json. Every seed is derived from the model's name, so a model does not
change when others are added.

Variants:
  float32      plain float model
  int8         full-integer, int8 input/output (per-channel weights, converter default)
  uint8io      full-integer int8 interior, uint8 input/output (QUANTIZE at the edges)
  int8floatio  full-integer interior, float input/output (QUANTIZE/DEQUANTIZE at the edges)
  uint8        legacy all-uint8 model (fake-quant graph + TF1 converter, per-tensor
               uint8 weights): the only integer form Arm NN 20.08 (QAsymm8) takes as is
  dynamic      dynamic-range: int8 weights, float activations
  fp16w        float16 weights expanded by DEQUANTIZE
  sparse, sparsefp16, sparseint8   pruned weights stored sparse (see "sparse weights")
A variant the converter cannot produce genuinely (it errors, or it leaves the op in
float between DEQUANTIZE/QUANTIZE) is listed in the manifest's "skipped" with why.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tflite  # noqa: E402
from tflite.BuiltinOperator import BuiltinOperator  # noqa: E402
from tflite.TensorType import TensorType  # noqa: E402
from reference_io import save_npz  # noqa: E402 - run as a script

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "test_models" / "tflite"
OP_NAMES = {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}
TYPE_NAMES = {v: k for k, v in vars(TensorType).items() if not k.startswith("_")}
QUANT_VARIANTS = ("int8", "uint8io", "int8floatio", "uint8", "sparseint8")
OP_VARIANTS = ("float32", "int8", "uint8io", "uint8")
REP_SAMPLES = 16

tf = None  # imported in main() so that --help works without TensorFlow


def seed_of(*parts):
    return zlib.crc32("/".join(parts).encode())


# ----------------------------------------------------------------------------- cases

@dataclass
class Case:
    name: str
    tests: list            # builtin operators the model is meant to exercise
    inputs: list           # [(name, shape, dist)]
    build: object          # build(rng, q) -> callable(*tensors)
    variants: tuple = OP_VARIANTS
    kind: str = "op"
    patch: object = None   # patch(model_object) rewrites an op the converter never emits
    check: object = None   # check(ctx) asserts the patched model against a reference
    note: str = ""
    keras: object = None   # (make(shape) -> keras.Model, shape) for Keras networks
    extra: dict = field(default_factory=dict)


CASES = []


def case(name, tests, inputs, **kw):
    def deco(build):
        CASES.append(Case(name, tests, inputs, build, **kw))
        return build
    return deco


def X(shape, dist="normal", name="x"):
    return (name, tuple(shape), dist)


def sample(rng, shape, dist):
    if dist == "normal":
        return rng.standard_normal(shape).astype(np.float32)
    kind, *args = dist
    if kind == "normal":
        return (rng.standard_normal(shape) * args[0]).astype(np.float32)
    if kind == "uniform":
        return rng.uniform(args[0], args[1], shape).astype(np.float32)
    if kind == "discrete":
        return rng.choice(np.asarray(args[0], np.float32), shape)
    raise ValueError(dist)


def W(r, *shape, s=0.5):
    return (r.standard_normal(shape) * s).astype(np.float32)


def C(v):
    return tf.constant(v)


# Each build(r, q) draws its weights from r and passes every weight-like constant
# through q.w (a fake-quant node on the legacy uint8 path, else a plain constant) and
# every intermediate activation that stays a tensor of the TFLite model through
# q.a(key, t) (fake-quant with the range recorded from a float run, else identity).


class Plain:
    w = staticmethod(lambda v: tf.constant(v))
    a = staticmethod(lambda key, t: t)


class Recorder(Plain):
    """Eager float run that records every q.a activation, for the legacy ranges."""
    def __init__(self):
        self.seen = {}

    def a(self, key, t):
        self.seen.setdefault(key, []).append(t.numpy())
        return t


class FakeQuant:
    def __init__(self, seen):
        self.seen = seen

    def w(self, v):
        return fake_quant(tf.constant(v), [v])

    def a(self, key, t):
        return fake_quant(t, self.seen[key])

@case("conv_2d", ["CONV_2D"], [X((1, 7, 9, 5))], variants=OP_VARIANTS + ("fp16w",))
def _(r, q):
    w, b = q.w(W(r, 3, 2, 5, 4)), C(W(r, 4))
    return lambda x: tf.nn.relu(tf.nn.conv2d(x, w, 1, "VALID") + b)


@case("conv_2d_dilated", ["CONV_2D"], [X((1, 11, 13, 5))])
def _(r, q):
    w, b = q.w(W(r, 3, 3, 5, 4)), C(W(r, 4))
    return lambda x: tf.nn.conv2d(x, w, 1, "VALID", dilations=[1, 2, 3, 1]) + b


@case("conv_2d_same_stride2", ["CONV_2D"], [X((1, 9, 12, 5))])
def _(r, q):
    w, b = q.w(W(r, 3, 3, 5, 6)), C(W(r, 6))
    return lambda x: tf.nn.relu6(tf.nn.conv2d(x, w, 2, "SAME") + b)


# SAME padding with a fused activation (issue 17): per-channel int8 weights were requantized
# per tensor, 2 levels off; with conv_2d_same_stride2 (3x3, stride 2, RELU6) these cover the set.
@case("conv_2d_same_relu", ["CONV_2D"], [X((1, 8, 9, 5))])
def _(r, q):
    w, b = q.w(W(r, 3, 3, 5, 6)), C(W(r, 6))
    return lambda x: tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME") + b)


@case("depthwise_conv_2d_same_relu6", ["DEPTHWISE_CONV_2D"], [X((1, 8, 9, 6))])
def _(r, q):
    w, b = q.w(W(r, 3, 3, 6, 1)), C(W(r, 6))
    return lambda x: tf.nn.relu6(tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME") + b)


@case("conv_2d_stride_2x3", ["CONV_2D"], [X((1, 10, 13, 3))])
def _(r, q):
    w, b = q.w(W(r, 2, 3, 3, 5)), C(W(r, 5))
    return lambda x: tf.nn.conv2d(x, w, [1, 2, 3, 1], "SAME") + b


@case("depthwise_conv_2d", ["DEPTHWISE_CONV_2D"], [X((1, 7, 9, 5))])
def _(r, q):
    w, b = q.w(W(r, 3, 2, 5, 1)), C(W(r, 5))
    return lambda x: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID") + b


@case("depthwise_conv_2d_mult2", ["DEPTHWISE_CONV_2D"], [X((1, 8, 11, 3))])
def _(r, q):
    w, b = q.w(W(r, 3, 3, 3, 2)), C(W(r, 6))
    return lambda x: tf.nn.relu6(tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME") + b)


@case("depthwise_conv_2d_dilated", ["DEPTHWISE_CONV_2D"], [X((1, 11, 13, 4))])
def _(r, q):
    w, b = q.w(W(r, 3, 3, 4, 1)), C(W(r, 4))
    return lambda x: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID", dilations=[2, 2]) + b


@case("transpose_conv", ["TRANSPOSE_CONV"], [X((1, 5, 7, 4))])
def _(r, q):
    w, b = q.w(W(r, 3, 3, 6, 4)), C(W(r, 6))
    return lambda x: tf.nn.conv2d_transpose(x, w, [1, 10, 14, 6], 2, "SAME") + b


@case("transpose_conv_valid", ["TRANSPOSE_CONV"], [X((1, 4, 6, 3))])
def _(r, q):
    w = q.w(W(r, 3, 2, 5, 3))
    return lambda x: tf.nn.conv2d_transpose(x, w, [1, 9, 12, 5], [1, 2, 2, 1], "VALID")


@case("fully_connected", ["FULLY_CONNECTED"], [X((2, 11))])
def _(r, q):
    w, b = q.w(W(r, 11, 7)), C(W(r, 7))
    return lambda x: tf.nn.relu(tf.matmul(x, w) + b)


@case("fully_connected_nobias", ["FULLY_CONNECTED"], [X((3, 11))])
def _(r, q):
    w = q.w(W(r, 11, 6))
    return lambda x: tf.matmul(x, w)


@case("fully_connected_keep_dims", ["FULLY_CONNECTED"], [X((1, 3, 11))])
def _(r, q):
    w, b = q.w(W(r, 11, 7)), C(W(r, 7))
    return lambda x: tf.matmul(x, w) + b


@case("average_pool_2d", ["AVERAGE_POOL_2D"], [X((1, 7, 9, 5))])
def _(r, q):
    return lambda x: tf.nn.avg_pool2d(x, [2, 3], [2, 2], "VALID")


@case("average_pool_2d_same", ["AVERAGE_POOL_2D"], [X((1, 7, 9, 5))])
def _(r, q):
    return lambda x: tf.nn.avg_pool2d(x, 3, 2, "SAME")


# even sizes: windows of 4 and 6 valid elements at the edges, whose averages often tie (LiteRT
# rounds them half up in uint8 levels, half away from zero in int8; issue 17)
@case("average_pool_2d_same_even", ["AVERAGE_POOL_2D"], [X((1, 8, 10, 4))])
def _(r, q):
    return lambda x: tf.nn.avg_pool2d(x, 3, 2, "SAME")


@case("max_pool_2d", ["MAX_POOL_2D"], [X((1, 7, 9, 5))])
def _(r, q):
    return lambda x: tf.nn.max_pool2d(x, [3, 2], [2, 1], "SAME")


@case("max_pool_2d_valid", ["MAX_POOL_2D"], [X((1, 8, 11, 3))])
def _(r, q):
    return lambda x: tf.nn.max_pool2d(x, 2, 2, "VALID")


def binary(name, op, shape_y, dist_y="normal", tests=None):
    case(name, tests or [name.upper()], [X((1, 7, 9, 5)), X(shape_y, dist_y, "y")])(
        lambda r, q: op)


binary("add", lambda x, y: x + y, (1, 1, 9, 5))
binary("sub", lambda x, y: x - y, (1, 7, 1, 1))
binary("mul", lambda x, y: x * y, (5,))
binary("div", lambda x, y: x / y, (1, 1, 1, 5), ("uniform", 0.5, 2.0))
binary("maximum", lambda x, y: tf.maximum(x, y), (1, 7, 9, 5))
binary("minimum", lambda x, y: tf.minimum(x, y), (1, 7, 9, 1))


# float only: the converter refuses their quantized forms (Arm NN has no exact lowering of them)
case("squared_difference", ["SQUARED_DIFFERENCE"], [X((1, 7, 9, 5)), X((1, 1, 9, 5), "normal", "y")],
     variants=("float32",))(lambda r, q: lambda x, y: tf.math.squared_difference(x, y))
case("floor_div", ["FLOOR_DIV"], [X((1, 7, 9, 5), ("normal", 4.0)), X((1, 7, 1, 5), ("uniform", 0.5, 2.0), "y")],
     variants=("float32",))(lambda r, q: lambda x, y: tf.math.floordiv(x, y))


@case("add_const", ["ADD"], [X((1, 7, 9, 5))], note="second operand is a constant")
def _(r, q):
    c = q.w(W(r, 9, 5))
    return lambda x: x + c


@case("mul_relu", ["MUL"], [X((1, 7, 9, 5)), X((1, 7, 9, 5), name="y")],
      note="RELU fused into MUL")
def _(r, q):
    return lambda x, y: tf.nn.relu(x * y)


@case("add_n", ["ADD_N"], [X((1, 7, 9, 5)), X((1, 7, 9, 5), name="y"), X((1, 7, 9, 5), name="z")])
def _(r, q):
    return lambda x, y, z: tf.add_n([x, y, z])


CMP = ("discrete", [-1.0, -0.5, 0.0, 0.5, 1.0])
for _n, _f, _sy in [("equal", "equal", (1, 7, 9, 5)), ("greater", "greater", (1, 1, 9, 5)),
                    ("less", "less", (1, 7, 9, 5))]:
    case(_n, [_n.upper()], [X((1, 7, 9, 5), CMP), X(_sy, CMP, "y")])(
        (lambda f: lambda r, q: getattr(tf.math, f))(_f))

POS = ("uniform", 0.25, 4.0)
for _n, _f, _d in [
        ("floor", lambda x: tf.floor(x), ("normal", 3.0)),
        ("abs", lambda x: tf.abs(x), "normal"),
        ("sqrt", lambda x: tf.sqrt(x), POS),
        ("rsqrt", lambda x: tf.math.rsqrt(x), POS),
        ("square", lambda x: tf.square(x), "normal"),
        ("neg", lambda x: tf.negative(x), "normal"),
        ("exp", lambda x: tf.exp(x), "normal"),
        ("relu", lambda x: tf.nn.relu(x), "normal"),
        ("relu6", lambda x: tf.nn.relu6(x), ("normal", 4.0)),
        ("relu_n1_to_1", lambda x: tf.clip_by_value(x, -1.0, 1.0), ("normal", 2.0)),
        ("logistic", lambda x: tf.sigmoid(x), ("normal", 3.0)),
        ("tanh", lambda x: tf.tanh(x), ("normal", 2.0)),
        ("leaky_relu", lambda x: tf.nn.leaky_relu(x, 0.2), "normal"),
        ("hard_swish", lambda x: x * tf.nn.relu6(x + 3.0) / 6.0, ("normal", 4.0)),
        ("elu", lambda x: tf.nn.elu(x), "normal")]:
    case(_n, [_n.upper()], [X((1, 7, 9, 5), _d)])((lambda f: lambda r, q: f)(_f))


@case("prelu", ["PRELU"], [X((1, 7, 9, 5))], note="alpha shared over H and W")
def _(r, q):
    # The converter fuses relu(x) - alpha*relu(-x) (Keras' PReLU) into PRELU.
    neg_alpha = q.w(-np.abs(W(r, 1, 1, 5)))
    return lambda x: tf.nn.relu(x) + neg_alpha * tf.nn.relu(-x)


@case("softmax", ["SOFTMAX"], [X((3, 11), ("normal", 2.0))])
def _(r, q):
    return lambda x: tf.nn.softmax(x)


@case("softmax_4d", ["SOFTMAX"], [X((1, 7, 9, 5), ("normal", 2.0))])
def _(r, q):
    return lambda x: tf.nn.softmax(x)


@case("reshape", ["RESHAPE"], [X((1, 7, 9, 5))])
def _(r, q):
    return lambda x: tf.reshape(x, [1, 63, 5])


@case("transpose", ["TRANSPOSE"], [X((1, 7, 9, 5))])
def _(r, q):
    return lambda x: tf.transpose(x, [0, 3, 1, 2])


@case("transpose_3d", ["TRANSPOSE"], [X((7, 9, 5))])
def _(r, q):
    return lambda x: tf.transpose(x, [2, 0, 1])


@case("concatenation", ["CONCATENATION"], [X((1, 7, 9, 5)), X((1, 7, 4, 5), name="y")])
def _(r, q):
    return lambda x, y: tf.concat([x, y], axis=2)


@case("concatenation_channels", ["CONCATENATION"],
      [X((1, 7, 9, 5)), X((1, 7, 9, 2), ("normal", 2.0), "y"), X((1, 7, 9, 3), name="z")])
def _(r, q):
    return lambda x, y, z: tf.concat([x, y, z], axis=-1)


@case("pack", ["PACK"], [X((7, 9)), X((7, 9), name="y")])
def _(r, q):
    return lambda x, y: tf.stack([x, y], axis=1)


@case("unpack", ["UNPACK"], [X((3, 7, 5))])
def _(r, q):
    return lambda x: tuple(tf.unstack(x, axis=0))


@case("split", ["SPLIT"], [X((1, 7, 9, 6))])
def _(r, q):
    return lambda x: tuple(tf.split(x, 3, axis=3))


@case("split_v", ["SPLIT_V"], [X((1, 7, 9, 5))])
def _(r, q):
    return lambda x: tuple(tf.split(x, [2, 3, 4], axis=2))


@case("strided_slice", ["STRIDED_SLICE"], [X((1, 7, 9, 5))])
def _(r, q):
    return lambda x: tf.strided_slice(x, [0, 1, 0, 1], [1, 7, 9, 5], [1, 2, 3, 1])


@case("strided_slice_masks", ["STRIDED_SLICE"], [X((1, 7, 9, 5))],
      note="begin/end masks, shrink_axis on dim 0, negative stride on W")
def _(r, q):
    return lambda x: x[0, 1:-1, ::-2, 1:]


@case("slice", ["SLICE"], [X((1, 7, 9, 5))])
def _(r, q):
    return lambda x: tf.slice(x, [0, 1, 2, 0], [1, 5, 6, 3])


@case("pad", ["PAD"], [X((1, 7, 9, 5))])
def _(r, q):
    return lambda x: tf.pad(x, [[0, 0], [1, 2], [2, 1], [0, 0]])


@case("padv2", ["PADV2"], [X((1, 7, 9, 5))], note="pad value 0.5")
def _(r, q):
    return lambda x: tf.pad(x, [[0, 0], [1, 2], [2, 1], [0, 1]], constant_values=0.5)


@case("mirror_pad_reflect", ["MIRROR_PAD"], [X((1, 7, 9, 5))])
def _(r, q):
    return lambda x: tf.pad(x, [[0, 0], [1, 2], [2, 1], [0, 0]], mode="REFLECT")


@case("mirror_pad_symmetric", ["MIRROR_PAD"], [X((1, 7, 9, 5))])
def _(r, q):
    return lambda x: tf.pad(x, [[0, 0], [2, 1], [1, 3], [0, 0]], mode="SYMMETRIC")


@case("tile", ["TILE"], [X((1, 7, 9, 5))])
def _(r, q):
    return lambda x: tf.tile(x, [1, 2, 1, 3])


@case("gather", ["GATHER"], [X((7, 9, 5))], note="axis 0, constant indices")
def _(r, q):
    return lambda x: tf.gather(x, [3, 0, 6, 6], axis=0)


@case("gather_axis2", ["GATHER"], [X((1, 7, 9, 5))], note="axis 2, 2-D constant indices")
def _(r, q):
    return lambda x: tf.gather(x, [[4, 0, 8], [2, 2, 7]], axis=2)


@case("gather_scattered", ["GATHER"], [X((1, 3, 40, 4))],
      note="axis 2, 80 scattered constant indices: more runs than StridedSlices take (a 0/1 selection "
           "matrix; a Gather layer from --target 20.08)")
def _(r, q):
    idx = r.integers(0, 40, 80).tolist()  # (about 40 runs: any two indices make one)
    return lambda x: tf.gather(x, idx, axis=2)


@case("broadcast_to", ["BROADCAST_TO"], [X((1, 1, 9, 5))])
def _(r, q):
    return lambda x: tf.broadcast_to(x, [2, 7, 9, 5])


@case("depth_to_space", ["DEPTH_TO_SPACE"], [X((1, 3, 4, 12))])
def _(r, q):
    return lambda x: tf.nn.depth_to_space(x, 2)


@case("space_to_depth", ["SPACE_TO_DEPTH"], [X((1, 6, 8, 3))])
def _(r, q):
    return lambda x: tf.nn.space_to_depth(x, 2)


@case("space_to_batch_nd", ["SPACE_TO_BATCH_ND"], [X((1, 6, 7, 5))])
def _(r, q):
    return lambda x: tf.space_to_batch_nd(x, [2, 3], [[1, 1], [1, 1]])


@case("batch_to_space_nd", ["BATCH_TO_SPACE_ND"], [X((6, 3, 4, 5))])
def _(r, q):
    return lambda x: tf.compat.v1.batch_to_space_nd(x, [2, 3], [[0, 1], [1, 0]])


for _n, _op, _f, _d in [
        ("mean", "MEAN", lambda x: tf.reduce_mean(x, [1, 2], keepdims=True), "normal"),
        ("mean_channels", "MEAN", lambda x: tf.reduce_mean(x, 3), "normal"),
        ("sum", "SUM", lambda x: tf.reduce_sum(x, 1), "normal"),
        ("reduce_max", "REDUCE_MAX", lambda x: tf.reduce_max(x, 2), "normal"),
        ("reduce_min", "REDUCE_MIN", lambda x: tf.reduce_min(x, [1, 3], keepdims=True), "normal"),
        ("reduce_prod", "REDUCE_PROD", lambda x: tf.reduce_prod(x, 2), ("uniform", 0.6, 1.5))]:
    case(_n, [_op], [X((1, 7, 9, 5), _d)])((lambda f: lambda r, q: f)(_f))


@case("l2_normalization", ["L2_NORMALIZATION"], [X((1, 7, 9, 5))])
def _(r, q):
    return lambda x: tf.math.l2_normalize(x, -1)


@case("local_response_normalization", ["LOCAL_RESPONSE_NORMALIZATION"], [X((1, 7, 9, 11))],
      note="depth_radius 2, bias 1.0, alpha 0.5, beta 0.75")
def _(r, q):
    return lambda x: tf.nn.local_response_normalization(x, 2, 1.0, 0.5, 0.75)


for _kind, _op in [("bilinear", "ResizeBilinear"), ("nearest_neighbor", "ResizeNearestNeighbor")]:
    for _suffix, _ac, _hp in [("", False, False), ("_align_corners", True, False),
                              ("_half_pixel", False, True)]:
        case(f"resize_{_kind}{_suffix}", [f"RESIZE_{_kind.upper()}"], [X((1, 5, 7, 3))],
             note=f"align_corners={_ac}, half_pixel_centers={_hp}, 5x7 -> 9x12")(
            (lambda op, ac, hp: lambda r, q: lambda x: getattr(tf.raw_ops, op)(
                images=x, size=[9, 12], align_corners=ac, half_pixel_centers=hp))(_op, _ac, _hp))


# --- operators TF 2.21's converter never emits: convert the closest model, then
# rewrite the operator in the flatbuffer and check the result against a reference.

def _op_index(m, code):
    return next(i for i, o in enumerate(m.operatorCodes) if max(o.builtinCode, o.deprecatedBuiltinCode) == code)


def _set_code(m, old, new):
    oc = m.operatorCodes[_op_index(m, old)]
    oc.builtinCode, oc.deprecatedBuiltinCode = new, min(new, 127)  # 127: PLACEHOLDER_FOR_GREATER_OP_CODES
    if new != old:
        oc.version = 1
    return [op for op in m.subgraphs[0].operators if m.operatorCodes[op.opcodeIndex] is oc]


def patch_softmax_beta(m):
    for op in _set_code(m, BuiltinOperator.SOFTMAX, BuiltinOperator.SOFTMAX):
        op.builtinOptions.beta = 0.5


def patch_l2_pool(m):
    _set_code(m, BuiltinOperator.AVERAGE_POOL_2D, BuiltinOperator.L2_POOL_2D)


def patch_relu_0_to_1(m):
    _set_code(m, BuiltinOperator.RELU, BuiltinOperator.RELU_0_TO_1)


def _reshape_to(m, new, axis):
    from tensorflow.lite.python import schema_py_generated as fb
    for op in _set_code(m, BuiltinOperator.RESHAPE, new):
        if new == BuiltinOperator.SQUEEZE:
            op.inputs = op.inputs[:1]
            op.builtinOptionsType, op.builtinOptions = fb.BuiltinOptions.SqueezeOptions, fb.SqueezeOptionsT()
            op.builtinOptions.squeezeDims = [axis]
        else:  # EXPAND_DIMS: the reshape's shape tensor becomes the axis tensor
            t = m.subgraphs[0].tensors[op.inputs[1]]
            t.shape, t.shapeSignature = [1], None
            m.buffers[t.buffer].data = np.array([axis], np.int32).view(np.uint8)
            op.builtinOptionsType, op.builtinOptions = fb.BuiltinOptions.ExpandDimsOptions, fb.ExpandDimsOptionsT()


def deq(a, q):
    return a.astype(np.float64) if q is None else (a.astype(np.float64) - q[1]) * q[0]


def check_against(fn_ref, steps=1.0):
    """Patched model output (dequantized) must match fn_ref(float inputs) within `steps` quanta."""
    def check(ctx):
        xs = [deq(a, q) for a, q in zip(ctx.inputs, ctx.in_q)]
        for got, q, ref in zip(ctx.outputs, ctx.out_q, fn_ref(ctx, *xs)):
            tol = 1e-5 if q is None else steps * q[0]
            np.testing.assert_allclose(deq(got, q), ref, rtol=1e-5, atol=tol)
    return check


def _softmax(x, beta):
    e = np.exp(beta * (x - x.max(-1, keepdims=True)))
    return e / e.sum(-1, keepdims=True)


def same_as_unpatched(ctx):
    for got, want in zip(ctx.outputs, run(ctx.unpatched, ctx.inputs)):
        np.testing.assert_array_equal(got, want)


case("softmax_beta", ["SOFTMAX"], [X((3, 11), ("normal", 2.0))], patch=patch_softmax_beta,
     check=check_against(lambda c, x: [_softmax(x, 0.5)], 2.0),
     note="beta 0.5; the converter always writes beta=1 (softmax(c*x) stays MUL+SOFTMAX), "
          "so beta is set in the flatbuffer after conversion")(lambda r, q: lambda x: tf.nn.softmax(x))
case("l2_pool_2d", ["L2_POOL_2D"], [X((1, 7, 9, 5))], variants=("float32",), patch=patch_l2_pool,
     check=check_against(lambda c, x: [np.sqrt(run(c.unpatched, [(x * x).astype(np.float32)])[0])]),
     note="the converter never emits L2_POOL_2D (sqrt(avg_pool(x^2)) stays three ops): an AVERAGE_POOL_2D "
          "model (2x3 window, stride 2x2, VALID) relabelled; TFLite's L2_POOL_2D kernel is float only")(
    lambda r, q: lambda x: tf.nn.avg_pool2d(x, [2, 3], [2, 2], "VALID"))
case("relu_0_to_1", ["RELU_0_TO_1"], [X((1, 7, 9, 5), ("normal", 2.0))], patch=patch_relu_0_to_1,
     check=check_against(lambda c, x: [np.clip(x, 0, 1)]),
     note="the converter emits clip(x, 0, 1) as MINIMUM+RELU: a RELU model relabelled")(
    lambda r, q: lambda x: tf.nn.relu(x))
case("squeeze", ["SQUEEZE"], [X((1, 7, 1, 5))], patch=lambda m: _reshape_to(m, BuiltinOperator.SQUEEZE, 2),
     check=same_as_unpatched,
     note="squeeze axis 2; the converter lowers static SQUEEZE to RESHAPE, rewritten back")(
    lambda r, q: lambda x: tf.squeeze(x, 2))
case("expand_dims", ["EXPAND_DIMS"], [X((1, 7, 9, 5))],
     patch=lambda m: _reshape_to(m, BuiltinOperator.EXPAND_DIMS, 2), check=same_as_unpatched,
     note="axis 2; the converter lowers static EXPAND_DIMS to RESHAPE, rewritten back")(
    lambda r, q: lambda x: tf.expand_dims(x, 2))


def patch_zeros_like(m):
    from tensorflow.lite.python import schema_py_generated as fb
    for op in _set_code(m, BuiltinOperator.ABS, BuiltinOperator.ZEROS_LIKE):
        op.builtinOptionsType, op.builtinOptions = fb.BuiltinOptions.ZerosLikeOptions, fb.ZerosLikeOptionsT()


case("zeros_like", ["ZEROS_LIKE"], [X((1, 7, 9, 5)), X((1, 7, 9, 5), "normal", "y")], variants=("float32",),
     patch=patch_zeros_like, check=check_against(lambda c, x, y: [y]),
     note="zeros_like(x) + y: the converter folds ZEROS_LIKE of a static shape away, so an ABS is relabelled")(
    lambda r, q: lambda x, y: tf.math.abs(x) + y)


@case("conv_fc", ["CONV_2D", "MEAN", "FULLY_CONNECTED"], [X((1, 12, 10, 8))],
      variants=("float32", "int8", "uint8io", "int8floatio", "dynamic", "fp16w", "uint8"),
      note="conv 3x3 8->32 + relu, spatial mean, FC 32->40; weights >= 1024 elements so that "
           "dynamic-range quantization quantizes them")
def _(r, q):
    w, b = q.w(W(r, 3, 3, 8, 32, s=0.2)), C(W(r, 32))
    fw, fb_ = q.w(W(r, 32, 40, s=0.2)), C(W(r, 40))
    return lambda x: tf.matmul(q.a("mean", tf.reduce_mean(
        q.a("conv", tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME") + b)), [1, 2])), fw) + fb_


@case("mobilenet_v1_mini", [], [X((1, 33, 29, 3))], kind="model",
      variants=OP_VARIANTS + ("int8floatio",),  # a whole network with QUANTIZE/DEQUANTIZE at its edges
      note="MobileNet v1 layer pattern built from tf.nn ops (conv-relu6, depthwise/pointwise pairs, "
           "mean, FC, softmax) with activation ranges, so that the legacy all-uint8 form exists too")
def _(r, q):
    spec = [("conv", 3, 8, 2), ("dw", 3, 8, 1), ("conv", 1, 16, 1), ("dw", 3, 16, 2),
            ("conv", 1, 24, 1), ("dw", 3, 24, 2), ("conv", 1, 32, 1)]
    params, c = [], 3
    for kind, k, n, st in spec:
        shape = (k, k, c, n) if kind == "conv" else (k, k, c, 1)
        params.append((kind, q.w(W(r, *shape, s=0.4)), C(W(r, n, s=0.1)), st))
        c = n
    fw, fb_ = q.w(W(r, c, 10, s=0.3)), C(W(r, 10, s=0.1))

    def fn(x):
        for i, (kind, w, b, st) in enumerate(params):
            f = tf.nn.conv2d if kind == "conv" else tf.nn.depthwise_conv2d
            x = q.a(f"l{i}", tf.nn.relu6(f(x, w, [1, st, st, 1], "SAME") + b))
        x = q.a("mean", tf.reduce_mean(x, [1, 2]))
        return tf.nn.softmax(q.a("logits", tf.matmul(x, fw) + fb_))
    return fn


# Legacy uint8 path: ops whose output stays within the input's range keep the input's
# quantization (uint8 kernels such as PAD, GATHER and AVERAGE_POOL_2D require it;
# elsewhere it saves a requantizing QUANTIZE), and some uint8 kernels require a fixed
# output quantization.
# (concatenation_channels keeps per-input ranges: CONCATENATION rescales uint8 inputs itself.)
SAME_RANGE = {"reshape", "transpose", "transpose_3d", "concatenation", "pack",
              "unpack", "split", "split_v", "strided_slice", "strided_slice_masks", "slice", "pad", "padv2",
              "mirror_pad_reflect", "mirror_pad_symmetric", "tile", "gather", "gather_axis2", "gather_scattered",
              "broadcast_to",
              "depth_to_space", "space_to_depth", "space_to_batch_nd", "batch_to_space_nd", "squeeze",
              "expand_dims", "reduce_max", "reduce_min", "max_pool_2d", "max_pool_2d_valid",
              "resize_nearest_neighbor", "resize_nearest_neighbor_align_corners",
              "resize_nearest_neighbor_half_pixel", "resize_bilinear", "resize_bilinear_align_corners",
              "resize_bilinear_half_pixel", "average_pool_2d", "average_pool_2d_same", "maximum", "minimum"}
OUT_RANGE = {"softmax": (0.0, 255 / 256), "softmax_4d": (0.0, 255 / 256), "softmax_beta": (0.0, 255 / 256),
             "logistic": (0.0, 255 / 256), "tanh": (-1.0, 127 / 128), "mobilenet_v1_mini": (0.0, 255 / 256),
             "l2_normalization": (-1.0, 127 / 128)}
for _c in CASES:
    _c.extra.update({"same_range": True} if _c.name in SAME_RANGE else {})
    _c.extra.update({"out_range": OUT_RANGE[_c.name]} if _c.name in OUT_RANGE else {})


# ----------------------------------------------------------------------------- comparisons
# GREATER_EQUAL, LESS_EQUAL and NOT_EQUAL (lowering/compare.py). Both operands are drawn from
# the same few values, so that equal pairs are frequent (and the int8 variants share one
# quantization, which the Maximum/Minimum recipes need).
for _n, _sy in [("greater_equal", (1, 7, 9, 5)), ("less_equal", (1, 1, 9, 5)), ("not_equal", (1, 7, 1, 5))]:
    case(_n, [_n.upper()], [X((1, 7, 9, 5), CMP), X(_sy, CMP, "y")])(
        (lambda f: lambda r, q: getattr(tf.math, f))(_n))


# ----------------------------------------------------------------------------- the 23.08 format
# LOGICAL_AND/OR/NOT on the Boolean results of comparisons, REVERSE_V2 and CEIL: layers of the
# 23.08 format (LogicalBinary, ElementwiseUnary, ReverseV2), converted with --target 23.08.
# (Comparisons of inputs only: a comparison with a constant is another lowering's matter.)
for _n, _f in [("logical_and", lambda x, y, z: tf.logical_and(tf.greater(x, y), tf.less(x, z))),
               ("logical_or", lambda x, y, z: tf.logical_or(tf.greater(x, y), tf.less(x, z))),
               ("logical_not", lambda x, y, z: tf.logical_not(tf.logical_and(tf.greater(x, y), tf.less(x, z))))]:
    case(_n, [_n.upper()], [X((1, 7, 9, 5), CMP), X((1, 1, 9, 5), CMP, "y"), X((1, 7, 1, 5), CMP, "z")],
         note="needs --target 23.08")((lambda f: lambda r, q: f)(_f))
case("reverse_v2", ["REVERSE_V2"], [X((1, 7, 9, 5))], note="needs --target 23.08")(
    lambda r, q: lambda x: tf.reverse(x, axis=[1, 2]))  # (LiteRT: contiguous axes only)
case("ceil", ["CEIL"], [X((1, 7, 9, 5), ("normal", 3.0))], variants=("float32",))(
    lambda r, q: lambda x: tf.math.ceil(x))
# ROUND: half to even on every target (lowering/round.py); ties and their neighbours
case("round", ["ROUND"], [X((1, 7, 9, 5), ("discrete", [-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 7.5, -2.49, 2.51,
                                                         0.3, -0.7, 1000.5]))], variants=("float32",))(
    lambda r, q: lambda x: tf.math.round(x))


# ----------------------------------------------------------------------------- richer formats
# Layers the 19.02 format lacks (tests/test_attention_models.py runs them on Arm NN): ARG_MIN is
# an ArgMinMax (--target 20.08), CONV_3D a Convolution3d (--target 23.08).
case("arg_min", ["ARG_MIN"], [X((1, 7, 9, 5))], variants=("float32",), note="needs --target 20.08")(
    lambda r, q: lambda x: tf.math.argmin(x, axis=2, output_type=tf.int32))


@case("conv_3d", ["CONV_3D"], [X((1, 5, 6, 7, 3))], variants=("float32",), note="needs --target 23.08")
def _(r, q):
    w, b = q.w(W(r, 2, 3, 3, 3, 4)), C(W(r, 4))
    return lambda x: tf.nn.conv3d(x, w, [1, 1, 2, 1, 1], "VALID") + b


# ----------------------------------------------------------------------------- sparse weights
# Pruned weights (SPARSE_ZERO of them exactly 0) converted with
# tf.lite.Optimize.EXPERIMENTAL_SPARSITY: the converter stores them sparse (TACO format,
# frontends/tflite/sparse.py). Variants:
#   sparse      float32; CONV_2D weights go through DENSIFY, FULLY_CONNECTED (v8) reads
#               1x4-block sparse weights itself (block_map)
#   sparsefp16  + float16 weights: sparse float16 -> DENSIFY -> DEQUANTIZE
#   sparseint8  full-integer int8: FULLY_CONNECTED (v8) reads 1x16-block sparse int8 weights
SPARSE_VARIANTS = ("sparse", "sparsefp16", "sparseint8")
SPARSE_ZERO = 0.8


def pruned(r, *shape, block=(1, 1), s=0.5):
    """Weights with SPARSE_ZERO of their (block[0] x block[1] blocks over the last two axes) zero."""
    w = W(r, *shape, s=s)
    grid = shape[:-2] + (shape[-2] // block[0], shape[-1] // block[1])
    keep = np.repeat(np.repeat(r.random(grid) >= SPARSE_ZERO, block[0], -2), block[1], -1)
    return (w * keep).astype(np.float32)


@case("conv_2d_pruned", ["CONV_2D"], [X((1, 6, 7, 8))], variants=SPARSE_VARIANTS[:2])
def _(r, q):
    w, b = q.w(pruned(r, 3, 3, 8, 16)), C(W(r, 16))
    return lambda x: tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME") + b)


@case("fully_connected_pruned", ["FULLY_CONNECTED"], [X((2, 64))], variants=SPARSE_VARIANTS)
def _(r, q):
    # 16 consecutive inputs of one output zero together: 1x16 blocks of TFLite's [out, in] weights
    w, b = q.w(pruned(r, 64, 32, block=(16, 1))), C(W(r, 32))
    return lambda x: tf.nn.relu(tf.matmul(x, w) + b)


@case("pruned_convnet", [], [X((1, 12, 10, 3))], variants=SPARSE_VARIANTS[:2], kind="model",
      note="conv 3x3 -> conv 3x3 stride 2 -> conv 1x1 -> mean -> fully connected, all weights 80% pruned")
def _(r, q):
    w1, w2, w3 = (q.w(pruned(r, *s, s=0.7)) for s in ((3, 3, 3, 16), (3, 3, 16, 16), (1, 1, 16, 32)))
    wf = q.w(pruned(r, 32, 16, s=0.7))  # no blocks: DENSIFY (float16: DENSIFY -> DEQUANTIZE) here too
    b1, b2, b3, bf = (C(W(r, n, s=0.3)) for n in (16, 16, 32, 16))

    def fn(x):
        y = tf.nn.relu(tf.nn.conv2d(x, w1, 1, "SAME") + b1)
        y = tf.nn.relu(tf.nn.conv2d(y, w2, 2, "SAME") + b2)
        y = tf.nn.relu(tf.nn.conv2d(y, w3, 1, "VALID") + b3)
        return tf.matmul(tf.reduce_mean(y, [1, 2]), wf) + bf
    return fn


def has_sparse_tensor(buf):
    sg = tflite.Model.GetRootAsModel(buf, 0).Subgraphs(0)
    return any(sg.Tensors(i).Sparsity() is not None for i in range(sg.TensorsLength()))


# ----------------------------------------------------------------------------- Keras nets

CALIBRATION_SAMPLES = 16
# Each logit's spread across inputs: softmax outputs move by tens of int8 steps, while
# int8 rounding (which deep networks carry on to the output) stays a few steps.
LOGIT_STD = 0.5
# BatchNorm beta around 1 keeps most units in the linear part of ReLU/ReLU6/hard-swish:
# with beta 0, every ReLU after a re-centering BatchNorm amplifies small perturbations
# (int8 rounding) about 1.2x, so two int8 runtimes end up tens of steps apart.
BETA_MEAN = 1.0


def _randomize_weights(model, r, calib):
    """Seeded weights that keep activations alive through the network.

    Random BatchNorm statistics unrelated to the data kill whole ReLU6 / hard-swish
    chains, and the network's output then no longer depends on its input. So:
    He-normal kernels; every BatchNormalization, in topological order, gets the mean and
    variance its input actually has on `calib` (seeded random inputs of the model's own
    distribution) with some noise (folding them is still tested), gamma near 1 and beta
    near BETA_MEAN; the last kernel layer (the logits) is scaled so that each logit has
    a small random mean and LOGIT_STD spread across the calibration inputs."""
    import keras
    kernels = [l for l in model.layers if isinstance(l, (keras.layers.Conv2D, keras.layers.Dense))]
    for layer in kernels:  # Conv2D includes DepthwiseConv2D: kernel (kh, kw, c, mult)
        k, *b = layer.get_weights()
        fan_in = np.prod(k.shape[:-1]) if not isinstance(layer, keras.layers.DepthwiseConv2D) \
            else np.prod(k.shape[:2])
        layer.set_weights([(r.standard_normal(k.shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)]
                          + [r.normal(0, 0.1, x.shape).astype(np.float32) for x in b])
    bns = [l for l in model.layers if isinstance(l, keras.layers.BatchNormalization)]
    head = kernels[-1]
    model_probe = keras.Model(model.inputs[0], [l.input for l in bns] + [head.input])
    # (a model of one output returns a tensor, not a list of one: a network without BatchNorm)
    probe = lambda x, **kw: (lambda o: o if isinstance(o, (list, tuple)) else [o])(model_probe(x, **kw))
    for i, layer in enumerate(bns):
        # the statistics of this BN's input depend on every BN before it: run again
        x = probe(calib, training=False)[i].numpy().astype(np.float64)
        x = x.reshape(-1, x.shape[-1])
        mean, std = x.mean(0), x.std(0) + 1e-3
        vals = {"gamma": r.uniform(0.8, 1.2, mean.shape), "beta": r.normal(BETA_MEAN, 0.2, mean.shape),
                "moving_mean": mean + r.normal(0, 0.1, mean.shape) * std,
                "moving_variance": std ** 2 * r.uniform(0.8, 1.25, mean.shape)}
        layer.set_weights([vals[v.path.rsplit("/", 1)[-1]].astype(np.float32) for v in layer.weights])
    f = probe(calib, training=False)[-1].numpy().astype(np.float64)
    k, b = head.get_weights()
    z = f.reshape(len(f), -1) @ k.reshape(-1, k.shape[-1]) + b  # head input is [N, C] or [N, 1, 1, C]
    gain = LOGIT_STD / (z.std(0) + 1e-12)
    head.set_weights([(k * gain).astype(np.float32),
                      ((b - z.mean(0)) * gain + r.normal(0, 0.5, b.shape)).astype(np.float32)])


def resnet_mini(shape):
    """ResNet50's structure (v1 bottleneck blocks, 7x7 stem, max pool) with 1/8 widths, 1-2 blocks a stage."""
    from keras import layers, Model, Input
    bn = lambda: layers.BatchNormalization(epsilon=1.001e-5)

    def block(x, f, stride, conv_shortcut):
        s = bn()(layers.Conv2D(4 * f, 1, stride)(x)) if conv_shortcut else x
        x = layers.Activation("relu")(bn()(layers.Conv2D(f, 1, stride)(x)))
        x = layers.Activation("relu")(bn()(layers.Conv2D(f, 3, padding="same")(x)))
        x = bn()(layers.Conv2D(4 * f, 1)(x))
        return layers.Activation("relu")(layers.Add()([s, x]))

    inp = Input(shape)
    x = layers.Conv2D(8, 7, 2)(layers.ZeroPadding2D(3)(inp))
    x = layers.Activation("relu")(bn()(x))
    x = layers.MaxPooling2D(3, 2)(layers.ZeroPadding2D(1)(x))
    for i, (f, n) in enumerate([(8, 1), (16, 2), (32, 2), (64, 1)]):
        x = block(x, f, 1 if i == 0 else 2, True)
        for _ in range(n - 1):
            x = block(x, f, 1, False)
    x = layers.GlobalAveragePooling2D()(x)
    return Model(inp, layers.Dense(10, activation="softmax")(x), name="resnet_mini")


def densenet_mini(shape):
    """DenseNet121's structure (pre-activation BN-ReLU-Conv, dense blocks, transitions), growth 8."""
    from keras import layers, Model, Input
    bn = lambda: layers.BatchNormalization(epsilon=1.001e-5)
    relu = lambda t: layers.Activation("relu")(bn()(t))
    inp = Input(shape)
    x = layers.Conv2D(16, 7, 2, use_bias=False)(layers.ZeroPadding2D(3)(inp))
    x = layers.MaxPooling2D(3, 2)(layers.ZeroPadding2D(1)(relu(x)))
    for i, n in enumerate([2, 3, 4, 2]):
        for _ in range(n):
            y = layers.Conv2D(32, 1, use_bias=False)(relu(x))
            y = layers.Conv2D(8, 3, padding="same", use_bias=False)(relu(y))
            x = layers.Concatenate()([x, y])
        if i < 3:
            x = layers.Conv2D(x.shape[-1] // 2, 1, use_bias=False)(relu(x))
            x = layers.AveragePooling2D(2, 2)(x)
    x = layers.GlobalAveragePooling2D()(relu(x))
    return Model(inp, layers.Dense(10, activation="softmax")(x), name="densenet_mini")


def efficientnet_mini(shape):
    """Keras' EfficientNet builder at B0's resolution rules with width 0.5, depth 0.5."""
    from keras.src.applications.efficientnet import EfficientNet
    return EfficientNet(0.5, 0.5, shape[0], 0.2, name="efficientnet_mini", weights=None,
                        input_shape=shape, classes=10)


LONG_SCOPE = ("tensorflow_style_transformer_encoder_stack_with_semicolon_joined_fused_op_names_as_the_"
              "tensorflow_lite_converter_writes_them_for_keras_functional_models")


def long_names_mlp(shape):
    """Dense 512->640 (float32 weights of 1.25 MiB), 16 Dense 16 + ReLU blocks and a Dense 10
    head, with TensorFlow-style names: the converter joins the fused ops' names with ';' into
    tensor names of about 750 characters (Keras ResNet50 / MobileNet: 290-375 on average,
    with more tables per layer). The path real models take through the writer: the large
    constant is streamed from the model and the writer's old first buffer estimate is too
    small for such names, so the buffer grows after the constant is placed (issue 12)."""
    from keras import layers, Model, Input
    inp = Input(shape)
    x = layers.Dense(640, activation="relu", name=f"{LONG_SCOPE}_input_projection_dense_layer_float32_weights_512x640")(inp)
    for i in range(16):
        x = layers.Dense(16, activation="relu",
                         name=f"{LONG_SCOPE}_refinement_block_{i:02d}_feed_forward_dense_projection_with_relu_activation")(x)
    return Model(inp, layers.Dense(10, name=f"{LONG_SCOPE}_classifier_head_dense_logits")(x), name="long_names_mlp")


def keras_app(fn, **kw):
    def make(shape):
        import keras
        return getattr(keras.applications, fn)(input_shape=shape, weights=None, classes=10, **kw)
    return make


for _n, _make, _shape, _note in [
        ("mobilenet_v2_035", keras_app("MobileNetV2", alpha=0.35), (96, 80, 3),
         "keras.applications.MobileNetV2(alpha=0.35), 10 classes"),
        ("mobilenet_v3_small_075", keras_app("MobileNetV3Small", alpha=0.75, include_preprocessing=False),
         (96, 80, 3), "keras.applications.MobileNetV3Small(alpha=0.75), 10 classes, no preprocessing"),
        ("mobilenet_v1_025", keras_app("MobileNet", alpha=0.25), (64, 80, 3),
         "keras.applications.MobileNet(alpha=0.25), 10 classes"),
        ("efficientnet_mini", efficientnet_mini, (64, 72, 3),
         "Keras EfficientNet builder, width 0.5, depth 0.5 (B0 is width/depth 1.0), 10 classes; "
         "its Rescaling+Normalization layers are folded into the stem conv by the converter"),
        ("resnet_mini", resnet_mini, (64, 56, 3), resnet_mini.__doc__),
        ("densenet_mini", densenet_mini, (64, 56, 3), densenet_mini.__doc__)]:
    CASES.append(Case(_n, [], [X((1,) + _shape, name="input")], None, ("float32", "int8"), "model",
                      note=_note, keras=(_make, _shape)))
CASES.append(Case("long_names_mlp", [], [X((1, 512), name="input")], None, ("float32",), "model",
                  note=long_names_mlp.__doc__.split("\n\n")[0], keras=(long_names_mlp, (512,))))


# ----------------------------------------------------------------------------- recurrent nets

def keras_lstm(time_major=False, **kw):
    """tf_keras (Keras 2) LSTM returning the sequence: its converter fuses the layer into
    UNIDIRECTIONAL_SEQUENCE_LSTM (Keras 3's LSTM becomes a WHILE loop). Needs
    `pip install tf_keras`; the weights are Keras' seeded initializers, biases randomized."""
    def make(shape):
        import tf_keras
        inp = tf_keras.Input(shape[1:], batch_size=shape[0], name="x")
        model = tf_keras.Model(inp, tf_keras.layers.LSTM(16, return_sequences=True, time_major=time_major,
                                                         **kw)(inp))
        k, rk, b = model.layers[-1].get_weights()
        model.layers[-1].set_weights([k, rk, np.random.default_rng(7).normal(0, 0.5, b.shape).astype(np.float32)])
        return model
    return make


for _n, _make, _shape, _note in [
        ("lstm_keras", keras_lstm(), (2, 5, 8), "tf_keras.layers.LSTM(16, return_sequences=True), batch 2"),
        ("lstm_keras_time_major", keras_lstm(True), (5, 1, 8),
         "tf_keras.layers.LSTM(16, time_major=True, return_sequences=True)")]:
    CASES.append(Case(_n, ["UNIDIRECTIONAL_SEQUENCE_LSTM"], [X(_shape)], None, ("float32",), "model",
                      note=_note, keras=(_make, _shape), extra={"tf_keras": True}))


def convert_tf_keras(c):
    """A tf_keras model through from_keras_model, which keeps the fusable LSTM function."""
    import tf_keras
    tf_keras.utils.set_random_seed(seed_of(c.name) % 2**31)
    make, shape = c.keras
    model = KERAS_MODELS[c.name] = make(shape)
    buf = tf.lite.TFLiteConverter.from_keras_model(model).convert()
    ops = [o[0] for o in describe(buf)[0]]
    if c.tests[0] not in ops:  # e.g. a non-default activation: Keras keeps a WHILE loop
        raise SystemExit(f"{c.name}: the converter made {ops}, not {c.tests}")
    return buf


# ----------------------------------------------------------------------------- converting

KERAS_MODELS = {}  # name -> the Keras model just converted, for the float check


def rep_data(c):
    rng = np.random.default_rng(seed_of(c.name, "representative"))
    return [[sample(rng, s, d) for _, s, d in c.inputs] for _ in range(REP_SAMPLES)]


def convert_tf2(c, variant, rep):
    if c.extra.get("tf_keras"):
        return convert_tf_keras(c)
    specs = [tf.TensorSpec(s, tf.float32, name=n) for n, s, _ in c.inputs]
    if c.keras:
        import keras
        keras.utils.set_random_seed(seed_of(c.name) % 2**31)
        make, shape = c.keras
        model = KERAS_MODELS[c.name] = make(shape)
        rng = np.random.default_rng(seed_of(c.name, "calibration"))
        calib = np.stack([sample(rng, c.inputs[0][1][1:], c.inputs[0][2]) for _ in range(CALIBRATION_SAMPLES)])
        _randomize_weights(model, np.random.default_rng(seed_of(c.name, "weights")), calib)
        fn = lambda x: model(x, training=False)
    else:
        fn = c.build(np.random.default_rng(seed_of(c.name)), Plain)
    cf = tf.function(fn, input_signature=specs, autograph=False).get_concrete_function()
    # No trackable object: the converter freezes the variables into constants (what
    # passing the Keras model would not do: it keeps READ_VARIABLE ops) and names the
    # inputs plainly (x, y) rather than serving_default_x:0.
    conv = tf.lite.TFLiteConverter.from_concrete_functions([cf])
    if variant != "float32":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    if variant == "sparse":
        conv.optimizations = [tf.lite.Optimize.EXPERIMENTAL_SPARSITY]
    elif variant in ("sparsefp16", "sparseint8"):
        conv.optimizations = [tf.lite.Optimize.DEFAULT, tf.lite.Optimize.EXPERIMENTAL_SPARSITY]
    if variant in ("int8", "uint8io", "int8floatio", "sparseint8"):
        conv.representative_dataset = lambda: iter(rep)
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        io_type = {"int8": tf.int8, "uint8io": tf.uint8, "int8floatio": tf.float32, "sparseint8": tf.int8}[variant]
        conv.inference_input_type = conv.inference_output_type = io_type
    elif variant in ("fp16w", "sparsefp16"):
        conv.target_spec.supported_types = [tf.float16]
    return conv.convert()


def _range(arrays):
    """uint8 range covering the data and 0, with 0 exactly representable: (min, max, zero_point, scale)."""
    lo = min(0.0, min(float(a.min()) for a in arrays))
    hi = max(0.0, max(float(a.max()) for a in arrays))
    if hi - lo < 1e-6:
        hi = lo + 1.0
    scale = (hi - lo) / 255.0
    zp = int(round(-lo / scale))
    return -zp * scale, (255 - zp) * scale, zp, scale


def fake_quant(t, arrays):
    return tf.quantization.fake_quant_with_min_max_args(t, *_range(arrays)[:2])


def convert_legacy_uint8(c, rep):
    """All-uint8 model: fake-quant nodes with data-derived ranges + the TF1 converter."""
    rec = Recorder()
    fn = c.build(np.random.default_rng(seed_of(c.name)), rec)
    outs = []
    for xs in rep:
        o = fn(*[tf.constant(a) for a in xs])
        outs.append([t.numpy() for t in (o if isinstance(o, tuple) else (o,))])
    ins = [[r[i] for r in rep] for i in range(len(c.inputs))]
    if c.extra.get("same_range"):  # one quantization for all inputs and outputs
        ins = [sum(ins, [])] * len(ins)
    for j in range(len(outs[0])):
        if "out_range" in c.extra:  # the uint8 kernel's fixed output quantization
            ranges = [np.array(c.extra["out_range"], np.float32)]
        elif c.extra.get("same_range"):
            ranges = ins[0]
        else:
            ranges = [o[j] for o in outs]
        for o in outs:
            o[j] = ranges if o[j].dtype != bool else None
    tf1 = tf.compat.v1
    g = tf1.Graph()
    with g.as_default():
        phs, stats, xs = [], {}, []
        for (n, s, _), arrays in zip(c.inputs, ins):
            phs.append(tf1.placeholder(tf.float32, s, name=n))
            _, _, zp, scale = _range(arrays)
            stats[n] = (float(zp), 1.0 / scale)
            xs.append(fake_quant(phs[-1], arrays))
        ys = c.build(np.random.default_rng(seed_of(c.name)), FakeQuant(rec.seen))(*xs)
        ys = ys if isinstance(ys, tuple) else (ys,)
        ys = [y if r is None else fake_quant(y, r) for y, r in zip(ys, outs[0])]
        with tf1.Session(graph=g) as sess:
            conv = tf1.lite.TFLiteConverter.from_session(sess, phs, ys)
            conv.inference_type = tf.uint8
            conv.quantized_input_stats = stats
            return conv.convert()


# ----------------------------------------------------------------------------- inspecting

def describe(buf):
    """Operators and tensors of subgraph 0, read with the `tflite` package."""
    m = tflite.Model.GetRootAsModel(buf, 0)
    codes = [max(m.OperatorCodes(i).BuiltinCode(), m.OperatorCodes(i).DeprecatedBuiltinCode())
             for i in range(m.OperatorCodesLength())]
    sg = m.Subgraphs(0)
    tensors = [sg.Tensors(i) for i in range(sg.TensorsLength())]
    ops = []
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        ops.append((OP_NAMES[codes[op.OpcodeIndex()]],
                    [TYPE_NAMES[tensors[j].Type()] for j in op.InputsAsNumpy() if j >= 0],
                    [TYPE_NAMES[tensors[j].Type()] for j in op.OutputsAsNumpy()]))
    return ops, [TYPE_NAMES[t.Type()] for t in tensors]


def problems(buf, c, variant, tests):
    """Why this buffer is not a genuine `variant` model of `tests` (empty list if it is)."""
    ops, types = describe(buf)
    names = [o[0] for o in ops]
    found = [t for t in tests if t not in names]
    if found:
        return [f"converter emitted {sorted(set(names))}, not {found}"]
    bad = []
    if variant in QUANT_VARIANTS:
        allowed = {"QUANTIZE", "DEQUANTIZE"} if variant == "int8floatio" else {"QUANTIZE"}
        for name, _, outs in ops:
            if name not in allowed | {"DEQUANTIZE"} and "FLOAT32" in outs:
                bad.append(f"{name} left in float (DEQUANTIZE -> {name} -> QUANTIZE)")
        if variant != "int8floatio" and "DEQUANTIZE" in names:
            bad.append("DEQUANTIZE inside the model")
        if variant == "uint8" and {"INT8", "FLOAT32"} & set(types):
            bad.append("not all-uint8: " + ", ".join(sorted(set(types))))
    elif variant == "dynamic" and not ("INT8" in types and "FLOAT32" in types):
        bad.append("no int8 weights")
    elif variant in ("fp16w", "sparsefp16") and "FLOAT16" not in types:
        bad.append("no float16 weights")
    if variant in SPARSE_VARIANTS and not has_sparse_tensor(buf):
        bad.append("no sparse tensor")
    return sorted(set(bad))


# ----------------------------------------------------------------------------- reference run

# The reference kernels first; LiteRT's reference resolver lacks a few registrations
# (ELU, int8 TILE, int8 DEPTH_TO_SPACE) and its LRN is wrong: those use the optimized
# builtin kernels (never XNNPACK).
RESOLVERS = ("BUILTIN_REF", "BUILTIN_WITHOUT_DEFAULT_DELEGATES")


def interpreter(buf, resolver=RESOLVERS[0]):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_content=buf, experimental_op_resolver_type=getattr(OpResolverType, resolver))
    it.allocate_tensors()
    return it


def run(buf, inputs, resolver=RESOLVERS[0]):
    it = interpreter(buf, resolver)
    for d, a in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], a)
    it.invoke()
    return [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def quant_of(d):
    s, z = d["quantization"]
    return None if s == 0 else (float(s), int(z))


def make_inputs(c, it, *key):
    """Seeded inputs in the model's range: floats from the case's distribution,
    integer inputs are those floats quantized with the input's scale/zero point.
    Returns (inputs in the model's order, float samples in the case's order)."""
    rng = np.random.default_rng(seed_of(c.name, *(key or ("inputs",))))
    floats = {n: sample(rng, s, d) for n, s, d in c.inputs}
    out = []
    for d in it.get_input_details():
        n = next(n for n in floats if re.fullmatch(rf"(serving_default_)?{n}(:\d+)?", d["name"]))
        x = floats[n]
        assert tuple(d["shape"]) == x.shape, (c.name, d["shape"], x.shape)
        if d["dtype"] != np.float32:
            q, info = quant_of(d), np.iinfo(d["dtype"])
            x = np.clip(np.round(x / q[0]) + q[1], info.min, info.max).astype(d["dtype"])
        out.append(x)
    return out, list(floats.values())


SPREAD_INPUTS = 3
MIN_SPREAD = 1e-2  # of the output's range over those inputs
MIN_SPREAD_STEPS = 4  # quantized outputs


def output_spread(c, buf, resolver):
    """Per output: (largest change of one element across SPREAD_INPUTS seeded inputs
    (seeds name/spread/k), range of all its values), in quantization steps for an
    integer output. tests/tflite/test_models_manifest.py measures the same."""
    it = interpreter(buf, resolver)
    outs = [run(buf, make_inputs(c, it, "spread", str(k))[0], resolver) for k in range(SPREAD_INPUTS)]
    res = []
    for j in range(len(outs[0])):
        o = np.stack([r[j] for r in outs]).astype(np.float64)
        res.append(((o.max(0) - o.min(0)).max(), o.max() - o.min()))
    return res


def insensitive(c, buf, resolver):
    """Why a network model barely depends on its input (None if it does): such a model
    would pass any conversion, right or wrong."""
    it = interpreter(buf, resolver)
    for d, (spread, rng) in zip(it.get_output_details(), output_spread(c, buf, resolver)):
        steps = MIN_SPREAD_STEPS if d["dtype"] != np.float32 else 0
        if not (spread > 0 and spread >= MIN_SPREAD * rng and spread >= steps):
            return f"output {d['name']} spread {spread:.3g} over {SPREAD_INPUTS} inputs, range {rng:.3g}"
    return None


class Float16Weights(Plain):
    w = staticmethod(lambda v: tf.constant(v.astype(np.float16).astype(np.float32)))


def check_float_against_tf(c, floats, outputs, q=Plain, tol=1e-4):
    """A float32 model must compute what the TensorFlow function computes (a float16-weight
    model, what it computes with float16-rounded weights, biases still float32)."""
    if c.keras:
        want = [KERAS_MODELS[c.name](floats[0], training=False).numpy()]
    else:
        want = c.build(np.random.default_rng(seed_of(c.name)), q)(*[tf.constant(x) for x in floats])
        want = [t.numpy() for t in (want if isinstance(want, tuple) else (want,))]
    assert len(want) == len(outputs)
    for got, w in zip(outputs, want):
        np.testing.assert_allclose(got, w, rtol=tol, atol=tol)


def tensor_entry(d):
    qp = d["quantization_parameters"]
    q = None
    if len(qp["scales"]):
        q = {"scale": qp["scales"].tolist(), "zero_point": qp["zero_points"].tolist(),
             "quantized_dimension": int(qp["quantized_dimension"])}
    return {"name": d["name"], "shape": d["shape"].tolist(), "dtype": np.dtype(d["dtype"]).name,
            "quantization": q}


@dataclass
class Ctx:
    inputs: list
    outputs: list
    in_q: list
    out_q: list
    unpatched: bytes


def generate(c, variant, rep):
    """Returns (manifest entry, None) or (None, reason)."""
    try:
        buf = convert_legacy_uint8(c, rep) if variant == "uint8" else convert_tf2(c, variant, rep)
    except Exception as e:  # the converter's refusal is the information we record
        return None, "converter error: " + (str(e).strip().splitlines() or [type(e).__name__])[-1][:300]
    unpatched = buf
    if c.patch:
        from tensorflow.lite.tools import flatbuffer_utils
        m = flatbuffer_utils.convert_bytearray_to_object(bytearray(buf))
        c.patch(m)
        buf = bytes(flatbuffer_utils.convert_object_to_bytearray(m))
    extra = {"uint8io": ["QUANTIZE"], "int8floatio": ["QUANTIZE", "DEQUANTIZE"],
             "fp16w": ["DEQUANTIZE"]}.get(variant, [])
    ops = describe(buf)[0]
    tests = c.tests + extra if c.kind == "op" else sorted({o[0] for o in ops})
    bad = problems(buf, c, variant, tests)
    if bad:
        return None, "; ".join(bad)
    errors = []
    for resolver in c.extra.get("resolvers", RESOLVERS):
        try:
            it = interpreter(buf, resolver)
            inputs, floats = make_inputs(c, it)
            outputs = run(buf, inputs, resolver)
        except (RuntimeError, ValueError) as e:  # missing kernel / failed prepare or invoke
            errors.append(f"{resolver}: " + str(e).strip().splitlines()[-1][:300])
            continue
        if variant == "float32" and not c.patch:
            try:
                check_float_against_tf(c, floats, outputs)
            except AssertionError as e:
                # LiteRT's reference LRN sums the window [c-r, c+r) instead of [c-r, c+r]:
                # a kernel that disagrees with TensorFlow is not a reference for this case.
                errors.append(f"{resolver} disagrees with TensorFlow: " + " ".join(str(e).split())[:200])
                c.extra["resolvers"] = [r for r in RESOLVERS if r != resolver]
                continue
        break
    else:
        return None, "LiteRT cannot run it: " + "; ".join(errors)
    if errors:
        print("  note: " + "; ".join(errors), flush=True)
    if variant in ("sparse", "sparsefp16"):  # LiteRT must read the sparse weights right
        try:
            check_float_against_tf(c, floats, outputs, *((Plain,) if variant == "sparse" else (Float16Weights, 1e-2)))
        except AssertionError as e:
            return None, "LiteRT disagrees with TensorFlow (its sparse weights): " + " ".join(str(e).split())[:200]
    ins, outs = it.get_input_details(), it.get_output_details()
    if c.kind == "model":
        why = insensitive(c, buf, resolver)
        if why:  # a weight randomization problem of this script, not a converter limitation
            raise SystemExit(f"{c.name}.{variant}: output barely depends on the input: {why}")
    if c.check:
        try:
            c.check(Ctx(inputs, outputs, [quant_of(d) for d in ins], [quant_of(d) for d in outs], unpatched))
        except AssertionError as e:
            return None, "patched model disagrees with its reference: " + str(e).strip()[:300]
    sub = "ops" if c.kind == "op" else "models"
    (OUT / sub / f"{c.name}.{variant}.tflite").write_bytes(buf)
    save_npz(OUT / sub / f"{c.name}.{variant}.npz", {**{f"input_{i}": a for i, a in enumerate(inputs)},
                                       **{f"output_{i}": a for i, a in enumerate(outputs)}})
    entry = {
        "file": f"{sub}/{c.name}.{variant}.tflite", "expected": f"{sub}/{c.name}.{variant}.npz",
        "name": c.name, "kind": c.kind, "variant": variant, "tests": tests,
        "builtin_ops": [o[0] for o in ops], "origin": "patched" if c.patch else "converter",
        "note": c.note, "resolver": resolver, "size": len(buf), "sha256": hashlib.sha256(buf).hexdigest(),
        "inputs": [tensor_entry(d) for d in ins], "outputs": [tensor_entry(d) for d in outs],
    }
    return entry, None


def main(argv=None):
    global tf
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="regex: regenerate only the cases whose name, or ops/<name> or "
                                   "models/<name>, matches; other manifest entries are kept")
    args = ap.parse_args(argv)
    import tensorflow
    tf = tensorflow
    tf.get_logger().setLevel("ERROR")
    from absl import logging as absl_logging
    absl_logging.set_verbosity(absl_logging.ERROR)  # the frozen-graph path's deprecation notice
    from ai_edge_litert import __version__ as litert_version

    cases = [c for c in CASES if not args.only or re.search(args.only, c.name)
             or re.search(args.only, ("ops/" if c.kind == "op" else "models/") + c.name)]
    manifest_path = OUT / "manifest.json"
    if args.only and manifest_path.exists():
        old = json.loads(manifest_path.read_text())
        names = {c.name for c in cases}
        models = [e for e in old["models"] if e["name"] not in names]
        skipped = [s for s in old["skipped"] if s["name"] not in names]
    else:
        for sub in ("ops", "models"):
            shutil.rmtree(OUT / sub, ignore_errors=True)
        models, skipped = [], []
    for sub in ("ops", "models"):
        (OUT / sub).mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    for c in cases:
        rep = rep_data(c)
        for variant in c.variants:
            for p in (OUT / ("ops" if c.kind == "op" else "models")).glob(f"{c.name}.{variant}.*"):
                p.unlink()
            t = time.time()
            entry, reason = generate(c, variant, rep)
            if entry:
                models.append(entry)
                print(f"{entry['file']:58s} {entry['size']:>9d} B {time.time() - t:5.1f}s "
                      f"{' '.join(dict.fromkeys(entry['builtin_ops']))}", flush=True)
            else:
                skipped.append({"name": c.name, "variant": variant, "tests": c.tests, "reason": reason})
                print(f"SKIP {c.name}.{variant}: {reason}", flush=True)
    models.sort(key=lambda e: e["file"])
    skipped.sort(key=lambda s: (s["name"], s["variant"]))
    manifest = {
        "generator": "scripts/gen_tflite_models.py",
        "tensorflow": tf.__version__, "ai_edge_litert": litert_version,
        "reference": "ai_edge_litert Interpreter with the entry's OpResolverType (`resolver`): "
                     "BUILTIN_REF (reference kernels) unless it lacks the kernel",
        "models": models, "skipped": skipped,
    }
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"{len(models)} models, {len(skipped)} skipped, {total / 2**20:.1f} MiB, "
          f"{time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
