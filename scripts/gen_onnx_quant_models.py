"""Generate the quantized ONNX reference models in test_models/onnx_quant/.

Three float reference models of test_models/onnx/ (static shapes), and
mobilenetv2_like (built here in torch.nn: MobileNetV2's full depth, all seven
stages of inverted residuals, at width 0.35; only its float model's input and
output are kept, in test_models/onnx_quant/float/), and qops_mix (built here too: one each
of the operators onnxruntime quantizes on their own, Relu and Clip kept as operators in QDQ)
are quantized with
onnxruntime.quantization.quantize_static, calibrated on seeded random inputs,
in four variants:

    qdq_u8    QDQ format,       uint8 activations and weights, per tensor
    qop_u8    QOperator format, uint8 activations and weights, per tensor
    qdq_s8pc  QDQ format,       int8 activations, int8 weights per channel
    qop_s8pc  QOperator format, int8 activations, int8 weights per channel

Each <model>_<variant>.onnx comes with <model>_<variant>.npz holding the float
model's stored input and the output onnxruntime computes for it (unoptimized,
one thread: the graph as written), and an entry in manifest.json.

    python scripts/gen_onnx_quant_models.py [--only NAME ...] [--out DIR]
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process
from reference_io import save_npz, onnx_value_info as value_info  # noqa: E402 - run as a script

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "test_models" / "onnx"
OUT = ROOT / "test_models" / "onnx_quant"
MODELS = ("resnet_small", "mobilenetv2_small", "squeezenet_small", "mobilenetv2_like", "qops_mix", "shufflenet_like")
BUILT_HERE = {"mobilenetv2_like", "qops_mix", "shufflenet_like"}  # float model built here (torch), in test_models/onnx_quant/float/
#: quantize_static options of one model: qops_mix keeps its Relu and Clip as operators of their own
#: (in QDQ, onnxruntime otherwise folds an activation into the quantization range before it)
EXTRA = {"qops_mix": {"extra_options": {"QDQKeepRemovableActivations": True}}}
VARIANTS = {
    "qdq_u8": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                   weight_type=QuantType.QUInt8, per_channel=False),
    "qop_u8": dict(quant_format=QuantFormat.QOperator, activation_type=QuantType.QUInt8,
                   weight_type=QuantType.QUInt8, per_channel=False),
    "qdq_s8pc": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8,
                     weight_type=QuantType.QInt8, per_channel=True),
    "qop_s8pc": dict(quant_format=QuantFormat.QOperator, activation_type=QuantType.QInt8,
                     weight_type=QuantType.QInt8, per_channel=True),
}
CALIBRATION_SAMPLES = 8


class RandomReader(CalibrationDataReader):
    """Seeded standard-normal calibration inputs (the reference models' inputs are too)."""

    def __init__(self, inputs: dict, seed: int, count: int = CALIBRATION_SAMPLES):
        rng = np.random.default_rng(seed)
        self.samples = iter([{n: rng.standard_normal(s).astype(np.float32) for n, s in inputs.items()}
                             for _ in range(count)])

    def get_next(self):
        return next(self.samples, None)


def ort_session(path):
    opts = ort.SessionOptions()
    # Unoptimized, single-threaded: the graph as written (QDQ stays fake-quantized float).
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def quantize(src: Path, dst: Path, seed: int, **variant) -> None:
    """quant_pre_process (shape inference, BatchNormalization folded into Conv), then quantize_static."""
    model = onnx.load(src)
    inputs = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in model.graph.input}
    with tempfile.TemporaryDirectory() as tmp:
        pre = Path(tmp) / "pre.onnx"
        quant_pre_process(str(src), str(pre), skip_symbolic_shape=True)
        quantize_static(str(pre), str(dst), RandomReader(inputs, seed), **variant)


