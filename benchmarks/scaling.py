"""Scaling benchmark: conversion time and memory against the number of nodes.

    python benchmarks/scaling.py [--blocks 1000,4000,16000,64000] [--formats onnx,tflite]
                                 [--only chain,encoder,resnet] [--timeout 120] [--code DIR]
                                 [--json out.json]

Models (written to benchmarks/.cache/scaling/, git-ignored, regenerated when VERSION changes):
* chain_N: N blocks of 3x3 Conv (8 channels, 16x16, with bias) + Relu + Add(skip), 3N nodes;
  ONNX opset 13 (onnx.helper) and TFLite (the `tflite` builders, as gen_large.py does);
* encoder24: a 24-layer post-LN transformer encoder (dim 32, 4 heads, ReLU FFN) in the shape
  PyTorch's TorchScript exporter gives it with a dynamic batch and sequence (opset 13): every
  view/reshape reads the shape at run time (Shape -> Gather -> Unsqueeze -> Concat -> Reshape),
  LayerNorm is written out (ReduceMean, Sub, Pow, Sqrt, Div), ~98 nodes per layer;
  converted with --input-shape input=1,12,32;
* resnet100: gen_large's ResNet-style NHWC TFLite network (width 8, 100 blocks), whose
  convolutions are NCHW in the IR: sink_permutes moves and cancels ~200 Permutes.

Every conversion is `python -m armnn_import MODEL -o OUT` in a fresh process, timed by a wrapper
(wall time; peak RSS from resource.getrusage(RUSAGE_CHILDREN)). A run over --timeout seconds is
stopped and shown as such. --code DIR puts another checkout first on the path (the "before"
numbers). The targets are printed PASS/FAIL; this is not a test.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import gen_large  # noqa: E402

CACHE = os.path.join(gen_large.CACHE, "scaling")
VERSION = 1  # bump when a model changes
SEED = 0
C, HW = 8, 16  # chain: channels and spatial size

# Targets (issue 15)
EXPONENT_MAX = 1.1       # time ~ nodes^k from 4k to 64k blocks
BIG_BLOCKS, BIG_MAX_S, BIG_RSS_MB = 64000, 60.0, 1500.0
MID_BLOCKS, MID_MAX_S = 2000, 3.0
ENCODER_MAX_S = 2.0

WRAPPER = r"""
import json, resource, subprocess, sys, time
timeout = float(sys.argv[1])
t = time.perf_counter()
try:
    p = subprocess.run(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=timeout)
    rc, err = p.returncode, p.stderr
except subprocess.TimeoutExpired as e:
    rc, err = "timeout", e.stderr or b""
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": rc, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
                  "peak_rss_mb": ru.ru_maxrss * 1024 / 1e6, "stderr": err.decode(errors="replace")[-2000:]}))
