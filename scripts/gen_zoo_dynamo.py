#!/usr/bin/env python3
"""Export torchvision classifiers and torch.nn modules with the dynamo exporter for the dynamo
sweep (docs/dynamo-sweep.md; not reference models).

Run with the generator venv (torch is never a dependency of the package):
    /opt/genvenv/bin/python scripts/gen_zoo_dynamo.py --out /tmp/zoo/dynamo [--only 'lstm|resnet']
`torch.onnx.export(model, args, f)` as users call it since torch 2.9 (dynamo=True, onnxscript),
at the exporter's default opset and at --opsets (default 18,20,23), static shapes and batch 1,
plus one dynamic batch (resnet18). Random seeded weights (weights=None: nothing is downloaded).
Each export is run by onnxruntime and compared with torch; <out>/dynamo_manifest.json records
the input (shape, dtype), the opset the file imports, and torch's error against onnxruntime.
"""
import json
import re
import sys
import types

import numpy as np

# torchvision's registry of fake kernels for its own C++ ops fails to import when its extension
# does not load (a CUDA build beside a CPU torch); no classifier uses them.
sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
import torch  # noqa: E402
import torchvision  # noqa: E402
from reference_io import run_ort, seed_of, sweep_setup  # noqa: E402

nn = torch.nn
CLASSIFIERS = ("resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "squeezenet1_1",
               "shufflenet_v2_x0_5", "regnet_y_400mf", "mnasnet0_5")


class First(nn.Module):
    """The first output of a module that returns a tuple (LSTM, GRU, MultiheadAttention)."""

    def __init__(self, inner, self_attention=False):
        super().__init__()
        self.inner, self.self_attention = inner, self_attention

    def forward(self, x):
        out = self.inner(x, x, x, need_weights=False) if self.self_attention else self.inner(x)
        return out[0]


class EmbedLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.fc = nn.Embedding(50, 16), nn.Linear(16, 10)

    def forward(self, ids):
        return self.fc(self.embed(ids))


class Attention(nn.Module):
    def forward(self, q):
        return nn.functional.scaled_dot_product_attention(q, q * 0.5, q + 1.0)


def modules():
    """name: (module, input shape, input dtype)."""
    f32 = np.float32
    return {
        "lstm": (First(nn.LSTM(8, 16, batch_first=True)), (1, 5, 8), f32),
        "lstm_bi2": (First(nn.LSTM(8, 16, num_layers=2, bidirectional=True, batch_first=True)), (1, 5, 8), f32),
        "gru": (First(nn.GRU(8, 16, batch_first=True)), (1, 5, 8), f32),
        "gru_bi": (First(nn.GRU(8, 16, bidirectional=True, batch_first=True)), (1, 5, 8), f32),
        "transformer_enc": (nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True), (1, 6, 16), f32),
        "transformer_enc_gelu": (nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation="gelu",
                                                            batch_first=True), (1, 6, 16), f32),
        "mha": (First(nn.MultiheadAttention(16, 2, batch_first=True), self_attention=True), (1, 6, 16), f32),
        "sdpa": (Attention(), (1, 2, 6, 8), f32),
        "conv1d": (nn.Sequential(nn.Conv1d(4, 8, 3, padding=1), nn.ReLU()), (1, 4, 20), f32),
        "convtranspose2d": (nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1), (1, 4, 8, 8), f32),
        "layernorm": (nn.LayerNorm(16), (1, 5, 16), f32),
        "groupnorm": (nn.GroupNorm(2, 8), (1, 8, 6, 6), f32),
        "upsample_bilinear": (nn.Upsample(scale_factor=2, mode="bilinear"), (1, 3, 5, 7), f32),
        "upsample_bilinear_ac": (nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True), (1, 3, 5, 7), f32),
        "upsample_nearest": (nn.Upsample(scale_factor=2, mode="nearest"), (1, 3, 5, 7), f32),
        "pixelshuffle": (nn.PixelShuffle(2), (1, 8, 4, 4), f32),
        "embedding_linear": (EmbedLinear(), (1, 7), np.int64),
        "batchnorm_relu": (nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU()), (1, 3, 8, 8), f32),
    }


def classifier(name):
    torch.manual_seed(seed_of(name) % 2**31)
    model = getattr(torchvision.models, name)(weights=None, num_classes=10)
    # random BatchNorm statistics, so that a wrong normalization shows in the numbers
    g = torch.Generator().manual_seed(seed_of(name, "bn") % 2**31)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    return model, (1, 3, 64, 64), np.float32


def sample(name, shape, dtype):
    rng = np.random.default_rng(seed_of("dynamo", name))
    if dtype == np.int64:
        return rng.integers(0, 50, size=shape).astype(np.int64)
    return rng.standard_normal(shape).astype(np.float32)


def export(model, x, opset, dynamic=False):
    """(model bytes, the opset it imports) of torch.onnx.export as a user calls it."""
    import onnx
    kw = {} if opset is None else {"opset_version": opset}
    if dynamic:
        kw["dynamic_shapes"] = ({0: torch.export.Dim("batch", min=1, max=64)},)
    prog = torch.onnx.export(model, (torch.from_numpy(x),), dynamo=True, input_names=["x"],
                             output_names=["y"], **kw)
    proto = prog.model_proto
    data = proto.SerializeToString()
    version = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    onnx.checker.check_model(onnx.load_from_string(data))
    return data, version


def record(out, manifest, key, model, x, opset, dynamic=False):
    model.eval()
    try:
        data, version = export(model, x, opset, dynamic)
    except Exception as e:  # the exporter's own refusal: recorded, not ours
        manifest[key] = {"skipped": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
        print(key, manifest[key], flush=True)
        return
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    got = run_ort(data, {"x": x})[0]
    (out / f"{key}.onnx").write_bytes(data)
    manifest[key] = {"shape": list(x.shape), "dtype": x.dtype.name, "opset": version, "bytes": len(data),
                     "torch_vs_ort": float(np.max(np.abs(got - want))), "torch": torch.__version__}
    print(key, manifest[key], flush=True)


def main():
    args, out, mpath, manifest = sweep_setup(__doc__, "/tmp/zoo/dynamo", "dynamo_manifest.json",
                                             "regex of model names", extra=[("--opsets", "default,18,20,23")])
    opsets = [None if o == "default" else int(o) for o in args.opsets.split(",")]
    zoo = {n: (lambda n=n: classifier(n)) for n in CLASSIFIERS}
    zoo.update({n: (lambda n=n: modules()[n]) for n in modules()})  # made after seeding
    for name, make in zoo.items():
        if args.only and not re.search(args.only, name):
            continue
        for opset in opsets:
            torch.manual_seed(seed_of(name) % 2**31)
            model, shape, dtype = make()
            key = f"{name}.{'opdef' if opset is None else f'op{opset}'}"
            record(out, manifest, key, model, sample(name, shape, dtype), opset)
            mpath.write_text(json.dumps(manifest, indent=1) + "\n")
    if not args.only or re.search(args.only, "resnet18"):
        model, shape, dtype = classifier("resnet18")
        record(out, manifest, "resnet18.opdef.dyn", model, sample("resnet18", shape, dtype), None, dynamic=True)
        mpath.write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