def build_mobilenetv2_like(out_dir: Path, tmp: Path, seed: int) -> dict:
    """MobileNetV2 as torchvision builds it (the paper's seven stages, 17 inverted residuals,
    ReLU6, residual Adds, global average pool, classifier) at width 0.35, with a last 1x1
    convolution of 384 channels (torchvision: 1280) and 10 classes to stay small; seeded
    random weights and BatchNorm statistics (folded by quant_pre_process), exported in
    eval mode into `tmp`. Keeps its seeded input and float output in out_dir/mobilenetv2_like.npz."""
    import torch
    from gen_onnx_models import InvertedResidual, conv_bn, randomize
    from torch import nn

    def divisible(v, d=8):  # torchvision's _make_divisible
        n = max(d, int(v + d / 2) // d * d)
        return n + d if n < 0.9 * v else n

    class MobileNetV2Like(nn.Module):
        CONFIG = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                  (6, 160, 3, 2), (6, 320, 1, 1)]

        def __init__(self, width=0.35, last=384, classes=10):
            super().__init__()
            cin = divisible(32 * width)
            layers = [conv_bn(3, cin, 3, 2, act=nn.ReLU6)]
            for t, c, n, s in self.CONFIG:
                for i in range(n):
                    layers.append(InvertedResidual(cin, divisible(c * width), s if i == 0 else 1, t))
                    cin = divisible(c * width)
            layers.append(conv_bn(cin, last, 1, act=nn.ReLU6))
            self.features = nn.Sequential(*layers)
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, classes))

        def forward(self, x):
            x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
            return self.classifier(torch.flatten(x, 1))

    torch.manual_seed(seed)
    model = randomize(MobileNetV2Like(), seed)
    return export_float(model, (1, 3, 80, 80), "mobilenetv2_like", out_dir, tmp, seed)  # 3x3 before the pool


def export_float(model, shape, name: str, out_dir: Path, tmp: Path, seed: int) -> dict:
    """Export a float torch model built here (opset 13) into `tmp`, check onnxruntime against
    torch, and keep its seeded input and float output in out_dir/<name>.npz."""
    import io

    import torch
    from gen_onnx_models import strip_initializer_identities

    buf = io.BytesIO()
    torch.onnx.export(model, (torch.zeros(shape),), buf, dynamo=False, opset_version=13,
                      do_constant_folding=True, input_names=["input"], output_names=["output"])
    proto = onnx.load_from_string(buf.getvalue())
    strip_initializer_identities(proto)
    proto = onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    onnx.checker.check_model(proto, full_check=True)
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    out_dir.mkdir(parents=True, exist_ok=True)
    onnx.save(proto, tmp / f"{name}.onnx")
    got = ort_session(tmp / f"{name}.onnx").run(None, {"input": x})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-4)
    save_npz(out_dir / f"{name}.npz", {"input_0": x, "output_0": got})
    return {"file": f"{name}.onnx", "data": f"{name}.npz", "model_dir": tmp}


def build_qops_mix(out_dir: Path, tmp: Path, seed: int) -> dict:
    """A small network of the operators onnxruntime quantizes one by one (QDQ around each, or
    its QLinear* / com.microsoft QLinear* operator): Conv, Relu, AveragePool, Sigmoid,
    LeakyRelu, Mul of two activations, Clip, and MatMul by a constant."""
    import torch
    from gen_onnx_models import randomize
    from torch import nn

    class QOpsMix(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 6, 3, padding=1)
            self.w = nn.Parameter(torch.randn(36, 8) * 0.3)

        def forward(self, x):
            a = nn.functional.avg_pool2d(torch.relu(self.conv(x)), 2)
            m = torch.clamp(torch.sigmoid(a) * nn.functional.leaky_relu(a, 0.1), -0.5, 0.5)
            return torch.matmul(m.flatten(2), self.w)

    torch.manual_seed(seed)
    return export_float(randomize(QOpsMix(), seed), (1, 3, 12, 12), "qops_mix", out_dir, tmp, seed)


