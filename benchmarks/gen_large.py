"""Generate large ResNet-style models with random weights, in ONNX and TFLite.

    python benchmarks/gen_large.py [--sizes 10,100,500] [--verify]

The network: a 3x3 stride-2 stem conv (3 -> C) + Relu, then `blocks` residual blocks
Conv3x3+Relu -> Conv3x3 -> Add(skip) -> Relu, all at width C, on a 1x3x64x64 input
(NCHW for ONNX, 1x64x64x3 NHWC for TFLite). C is chosen so the weights total about
the requested size. Both files hold the same weights, so their outputs must agree
(--verify runs onnxruntime and LiteRT on the models and compares).

ONNX is built with onnx.helper; TFLite is written directly as a FlatBuffer with the
builder functions of the `tflite` package (no TensorFlow). Files go to
benchmarks/.cache/ (git-ignored) and are reused while their parameters are unchanged.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np

CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".cache")
MB = 1_000_000
VERSION = 1  # bump when the network changes, so cached files are regenerated
INPUT_HW = 64
SEED = 0


def plan(target_mb: float) -> dict:
    """Width and block count whose weights come to about target_mb."""
    blocks = max(1, round(math.sqrt(target_mb) / 1.5))
    convs = 2 * blocks  # the 3-channel stem is negligible
    width = max(8, int(round(math.sqrt(target_mb * MB / (4 * 9 * convs)) / 8)) * 8)
    return {"width": width, "blocks": blocks}


def make_weights(width: int, blocks: int, seed: int = SEED) -> list[tuple[np.ndarray, np.ndarray]]:
    """[(w OIHW float32, bias float32)] for the stem and each conv of each block."""
    rng = np.random.default_rng(seed)
    shapes = [(width, 3)] + [(width, width)] * (2 * blocks)
    out = []
    for k, (o, i) in enumerate(shapes):
        # He init; the second conv of a block is scaled down so the residual sum stays bounded.
        std = math.sqrt(2.0 / (9 * i)) * (0.5 if k and k % 2 == 0 else 1.0)
        w = rng.standard_normal((o, i, 3, 3), dtype=np.float32)
        w *= np.float32(std)
        b = (rng.standard_normal(o, dtype=np.float32) * np.float32(0.01))
        out.append((w, b))
    return out


# -- ONNX ---------------------------------------------------------------------

def onnx_bytes(weights, width: int, blocks: int) -> bytes:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []

    def conv(x, k, stride, pads):
        w, b = weights[k]
        inits.append(numpy_helper.from_array(w, f"w{k}"))
        inits.append(numpy_helper.from_array(b, f"b{k}"))
        nodes.append(helper.make_node("Conv", [x, f"w{k}", f"b{k}"], [f"conv{k}"], kernel_shape=[3, 3],
                                      strides=[stride, stride], pads=pads))
        return f"conv{k}"

    def relu(x, name):
        nodes.append(helper.make_node("Relu", [x], [name]))
        return name

    # pads [0,0,1,1] = TF 'SAME' for a stride-2 3x3 conv on an even size (extra row/col at the end).
    x = relu(conv("input", 0, 2, [0, 0, 1, 1]), "stem")
    for blk in range(blocks):
        y = relu(conv(x, 2 * blk + 1, 1, [1, 1, 1, 1]), f"relu{blk}a")
        y = conv(y, 2 * blk + 2, 1, [1, 1, 1, 1])
        nodes.append(helper.make_node("Add", [y, x], [f"add{blk}"]))
        x = relu(f"add{blk}", "output" if blk == blocks - 1 else f"relu{blk}b")
    hw = INPUT_HW // 2
    graph = helper.make_graph(
        nodes, "large_resnet",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, INPUT_HW, INPUT_HW])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, width, hw, hw])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="armnn-import benchmarks/gen_large.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


# -- TFLite -------------------------------------------------------------------

def _bulk_vector(b, data: bytes, alignment: int = 16) -> int:
    """A ubyte vector holding `data`, copied in one slice (CreateNumpyVector without the
    extra tobytes copy, and 16-byte aligned as TFLite's own writer does)."""
    b.StartVector(1, len(data), alignment)
    b.head -= len(data)
    b.Bytes[b.head:b.head + len(data)] = data
    return b.EndVector()


def _int_vector(b, start_fn, values) -> int:
    start_fn(b, len(values))
    for v in reversed(values):
        b.PrependInt32(v)
    return b.EndVector()


def tflite_bytes(weights, width: int, blocks: int) -> bytes:
    import importlib

    import flatbuffers

    # The tflite package re-exports each class under its module's name, so reach the
    # modules (which hold the builder functions) through importlib.
    mod = lambda name: importlib.import_module("tflite." + name)  # noqa: E731
    Buffer, Model, Operator, OperatorCode, SubGraph, Tensor, Conv2DOptions, AddOptions = map(
        mod, ["Buffer", "Model", "Operator", "OperatorCode", "SubGraph", "Tensor", "Conv2DOptions", "AddOptions"])
    from tflite import ActivationFunctionType as Act, BuiltinOperator as Op, BuiltinOptions, Padding, TensorType

    total = sum(w.nbytes + b.nbytes for w, b in weights)
    b = flatbuffers.Builder(total + (1 << 20))  # sized up front: no regrowth copies

    # Buffers: 0 is the empty sentinel; then weights (OHWI) and bias of each conv.
    buf_data = [None]
    for w, bias in weights:
        buf_data.append(_bulk_vector(b, np.ascontiguousarray(w.transpose(0, 2, 3, 1)).tobytes()))
        buf_data.append(_bulk_vector(b, bias.tobytes()))
    buffers = []
    for d in buf_data:
        Buffer.BufferStart(b)
        if d is not None:
            Buffer.BufferAddData(b, d)
        buffers.append(Buffer.BufferEnd(b))

    tensors = []  # (name, shape, buffer index)

    def tensor(name, shape, buf=0):
        tensors.append((name, shape, buf))
        return len(tensors) - 1

    hw = INPUT_HW // 2
    ops = []  # (opcode index, inputs, outputs, options kind, activation, stride)
    x = tensor("input", [1, INPUT_HW, INPUT_HW, 3])

    def conv(x, k, stride, act, name):
        w, bias = weights[k]
        tw = tensor(f"w{k}", [w.shape[0], 3, 3, w.shape[1]], 1 + 2 * k)
        tb = tensor(f"b{k}", [w.shape[0]], 2 + 2 * k)
        y = tensor(name, [1, hw, hw, w.shape[0]])
        ops.append((0, [x, tw, tb], [y], "conv", act, stride))
        return y

    x = conv(x, 0, 2, Act.RELU, "stem")
    for blk in range(blocks):
        y = conv(x, 2 * blk + 1, 1, Act.RELU, f"relu{blk}a")
        y = conv(y, 2 * blk + 2, 1, Act.NONE, f"conv{2 * blk + 2}")
        out = tensor("output" if blk == blocks - 1 else f"relu{blk}b", [1, hw, hw, width])
        ops.append((1, [y, x], [out], "add", Act.RELU, 1))
        x = out

    tensor_offs = []
    for name, shape, buf in tensors:
        n = b.CreateString(name)
        s = _int_vector(b, Tensor.TensorStartShapeVector, shape)
        Tensor.TensorStart(b)
        Tensor.TensorAddShape(b, s)
        Tensor.TensorAddType(b, TensorType.FLOAT32)
        Tensor.TensorAddBuffer(b, buf)
        Tensor.TensorAddName(b, n)
        tensor_offs.append(Tensor.TensorEnd(b))

    op_offs = []
    for opcode, ins, outs, kind, act, stride in ops:
        if kind == "conv":
            Conv2DOptions.Conv2DOptionsStart(b)
            Conv2DOptions.Conv2DOptionsAddPadding(b, Padding.SAME)
            Conv2DOptions.Conv2DOptionsAddStrideW(b, stride)
            Conv2DOptions.Conv2DOptionsAddStrideH(b, stride)
            Conv2DOptions.Conv2DOptionsAddFusedActivationFunction(b, act)
            Conv2DOptions.Conv2DOptionsAddDilationWFactor(b, 1)
            Conv2DOptions.Conv2DOptionsAddDilationHFactor(b, 1)
            opts, opts_type = Conv2DOptions.Conv2DOptionsEnd(b), BuiltinOptions.Conv2DOptions
        else:
            AddOptions.AddOptionsStart(b)
            AddOptions.AddOptionsAddFusedActivationFunction(b, act)
            opts, opts_type = AddOptions.AddOptionsEnd(b), BuiltinOptions.AddOptions
        vi = _int_vector(b, Operator.OperatorStartInputsVector, ins)
        vo = _int_vector(b, Operator.OperatorStartOutputsVector, outs)
        Operator.OperatorStart(b)
        Operator.OperatorAddOpcodeIndex(b, opcode)
        Operator.OperatorAddInputs(b, vi)
        Operator.OperatorAddOutputs(b, vo)
        Operator.OperatorAddBuiltinOptionsType(b, opts_type)
        Operator.OperatorAddBuiltinOptions(b, opts)
        op_offs.append(Operator.OperatorEnd(b))

    def table_vector(start_fn, offs):
        start_fn(b, len(offs))
        for o in reversed(offs):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()

    name = b.CreateString("main")
    vt = table_vector(SubGraph.SubGraphStartTensorsVector, tensor_offs)
    vi = _int_vector(b, SubGraph.SubGraphStartInputsVector, [0])
    vo = _int_vector(b, SubGraph.SubGraphStartOutputsVector, [len(tensors) - 1])
    vop = table_vector(SubGraph.SubGraphStartOperatorsVector, op_offs)
    SubGraph.SubGraphStart(b)
    SubGraph.SubGraphAddTensors(b, vt)
    SubGraph.SubGraphAddInputs(b, vi)
    SubGraph.SubGraphAddOutputs(b, vo)
    SubGraph.SubGraphAddOperators(b, vop)
    SubGraph.SubGraphAddName(b, name)
    subgraph = SubGraph.SubGraphEnd(b)

    codes = []
    for code in (Op.CONV_2D, Op.ADD):
        OperatorCode.OperatorCodeStart(b)
        # Old readers (Arm NN 20.08's parser) read the int8 field, new ones the int32 one.
        OperatorCode.OperatorCodeAddDeprecatedBuiltinCode(b, code)
        OperatorCode.OperatorCodeAddBuiltinCode(b, code)
        OperatorCode.OperatorCodeAddVersion(b, 1)
        codes.append(OperatorCode.OperatorCodeEnd(b))

    desc = b.CreateString("armnn-import benchmarks/gen_large.py")
    vcodes = table_vector(Model.ModelStartOperatorCodesVector, codes)
    vsub = table_vector(Model.ModelStartSubgraphsVector, [subgraph])
    vbuf = table_vector(Model.ModelStartBuffersVector, buffers)
    Model.ModelStart(b)
    Model.ModelAddVersion(b, 3)
    Model.ModelAddOperatorCodes(b, vcodes)
    Model.ModelAddSubgraphs(b, vsub)
    Model.ModelAddDescription(b, desc)
    Model.ModelAddBuffers(b, vbuf)
    b.Finish(Model.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


# -- files --------------------------------------------------------------------

def _write(path: str, data: bytes) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def generate(name: str, width: int, blocks: int, cache: str = CACHE) -> dict:
    """Write <cache>/<name>.onnx, .tflite and .json (unless up to date); return the metadata."""
    os.makedirs(cache, exist_ok=True)
    meta_path = os.path.join(cache, name + ".json")
    key = {"version": VERSION, "width": width, "blocks": blocks, "seed": SEED, "input_hw": INPUT_HW}
    paths = {fmt: os.path.join(cache, f"{name}.{fmt}") for fmt in ("onnx", "tflite")}
    if os.path.exists(meta_path) and all(os.path.exists(p) for p in paths.values()):
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("key") == key:
            return meta
    weights = make_weights(width, blocks)
    _write(paths["onnx"], onnx_bytes(weights, width, blocks))
    _write(paths["tflite"], tflite_bytes(weights, width, blocks))
    meta = {"key": key, "name": name, "files": paths,
            "weight_bytes": sum(w.nbytes + b.nbytes for w, b in weights),
            "params": sum(w.size + b.size for w, b in weights),
            "sizes": {fmt: os.path.getsize(p) for fmt, p in paths.items()}}
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    return meta


def large(size_mb: float, cache: str = CACHE) -> dict:
    p = plan(size_mb)
    return generate(f"large_{size_mb:g}mb", p["width"], p["blocks"], cache)


def tiny(cache: str = CACHE) -> dict:
    return generate("tiny", 8, 1, cache)


def verify(meta: dict) -> float:
    """Run both files (onnxruntime, LiteRT) on one input; return the max abs difference.
    Raises AssertionError when they disagree, i.e. the generator is wrong."""
    import onnxruntime as ort
    from ai_edge_litert.interpreter import Interpreter

    x = np.random.default_rng(1).standard_normal((1, 3, INPUT_HW, INPUT_HW), dtype=np.float32)
    sess = ort.InferenceSession(meta["files"]["onnx"], providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"input": x})[0]
    it = Interpreter(model_path=meta["files"]["tflite"])
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x.transpose(0, 2, 3, 1).copy())
    it.invoke()
    got = it.get_tensor(it.get_output_details()[0]["index"]).transpose(0, 3, 1, 2)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    diff = float(np.max(np.abs(got - ref)))
    scale = float(np.max(np.abs(ref))) or 1.0
    assert diff <= 1e-4 * scale, f"{meta['name']}: ONNX and TFLite disagree (max diff {diff}, max {scale})"
    return diff


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,100,500", help="model sizes in MB (comma-separated)")
    ap.add_argument("--verify", action="store_true", help="check ONNX and TFLite outputs agree")
    args = ap.parse_args(argv)
    for meta in [tiny()] + [large(float(s)) for s in args.sizes.split(",") if s.strip()]:
        line = (f"{meta['name']}: width {meta['key']['width']}, {meta['key']['blocks']} blocks, "
                f"weights {meta['weight_bytes'] / MB:.1f} MB, onnx {meta['sizes']['onnx'] / MB:.1f} MB, "
                f"tflite {meta['sizes']['tflite'] / MB:.1f} MB")
        if args.verify:
            line += f", max |onnxruntime - LiteRT| = {verify(meta):.2e}"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