"""


# -- models -------------------------------------------------------------------

def _cached(name: str, ext: str, make) -> tuple[str, int]:
    """(path, node count) of a cached model, made by make() -> (bytes, nodes) when missing."""
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"{name}.v{VERSION}.{ext}")
    meta = path + ".json"
    if os.path.exists(path) and os.path.exists(meta):
        with open(meta) as f:
            return path, json.load(f)["nodes"]
    data, nodes = make()
    gen_large._write(path, data)
    with open(meta, "w") as f:
        json.dump({"nodes": nodes}, f)
    return path, nodes


def _chain_weights(blocks: int):
    rng = np.random.default_rng(SEED)
    w = (rng.standard_normal((blocks, C, C, 3, 3), dtype=np.float32) * np.float32(0.05))
    b = rng.standard_normal((blocks, C), dtype=np.float32) * np.float32(0.01)
    return w, b


def chain_onnx(blocks: int) -> tuple[bytes, int]:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w, b = _chain_weights(blocks)
    nodes, inits, x = [], [], "input"
    for k in range(blocks):
        inits += [numpy_helper.from_array(w[k], f"w{k}"), numpy_helper.from_array(b[k], f"b{k}")]
        nodes.append(helper.make_node("Conv", [x, f"w{k}", f"b{k}"], [f"conv{k}"], kernel_shape=[3, 3],
                                      pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"conv{k}"], [f"relu{k}"]))
        y = "output" if k == blocks - 1 else f"add{k}"
        nodes.append(helper.make_node("Add", [f"relu{k}", x], [y]))
        x = y
    info = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, C, HW, HW])  # noqa: E731
    graph = helper.make_graph(nodes, "chain", [info("input")], [info("output")], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="armnn-import benchmarks/scaling.py")
    model.ir_version = 8
    return model.SerializeToString(), len(nodes)


def _tflite(tensors, ops, buffers_data, inputs, outputs) -> bytes:
    """A one-subgraph TFLite model. tensors: (name, shape, buffer); ops: (builtin code,
    inputs, outputs, options kind); buffers_data: bytes per buffer (index 0 is empty)."""
    import flatbuffers

    mod = lambda name: importlib.import_module("tflite." + name)  # noqa: E731
    Buffer, Model, Operator, OperatorCode, SubGraph, Tensor, Conv2DOptions, AddOptions = map(
        mod, ["Buffer", "Model", "Operator", "OperatorCode", "SubGraph", "Tensor", "Conv2DOptions", "AddOptions"])
    from tflite import BuiltinOptions, Padding, TensorType

    b = flatbuffers.Builder(sum(len(d) for d in buffers_data) + (64 << 10) * (1 + len(ops) // 256))
    data_vecs = [gen_large._bulk_vector(b, d) if d else None for d in buffers_data]
    buffers = []
    for d in [None] + data_vecs:
        Buffer.BufferStart(b)
        if d is not None:
            Buffer.BufferAddData(b, d)
        buffers.append(Buffer.BufferEnd(b))
    tensor_offs = []
    for name, shape, buf in tensors:
        n = b.CreateString(name)
        s = gen_large._int_vector(b, Tensor.TensorStartShapeVector, shape)
        Tensor.TensorStart(b)
        Tensor.TensorAddShape(b, s)
        Tensor.TensorAddType(b, TensorType.FLOAT32)
        Tensor.TensorAddBuffer(b, buf)
        Tensor.TensorAddName(b, n)
        tensor_offs.append(Tensor.TensorEnd(b))
    codes = sorted({op[0] for op in ops})
    op_offs = []
    for code, ins, outs, kind in ops:
        opts = None
        if kind == "conv":
            Conv2DOptions.Conv2DOptionsStart(b)
            Conv2DOptions.Conv2DOptionsAddPadding(b, Padding.SAME)
            Conv2DOptions.Conv2DOptionsAddStrideW(b, 1)
            Conv2DOptions.Conv2DOptionsAddStrideH(b, 1)
            Conv2DOptions.Conv2DOptionsAddDilationWFactor(b, 1)
            Conv2DOptions.Conv2DOptionsAddDilationHFactor(b, 1)
            opts, opts_type = Conv2DOptions.Conv2DOptionsEnd(b), BuiltinOptions.Conv2DOptions
        elif kind == "add":
            AddOptions.AddOptionsStart(b)
            opts, opts_type = AddOptions.AddOptionsEnd(b), BuiltinOptions.AddOptions
        vi = gen_large._int_vector(b, Operator.OperatorStartInputsVector, ins)
        vo = gen_large._int_vector(b, Operator.OperatorStartOutputsVector, outs)
        Operator.OperatorStart(b)
        Operator.OperatorAddOpcodeIndex(b, codes.index(code))
        Operator.OperatorAddInputs(b, vi)
        Operator.OperatorAddOutputs(b, vo)
        if opts is not None:
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
    vi = gen_large._int_vector(b, SubGraph.SubGraphStartInputsVector, inputs)
    vo = gen_large._int_vector(b, SubGraph.SubGraphStartOutputsVector, outputs)
    vop = table_vector(SubGraph.SubGraphStartOperatorsVector, op_offs)
    SubGraph.SubGraphStart(b)
    SubGraph.SubGraphAddTensors(b, vt)
    SubGraph.SubGraphAddInputs(b, vi)
    SubGraph.SubGraphAddOutputs(b, vo)
    SubGraph.SubGraphAddOperators(b, vop)
    SubGraph.SubGraphAddName(b, name)
    subgraph = SubGraph.SubGraphEnd(b)
    code_offs = []
    for code in codes:
        OperatorCode.OperatorCodeStart(b)
        OperatorCode.OperatorCodeAddDeprecatedBuiltinCode(b, code)
        OperatorCode.OperatorCodeAddBuiltinCode(b, code)
        OperatorCode.OperatorCodeAddVersion(b, 1)
        code_offs.append(OperatorCode.OperatorCodeEnd(b))
    desc = b.CreateString("armnn-import benchmarks/scaling.py")
    vcodes = table_vector(Model.ModelStartOperatorCodesVector, code_offs)
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


def chain_tflite(blocks: int) -> tuple[bytes, int]:
    from tflite import BuiltinOperator as Op

    w, bias = _chain_weights(blocks)
    shape = [1, HW, HW, C]
    tensors, ops, bufs = [("input", shape, 0)], [], []
    x = 0
    for k in range(blocks):
        bufs += [np.ascontiguousarray(w[k].transpose(0, 2, 3, 1)).tobytes(), bias[k].tobytes()]
        tensors += [(f"w{k}", [C, 3, 3, C], len(bufs) - 1), (f"b{k}", [C], len(bufs)),
                    (f"conv{k}", shape, 0), (f"relu{k}", shape, 0),
                    ("output" if k == blocks - 1 else f"add{k}", shape, 0)]
        t = len(tensors)
        ops += [(Op.CONV_2D, [x, t - 5, t - 4], [t - 3], "conv"), (Op.RELU, [t - 3], [t - 2], None),
                (Op.ADD, [t - 2, x], [t - 1], "add")]
        x = t - 1
    return _tflite(tensors, ops, bufs, [0], [x]), len(ops)


def encoder_onnx(layers: int = 24, dim: int = 32, heads: int = 4, ffn: int = 64) -> tuple[bytes, int]:
    """The node pattern of PyTorch's TorchScript export (dynamo=False, opset 13, dynamic batch
    and sequence) of scripts/gen_onnx_models.py's EncoderBlock, layer after layer."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(SEED)
    nodes, inits = [], []
    count = [0]

    def node(op, ins, **attrs):
        count[0] += 1
        out = f"/{op}_{count[0]}_output_0"
        nodes.append(helper.make_node(op, ins, [out], name=f"/{op}_{count[0]}", **attrs))
        return out

    def const(value, dtype=np.int64):
        return node("Constant", [], value=numpy_helper.from_array(np.asarray(value, dtype)))

    def init(name, shape, scale=0.1):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def linear(x, name, n_in, n_out):
        return node("Add", [init(f"{name}.bias", (n_out,)), node("MatMul", [x, init(f"{name}.w", (n_in, n_out))])])

    def layer_norm(x, name):
        mean = node("ReduceMean", [x], axes=[-1])
        d = node("Sub", [x, mean])
        var = node("ReduceMean", [node("Pow", [d, const(2.0, np.float32)])], axes=[-1])
        y = node("Div", [d, node("Sqrt", [node("Add", [var, const(1e-5, np.float32)])])])
        return node("Add", [node("Mul", [y, init(f"{name}.weight", (dim,), 1.0)]), init(f"{name}.bias", (dim,))])

    x = "input"
    for i in range(layers):
        p = f"blocks.{i}"
        b, t, d = (node("Gather", [node("Shape", [x]), const(k)], axis=0) for k in range(3))
        hd = node("Cast", [node("Cast", [node("Div", [d, const(heads)])], to=7)], to=7)

        def heads_shape():
            return node("Concat", [node("Unsqueeze", [b, const([0])]), node("Unsqueeze", [t, const([0])]),
                                   const([heads]), node("Unsqueeze", [hd, const([0])])], axis=0)
        split = [heads_shape() for _ in range(3)]
        q = node("Transpose", [node("Reshape", [linear(x, f"{p}.q", dim, dim), split[0]])], perm=[0, 2, 1, 3])
        k = node("Reshape", [linear(x, f"{p}.k", dim, dim), split[1]])
        v = node("Transpose", [node("Reshape", [linear(x, f"{p}.v", dim, dim), split[2]])], perm=[0, 2, 1, 3])
        s = node("MatMul", [q, node("Transpose", [k], perm=[0, 2, 3, 1])])
        scale = node("Pow", [node("Cast", [hd], to=1), const(0.5, np.float32)])
        att = node("Softmax", [node("Div", [s, scale])], axis=-1)
        y = node("Transpose", [node("MatMul", [att, v])], perm=[0, 2, 1, 3])
        shape = node("Concat", [node("Unsqueeze", [n, const([0])]) for n in (b, t, d)], axis=0)
        y = linear(node("Reshape", [y, shape]), f"{p}.o", dim, dim)
        x = layer_norm(node("Add", [x, y]), f"{p}.norm1")
        f = linear(node("Relu", [linear(x, f"{p}.ffn.0", dim, ffn)]), f"{p}.ffn.2", ffn, dim)
        x = layer_norm(node("Add", [x, f]), f"{p}.norm2")
    nodes.append(helper.make_node("Identity", [x], ["output"]))
    dyn = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", "seq", dim])  # noqa: E731
    graph = helper.make_graph(nodes, "encoder", [dyn("input")], [dyn("output")], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="armnn-import benchmarks/scaling.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString(), len(nodes)


def resnet_tflite(blocks: int = 100) -> tuple[str, int]:
    meta = gen_large.generate(f"resnet{blocks}_c8", 8, blocks, CACHE)
    return meta["files"]["tflite"], 1 + 3 * blocks


# -- measuring ----------------------------------------------------------------

def measure(model: str, code: str, timeout: float, extra=()) -> dict:
    out = os.path.join(CACHE, "out.armnn")
    env = dict(os.environ)
    env["PYTHONPATH"] = code + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(gen_large.CACHE, "pycache")
    cmd = [sys.executable, "-m", "armnn_import", "-q", model, "-o", out, *extra]
    # cwd = the checkout: `python -m` puts the working directory first on sys.path
    p = subprocess.run([sys.executable, "-c", WRAPPER, str(timeout), *cmd], capture_output=True, text=True,
                       env=env, cwd=code)
    if p.returncode != 0:
        return {"rc": "wrapper failed", "stderr": p.stderr[-2000:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def exponent(points) -> float | None:
    """Least-squares slope of log(time) against log(nodes)."""
    pts = [(math.log(n), math.log(t)) for n, t in points if t and t > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx else None


def verdict(ok) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


def run(args) -> dict:
    rows = []

    def one(model, fmt, blocks, path, nodes, extra=()):
        print(f"  {model} {fmt} ({nodes} nodes) ...", end="", flush=True, file=sys.stderr)
        r = measure(path, args.code, args.timeout, extra)
        ok = r["rc"] == 0
        row = {"model": model, "fmt": fmt, "blocks": blocks, "nodes": nodes, "rc": r["rc"],
               "time_s": r[args.clock] if ok else None, "wall_s": r.get("wall_s"), "cpu_s": r.get("cpu_s"),
               "peak_rss_mb": r.get("peak_rss_mb") if ok else None,
               "error": "" if ok else (r.get("stderr") or "").strip().splitlines()[-1:]}
        print(f" {r.get('wall_s', 0):.2f} s wall, {r.get('cpu_s') or 0:.2f} s cpu, rc={r['rc']}", file=sys.stderr)
        rows.append(row)
        return row

    only = set(args.only.split(","))
    if "chain" in only:
        for blocks in [int(b) for b in args.blocks.split(",") if b]:
            for fmt in args.formats.split(","):
                make = chain_onnx if fmt == "onnx" else chain_tflite
                path, nodes = _cached(f"chain_{blocks}", fmt, lambda: make(blocks))
                one(f"chain_{blocks}", fmt, blocks, path, nodes)
    if "encoder" in only:
        path, nodes = _cached("encoder24", "onnx", lambda: encoder_onnx(24))
        one("encoder24", "onnx", 24, path, nodes, ["--input-shape", "input=1,12,32"])
    if "resnet" in only:
        path, nodes = resnet_tflite(100)
        one("resnet100", "tflite", 100, path, nodes)
    return {"rows": rows, "targets": targets(rows)}


def targets(rows) -> list[dict]:
    out = []
    chain = [r for r in rows if r["model"].startswith("chain_")]
    for fmt in sorted({r["fmt"] for r in chain}):
        mine = [r for r in chain if r["fmt"] == fmt]
        fit = [(r["nodes"], r["time_s"]) for r in mine if 4000 <= r["blocks"] <= 64000 and r["time_s"]]
        k = exponent(fit) if len(fit) >= 2 else None
        k_all = exponent([(r["nodes"], r["time_s"]) for r in mine if r["time_s"]])
        out.append({"what": f"{fmt}: exponent 4k-64k blocks <= {EXPONENT_MAX}",
                    "value": "-" if k is None else f"{k:.2f} (all sizes {k_all:.2f})" if k_all else f"{k:.2f}",
                    "ok": None if k is None else k <= EXPONENT_MAX})
        for r in mine:
            if r["blocks"] == BIG_BLOCKS:
                ok = r["time_s"] is not None and r["time_s"] < BIG_MAX_S and r["peak_rss_mb"] < BIG_RSS_MB
                out.append({"what": f"{fmt}: {BIG_BLOCKS} blocks < {BIG_MAX_S:g} s and < {BIG_RSS_MB:g} MB",
                            "value": _show(r), "ok": ok})
            if r["blocks"] == MID_BLOCKS:
                out.append({"what": f"{fmt}: {MID_BLOCKS} blocks < {MID_MAX_S:g} s", "value": _show(r),
                            "ok": r["time_s"] is not None and r["time_s"] < MID_MAX_S})
    for r in rows:
        if r["model"] == "encoder24":
            out.append({"what": f"24-layer encoder < {ENCODER_MAX_S:g} s", "value": _show(r),
                        "ok": r["time_s"] is not None and r["time_s"] < ENCODER_MAX_S})
    return out


def _show(r) -> str:
    if r["time_s"] is None:
        return f"{r['rc']} after {r['wall_s']:.0f} s" if r.get("wall_s") else str(r["rc"])
    return f"{r['time_s']:.2f} s, {r['peak_rss_mb']:.0f} MB"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", default="1000,4000,16000,64000", help="chain sizes in blocks (comma-separated)")
    ap.add_argument("--formats", default="onnx,tflite")
    ap.add_argument("--only", default="chain,encoder,resnet")
    ap.add_argument("--timeout", type=float, default=120.0, help="stop a conversion after this many seconds")
    ap.add_argument("--code", default=REPO, help="the checkout to convert with (first on PYTHONPATH)")
    ap.add_argument("--clock", choices=("wall_s", "cpu_s"), default="wall_s",
                    help="the time the targets and the fit use: wall (default) or CPU (user + system) "
                         "time, steadier on a loaded machine")
    ap.add_argument("--json", help="write every number here")
    args = ap.parse_args(argv)
    args.code = os.path.abspath(args.code)
    res = run(args)
    print(f"code: {args.code}; targets on {'wall' if args.clock == 'wall_s' else 'CPU'} time; "
          f"load average at the end {os.getloadavg()[0]:.1f}")
    print(f"{'model':<12} {'fmt':<6} {'blocks':>6} {'nodes':>7} {'wall s':>8} {'cpu s':>8} {'RSS MB':>7}")
    for r in res["rows"]:
        t = f"{r['wall_s']:.2f}" if r["rc"] == 0 else f">{r['wall_s']:.0f}" if r["rc"] == "timeout" \
            else f"rc={r['rc']}"
        cpu = f"{r['cpu_s']:.2f}" if r.get("cpu_s") is not None else "-"
        rss = f"{r['peak_rss_mb']:.0f}" if r["peak_rss_mb"] else "-"
        print(f"{r['model']:<12} {r['fmt']:<6} {r['blocks']:>6} {r['nodes']:>7} {t:>8} {cpu:>8} {rss:>7}"
              + (f"  {r['error']}" if r["error"] else ""))
    print()
    for t in res["targets"]:
        print(f"{t['what']:<48} {t['value']:<32} {verdict(t['ok'])}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