def build_shufflenet_like(out_dir: Path, tmp: Path, seed: int) -> dict:
    """torchvision's ShuffleNetV2 in miniature (its InvertedResidual units, stride 2 and 1 with the
    split, channel shuffle and Concat), ending as torchvision does in x.mean([2, 3]): a ReduceMean
    over H and W that onnxruntime quantizes (QDQ and QOperator) before the classifier."""
    import torch
    from gen_onnx_models import randomize
    from torch import nn

    def shuffle(x, groups=2):
        n, c, h, w = x.shape
        return x.view(n, groups, c // groups, h, w).transpose(1, 2).reshape(n, c, h, w)

    def branch(cin, cout, stride):
        return nn.Sequential(nn.Conv2d(cin, cin, 1), nn.BatchNorm2d(cin), nn.ReLU(),
                             nn.Conv2d(cin, cin, 3, stride, 1, groups=cin), nn.BatchNorm2d(cin),
                             nn.Conv2d(cin, cout, 1), nn.BatchNorm2d(cout), nn.ReLU())

    class Unit(nn.Module):
        def __init__(self, c, stride):
            super().__init__()
            self.stride = stride
            self.b1 = nn.Sequential(nn.Conv2d(c, c, 3, 2, 1, groups=c), nn.BatchNorm2d(c), nn.Conv2d(c, c, 1),
                                    nn.ReLU()) if stride == 2 else None
            self.b2 = branch(c if stride == 2 else c // 2, c if stride == 2 else c // 2, stride)

        def forward(self, x):
            if self.stride == 1:
                a, b = x.chunk(2, dim=1)
                return shuffle(torch.cat((a, self.b2(b)), 1))
            return shuffle(torch.cat((self.b1(x), self.b2(x)), 1))

    class ShuffleNetLike(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 12, 3, 2, 1), nn.BatchNorm2d(12), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            self.units = nn.Sequential(Unit(12, 2), Unit(24, 1))
            self.conv5 = nn.Sequential(nn.Conv2d(24, 32, 1), nn.BatchNorm2d(32), nn.ReLU())
            self.fc = nn.Linear(32, 10)

        def forward(self, x):
            return self.fc(self.conv5(self.units(self.stem(x))).mean([2, 3]))

    torch.manual_seed(seed)
    return export_float(randomize(ShuffleNetLike(), seed).eval(), (1, 3, 32, 32), "shufflenet_like", out_dir, tmp,
                        seed)


def generate(name, variant, out_dir, seed, built=None):
    if name in BUILT_HERE:
        src_entry, src_dir = built, built["model_dir"]
    else:
        src_entry = {e["name"]: e for e in json.loads((SRC / "manifest.json").read_text())["models"]}[name]
        src_dir = SRC
    qname = f"{name}_{variant}"
    path = out_dir / f"{qname}.onnx"
    quantize(src_dir / src_entry["file"], path, seed, **VARIANTS[variant], **EXTRA.get(name, {}))
    proto = onnx.load(path)
    onnx.checker.check_model(proto)
    x = np.load((out_dir / "float" if name in BUILT_HERE else src_dir) / src_entry["data"])["input_0"]
    outputs = ort_session(path).run(None, {proto.graph.input[0].name: x})
    save_npz(out_dir / f"{qname}.npz", {"input_0": x} | {f"output_{i}": o for i, o in enumerate(outputs)})
    opts = VARIANTS[variant]
    return {
        "name": qname, "file": path.name, "data": f"{qname}.npz", "source": src_entry["file"],
        # a float model built here: only its input and float output are stored (source_dir)
        **({"source_dir": "onnx_quant/float"} if name in BUILT_HERE else {}),
        "format": opts["quant_format"].name, "activation_type": opts["activation_type"].name,
        "weight_type": opts["weight_type"].name, "per_channel": opts["per_channel"],
        "calibration": {"samples": CALIBRATION_SAMPLES, "seed": seed, "distribution": "standard normal"},
        "inputs": [value_info(v) for v in proto.graph.input],
        "outputs": [value_info(v) for v in proto.graph.output],
        "op_types": sorted({(n.domain + "." if n.domain else "") + n.op_type for n in proto.graph.node}),
        "size_bytes": path.stat().st_size,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", choices=sorted(MODELS), help="regenerate only these models")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "manifest.json"
    entries = {}
    if args.only and manifest_path.exists():
        entries = {e["name"]: e for e in json.loads(manifest_path.read_text())["models"]}
    order = [f"{m}_{v}" for m in MODELS for v in VARIANTS]
    for seed, name in enumerate(MODELS):
        if args.only and name not in args.only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            build = {"mobilenetv2_like": build_mobilenetv2_like, "qops_mix": build_qops_mix,
                     "shufflenet_like": build_shufflenet_like}.get(name)
            built = build(args.out / "float", Path(tmp), seed) if build else None
            for variant in VARIANTS:
                start = time.perf_counter()
                e = generate(name, variant, args.out, seed, built)
                entries[e["name"]] = e
                print(f"{e['name']}: {e['size_bytes'] / 1e6:.2f} MB, {time.perf_counter() - start:.1f} s, "
                      f"ops {' '.join(e['op_types'])}")
    manifest = {"generator": "scripts/gen_onnx_quant_models.py", "onnxruntime": ort.__version__,
                "onnx": onnx.__version__, "models": [entries[n] for n in order if n in entries]}
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
