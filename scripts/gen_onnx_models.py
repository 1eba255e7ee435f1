"""Generate the ONNX reference models in test_models/onnx/.

torch is needed only here (never by armnn_import): `pip install torch onnxruntime`.
Every model is built in code with seeded random weights, exported with the
TorchScript exporter (dynamo=False) so the graphs are the classic opset-13/17
kind, and written with <name>.npz holding seeded inputs and the outputs that
onnxruntime computes for them, plus an entry in manifest.json.

    python scripts/gen_onnx_models.py [--only NAME ...] [--out DIR]
"""

import argparse
import io
import json
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn.functional as F
from torch import nn
from reference_io import save_npz, onnx_value_info as value_info  # noqa: E402 - run as a script

OUT = Path(__file__).resolve().parents[1] / "test_models" / "onnx"


def conv_bn(cin, cout, k=3, stride=1, groups=1, dilation=1, act=nn.ReLU):
    pad = dilation * (k - 1) // 2
    layers = [nn.Conv2d(cin, cout, k, stride, pad, dilation, groups, bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act(inplace=True))
    return nn.Sequential(*layers)


def randomize(model, seed):
    """Kaiming conv weights keep activations O(1) through the depth; BN and LN get
    non-trivial affine parameters and running statistics so folding them is tested."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Conv2d):
                fan_in = m.weight[0].numel()
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) * (2.0 / fan_in) ** 0.5)
                if m.bias is not None:
                    m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
            elif isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
                if isinstance(m, nn.BatchNorm2d):
                    m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.2)
                    m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) * 1.5 + 0.5)
    return model.eval()


# ---------------------------------------------------------------- ResNet-18 style

class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = conv_bn(cin, cout, 3, stride)
        self.conv2 = conv_bn(cout, cout, 3, act=None)
        self.down = conv_bn(cin, cout, 1, stride, act=None) if stride != 1 or cin != cout else None

    def forward(self, x):
        identity = x if self.down is None else self.down(x)
        return F.relu(self.conv2(self.conv1(x)) + identity)


class ResNetSmall(nn.Module):
    def __init__(self, widths=(16, 32, 64, 96), classes=10):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, widths[0], 7, 2), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], widths[0]
        for i, w in enumerate(widths):
            blocks += [BasicBlock(cin, w, 1 if i == 0 else 2), BasicBlock(w, w, 1)]
            cin = w
        self.layers = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1)
        return self.fc(torch.flatten(x, 1))


# ---------------------------------------------------------------- MobileNetV2

class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = [conv_bn(cin, hidden, 1, act=nn.ReLU6)] if expand != 1 else []
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden, act=nn.ReLU6),
                   conv_bn(hidden, cout, 1, act=None)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


class MobileNetV2Small(nn.Module):
    # (expand t, channels c, repeats n, stride s) of the paper, narrowed and shortened.
    CONFIG = [(1, 8, 1, 1), (6, 16, 2, 2), (6, 24, 2, 2), (6, 32, 2, 2), (6, 48, 1, 1), (6, 64, 2, 2), (6, 96, 1, 1)]

    def __init__(self, classes=10, last=256):
        super().__init__()
        layers, cin = [conv_bn(3, 16, 3, 2, act=nn.ReLU6)], 16
        for t, c, n, s in self.CONFIG:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(conv_bn(cin, last, 1, act=nn.ReLU6))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, classes))

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


# ---------------------------------------------------------------- SqueezeNet 1.1

class Fire(nn.Module):
    def __init__(self, cin, squeeze, e1, e3):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, squeeze, 1)
        self.expand1 = nn.Conv2d(squeeze, e1, 1)
        self.expand3 = nn.Conv2d(squeeze, e3, 3, padding=1)

    def forward(self, x):
        x = F.relu(self.squeeze(x))
        return torch.cat([F.relu(self.expand1(x)), F.relu(self.expand3(x))], 1)


class SqueezeNetSmall(nn.Module):
    """SqueezeNet 1.1 layout (no BatchNorm, as in the original), half width;
    its ceil_mode max pools change the output size for this input."""

    def __init__(self, classes=10):
        super().__init__()
        pool = lambda: nn.MaxPool2d(3, 2, ceil_mode=True)  # noqa: E731
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, 2), nn.ReLU(inplace=True), pool(),
            Fire(32, 8, 32, 32), Fire(64, 8, 32, 32), pool(),
            Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), pool(),
            Fire(128, 24, 96, 96), Fire(192, 24, 96, 96), Fire(192, 32, 128, 128))
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(256, classes, 1), nn.ReLU(inplace=True),
                                        nn.AdaptiveAvgPool2d(1))

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


# ---------------------------------------------------------------- ShuffleNetV2

def channel_shuffle(x, groups):
    # As torchvision writes it: the sizes come from x.size() and the exporter folds them.
    b, c, h, w = x.size()
    x = x.view(b, groups, c // groups, h, w)
    return torch.transpose(x, 1, 2).contiguous().view(b, -1, h, w)


class ShuffleUnit(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.stride, half = stride, cout // 2
        if stride > 1:
            self.branch1 = nn.Sequential(conv_bn(cin, cin, 3, stride, groups=cin, act=None), conv_bn(cin, half, 1))
        src = cin if stride > 1 else half
        self.branch2 = nn.Sequential(conv_bn(src, half, 1), conv_bn(half, half, 3, stride, groups=half, act=None),
                                     conv_bn(half, half, 1))

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), 1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), 1)
        return channel_shuffle(out, 2)


class ShuffleNetV2Small(nn.Module):
    def __init__(self, classes=10, stages=((48, 2), (96, 3), (192, 2)), last=256):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 24, 3, 2), nn.MaxPool2d(3, 2, 1))
        units, cin = [], 24
        for cout, n in stages:
            units += [ShuffleUnit(cin, cout, 2)] + [ShuffleUnit(cout, cout, 1) for _ in range(n - 1)]
            cin = cout
        self.stages = nn.Sequential(*units)
        self.conv5 = conv_bn(cin, last, 1)
        self.fc = nn.Linear(last, classes)

    def forward(self, x):
        x = self.conv5(self.stages(self.stem(x)))
        return self.fc(x.mean([2, 3]))


# ---------------------------------------------------------------- DeepLabV3-style ASPP head

class ASPP(nn.Module):
    def __init__(self, cin, cout, rates=(2, 4)):
        super().__init__()
        self.branches = nn.ModuleList([conv_bn(cin, cout, 1)] + [conv_bn(cin, cout, 3, dilation=r) for r in rates])
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), conv_bn(cin, cout, 1))
        self.project = nn.Sequential(conv_bn(cout * (len(rates) + 2), cout, 1), nn.Dropout(0.5))

    def forward(self, x):
        h, w = x.shape[-2:]
        outs = [b(x) for b in self.branches]
        outs.append(F.interpolate(self.pool(x), size=(h, w), mode="bilinear", align_corners=False))
        return self.project(torch.cat(outs, 1))


class DeepLabSmall(nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.backbone = nn.Sequential(conv_bn(3, 16, 3, 2), conv_bn(16, 32, 3, 2), conv_bn(32, 32, 3))
        self.head = nn.Sequential(ASPP(32, 32), conv_bn(32, 32, 3), nn.Conv2d(32, classes, 1))

    def forward(self, x):
        return F.interpolate(self.head(self.backbone(x)), scale_factor=4, mode="bilinear", align_corners=False)


# ---------------------------------------------------------------- U-Net

def double_conv(cin, cout):
    return nn.Sequential(conv_bn(cin, cout), conv_bn(cout, cout))


class UNetSmall(nn.Module):
    def __init__(self, classes=2):
        super().__init__()
        self.enc1, self.enc2, self.mid = double_conv(3, 8), double_conv(8, 16), double_conv(16, 32)
        self.dec2, self.dec1 = double_conv(32 + 16, 16), double_conv(16 + 8, 8)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.out = nn.Conv2d(8, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        m = self.mid(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up(m), e2], 1))
        d1 = self.dec1(torch.cat([self.up(d2), e1], 1))
        return self.out(d1)


# ---------------------------------------------------------------- Transformer encoder

class EncoderBlock(nn.Module):
    """Post-LN encoder block (nn.TransformerEncoderLayer's order) written out so the
    graph shows MatMul/Softmax/Transpose; the FFN uses ReLU because GELU exports as
    Erf, which Arm NN has no exact lowering for."""

    def __init__(self, dim=32, heads=4, ffn=64):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, ffn), nn.ReLU(), nn.Linear(ffn, dim))

    def forward(self, x):
        b, t, d = x.shape
        split = lambda y: y.view(b, t, self.heads, d // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        att = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = self.norm1(x + self.o(y))
        return self.norm2(x + self.ffn(x))


class TransformerSmall(nn.Module):
    def __init__(self, blocks=2):
        super().__init__()
        self.blocks = nn.Sequential(*(EncoderBlock() for _ in range(blocks)))

    def forward(self, x):
        return self.blocks(x)


# ---------------------------------------------------------------- dynamic batch CNN

class DynamicBatchCNN(nn.Module):
    """Shapes are read from the tensor at run time, so with a dynamic batch axis the
    exporter keeps the Shape -> Gather -> (Mul) -> Unsqueeze -> Concat -> Reshape chains."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(conv_bn(3, 16), nn.MaxPool2d(2), conv_bn(16, 32, 3, 2), nn.MaxPool2d(2))
        self.fc = nn.Linear(32 * 5 * 6 + 32, classes)

    def forward(self, x):
        x = self.features(x)
        b, c, h, w = x.shape
        pooled = x.reshape(b, c, h * w).mean(2)
        return self.fc(torch.cat([x.view(x.size(0), -1), pooled], 1))


# ---------------------------------------------------------------- torch.nn.TransformerEncoderLayer

class TorchEncoderLayer(nn.Module):
    """torch's own nn.TransformerEncoderLayer (nn.MultiheadAttention inside): the exporter
    unflattens the packed QKV projection to 5-D and splits it on the leading axis."""

    def __init__(self, explicit_attention=False):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                                batch_first=True)
        self.explicit = explicit_attention

    def forward(self, x):
        layer = self.layer
        if self.explicit:  # the layer's own forward, but with need_weights=True: no SDPA (exports from opset 14)
            x = layer.norm1(x + layer.self_attn(x, x, x, need_weights=True)[0])
            return layer.norm2(x + layer._ff_block(x))
        return layer(x)


# ---------------------------------------------------------------- YOLO-style detection head

class YoloHead(nn.Module):
    """A YOLOv5-style Detect head on a small backbone: (B, A*(5+C), H, W) viewed as
    (B, A, 5+C, H, W), permuted to (B, A, H, W, 5+C), sigmoid, box decoding on slices of
    the last axis with a grid and anchors, concatenated and flattened to (B, A*H*W, 5+C);
    plus the YOLOv3-style objectness read from the 5-D view before the permute."""

    def __init__(self, anchors=((10, 13), (16, 30), (33, 23)), classes=4, stride=8):
        super().__init__()
        self.na, self.no, self.stride = len(anchors), 5 + classes, stride
        self.backbone = nn.Sequential(conv_bn(3, 16, 3, 2), conv_bn(16, 16, 3, 2), conv_bn(16, 16, 3, 2))
        self.head = nn.Conv2d(16, self.na * self.no, 1)
        self.register_buffer("anchor_grid", torch.tensor(anchors, dtype=torch.float32).view(1, self.na, 1, 1, 2))

    def forward(self, x):
        p = self.head(self.backbone(x))
        b, _, h, w = p.shape
        raw = p.view(b, self.na, self.no, h, w)
        objectness = raw[:, :, 4].sigmoid()
        y = raw.permute(0, 1, 3, 4, 2).contiguous().sigmoid()
        gy, gx = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32),
                                indexing="ij")
        grid = torch.stack((gx, gy), 2).view(1, 1, h, w, 2)
        xy = (y[..., 0:2] * 2 - 0.5 + grid) * self.stride
        wh = (y[..., 2:4] * 2) ** 2 * self.anchor_grid
        out = torch.cat((xy, wh, y[..., 4:]), -1)
        return out.view(b, -1, self.no), objectness


# ---------------------------------------------------------------- export

MODELS = {
    # name: (constructor, input shape, opset, architecture, exercises)
    "resnet_small": (ResNetSmall, (1, 3, 40, 48), 13, "ResNet-18 layout, widths 16/32/64/96",
                     ["Conv+BatchNormalization folding", "residual Add", "MaxPool with pads",
                      "GlobalAveragePool", "Flatten", "Gemm"]),
    "mobilenetv2_small": (MobileNetV2Small, (1, 3, 40, 48), 13, "MobileNetV2, narrowed and shortened",
                          ["depthwise Conv (group=C)", "ReLU6 as Clip with min/max inputs",
                           "inverted residual Add", "BatchNormalization", "Gemm"]),
    "squeezenet_small": (SqueezeNetSmall, (1, 3, 40, 48), 13, "SqueezeNet 1.1, half width",
                         ["Fire modules: Concat on channels", "MaxPool ceil_mode=1", "Conv with bias",
                          "GlobalAveragePool", "Flatten"]),
    "shufflenetv2_small": (ShuffleNetV2Small, (1, 3, 40, 48), 13, "ShuffleNetV2, 3 short stages",
                           ["channel shuffle: 5-D Reshape/Transpose/Reshape",
                            "chunk as Slice with Shape/Gather/Add/Div/Mul bounds",
                            "Concat", "depthwise Conv stride 2", "ReduceMean over H,W", "Gemm"]),
    "deeplab_aspp": (DeepLabSmall, (1, 3, 40, 48), 13, "DeepLabV3-style ASPP segmentation head",
                     ["dilated Conv (dilation 2 and 4)", "bilinear Resize x4 (asymmetric)",
                      "Resize from 1x1 with sizes from a Shape/Slice/Concat chain",
                      "GlobalAveragePool branch", "Concat", "BatchNormalization"]),
    "unet_small": (UNetSmall, (1, 3, 40, 48), 17, "U-Net, two levels",
                   ["nearest Resize x2 (asymmetric, floor)", "skip Concat", "MaxPool 2x2",
                    "BatchNormalization"]),
    "transformer_encoder": (TransformerSmall, (1, 12, 32), 17,
                            "two post-LN transformer encoder blocks, 4 heads, ReLU FFN",
                            ["MatMul with constant weights (3-D)", "MatMul of two activations",
                             "multi-head Reshape/Transpose", "Softmax on the last axis",
                             "LayerNormalization",
                             "Div by a scalar that is Pow of two Constants (needs folding)"]),
    "cnn_dynamic_batch": (DynamicBatchCNN, ("batch", 3, 40, 48), 13,
                          "small CNN classifier with a dynamic batch axis",
                          ["Shape/Gather/Unsqueeze/Concat/Reshape chains", "Mul on shape values",
                           "dynamic batch dimension", "ReduceMean", "Concat", "Gemm"]),
}
# torch.nn modules whose exports have 5-D intermediates (issue 17), each at opset 13, 17 and
# with a dynamic batch axis
_TRANSFORMER = ("torch.nn.TransformerEncoderLayer (d_model 32, 4 heads, ReLU FFN 64, batch_first)",
                ["packed QKV unflattened to 5-D", "Gather on the leading axis of the 5-D/4-D projection",
                 "5-D Transpose/Squeeze", "MatMul of two activations", "Softmax", "LayerNormalization"])
_YOLO = ("YOLOv5-style Detect head (3 anchors, 4 classes) on a 3-conv backbone",
         ["(B, A, 5+C, H, W) Reshape", "5-D Transpose and Sigmoid", "Slice of the last axis of a 5-D tensor",
          "5-D Mul/Add/Pow with grid and anchor constants", "5-D Concat", "Gather on axis 2 of a 5-D tensor"])
for _tag, _shape0, _opset in (("op13", 1, 13), ("op17", 1, 17), ("dynamic", "batch", 17)):
    _ctor = (lambda: TorchEncoderLayer(explicit_attention=True)) if _opset < 14 else TorchEncoderLayer
    _arch = _TRANSFORMER[0] + (", attention with need_weights=True (SDPA exports from opset 14)" if _opset < 14 else "")
    MODELS[f"torch_encoder_layer_{_tag}"] = (_ctor, (_shape0, 8, 32), _opset, _arch, _TRANSFORMER[1])
    MODELS[f"yolo_head_{_tag}"] = (YoloHead, (_shape0, 3, 32, 32), _opset) + _YOLO


# ---------------------------------------------------------------- recurrent layers

class Recurrent(nn.Module):
    """A torch.nn LSTM / GRU / RNN returning every output (sequence, last h, last c);
    with `states`, the initial states are inputs of the model."""

    def __init__(self, kind, states=False, **kw):
        super().__init__()
        self.kind, self.states = kind, states
        self.rnn = getattr(nn, kind)(input_size=8, hidden_size=16, **kw)

    def forward(self, x, *states):
        if self.kind == "LSTM":
            y, (h, c) = self.rnn(x, tuple(states) if states else None)
            return y, h, c
        y, h = self.rnn(x, states[0] if states else None)
        return y, h


# name: (Recurrent arguments, input shape (sequence 5, "batch" = dynamic), opset, exercises)
RECURRENT = {
    "lstm_2layer_bidir": (dict(kind="LSTM", num_layers=2, bidirectional=True), (5, 2, 8), 13,
                          ["LSTM bidirectional, 2 layers", "zero initial states", "Y, Y_h, Y_c"]),
    "lstm_batch_first_states": (dict(kind="LSTM", batch_first=True, states=True), (2, 5, 8), 17,
                                ["LSTM batch_first (Transpose around layout 0)", "initial_h/initial_c inputs"]),
    "lstm_dynamic_batch": (dict(kind="LSTM", batch_first=True, bidirectional=True), ("batch", 5, 8), 17,
                           ["LSTM with a dynamic batch axis (static sequence length)", "bidirectional"]),
    "gru_2layer_bidir": (dict(kind="GRU", num_layers=2, bidirectional=True, batch_first=True), (2, 5, 8), 17,
                         ["GRU linear_before_reset=1", "bidirectional, 2 layers", "batch_first"]),
    "gru_states": (dict(kind="GRU", states=True), (5, 3, 8), 13, ["GRU", "initial_h input"]),
    "gru_dynamic_batch": (dict(kind="GRU", batch_first=True), ("batch", 5, 8), 13,
                          ["GRU with a dynamic batch axis (static sequence length)"]),
    "rnn_relu_bidir": (dict(kind="RNN", nonlinearity="relu", bidirectional=True, num_layers=2), (5, 2, 8), 13,
                       ["RNN with Relu", "bidirectional, 2 layers"]),
    "rnn_tanh_dynamic_batch": (dict(kind="RNN", batch_first=True), ("batch", 5, 8), 17,
                               ["RNN with Tanh", "dynamic batch axis"]),
}


def generate_recurrent(name, out_dir, seed):
    kw, shape, opset, exercises = RECURRENT[name]
    torch.manual_seed(seed)
    model = Recurrent(**kw).eval()
    rnn = model.rnn
    run_shape = tuple(1 if isinstance(d, str) else d for d in shape)
    batch = run_shape[0] if rnn.batch_first else run_shape[1]
    rng = np.random.default_rng(seed)
    inputs = {"input": rng.standard_normal(run_shape).astype(np.float32)}
    state_shape = (rnn.num_layers * (2 if rnn.bidirectional else 1), batch, rnn.hidden_size)
    if kw.get("states"):
        inputs["h0"] = rng.standard_normal(state_shape).astype(np.float32) * 0.5
        if kw["kind"] == "LSTM":
            inputs["c0"] = rng.standard_normal(state_shape).astype(np.float32) * 0.5
    outputs = ["output", "h_n"] + (["c_n"] if kw["kind"] == "LSTM" else [])
    dynamic = None
    if isinstance(shape[0], str):
        dynamic = {"input": {0: "batch"}, "output": {0: "batch"}} | {o: {1: "batch"} for o in outputs[1:]}
    buf = io.BytesIO()
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    torch.onnx.export(model, args, buf, dynamo=False, opset_version=opset, do_constant_folding=True,
                      input_names=list(inputs), output_names=outputs, dynamic_axes=dynamic)
    proto = onnx.shape_inference.infer_shapes(onnx.load_from_string(buf.getvalue()), strict_mode=True)
    onnx.checker.check_model(proto, full_check=True)
    with torch.no_grad():  # the export must agree with the module it came from
        expected = [t.numpy() for t in model(*args)]
    path = out_dir / f"{name}.onnx"
    onnx.save(proto, path)
    got = ort_session(str(path)).run(None, inputs)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)
    arrays = {f"input_{i}": v for i, v in enumerate(inputs.values())} | {f"output_{i}": o for i, o in enumerate(got)}
    save_npz(out_dir / f"{name}.npz", arrays)
    arch = f"torch.nn.{kw['kind']}(8, 16" + "".join(f", {k}={v}" for k, v in kw.items() if k not in ("kind", "states"))
    return {
        "name": name, "file": path.name, "data": f"{name}.npz", "architecture": arch + "), sequence length 5",
        "exercises": exercises, "opset": opset, "seed": seed,
        "inputs": [value_info(v) for v in proto.graph.input],
        "outputs": [value_info(v) for v in proto.graph.output],
        "op_types": sorted({n.op_type for n in proto.graph.node}),
        "size_bytes": path.stat().st_size,
    }


MODELS.update({k: None for k in RECURRENT})  # made by generate_recurrent


# ---------------------------------------------------------------- operators of early opsets

class LegacyOps(nn.Module):
    """At opset 8: hardtanh as Clip-6 (min/max attributes), nearest Upsample-7 (a scales
    attribute), global pooling (made GlobalLpPool p=2 after export: torch has none), a Linear
    (Gemm), and Softmax-1 (its 2-D coercion of the input)."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2, self.fc = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, 2, 1), nn.Linear(8, 5)

    def forward(self, x):
        y = F.interpolate(F.hardtanh(self.c1(x), -0.5, 1.0), size=(32, 32), mode="nearest")  # (x2: opset 8 takes a fixed size)
        z = self.fc(torch.flatten(F.adaptive_avg_pool2d(self.c2(y), 1), 1))
        return F.softmax(z, 1)  # (LogSoftmax-1 needs --target 20.08: a model of its own)


class Resize10(nn.Module):
    """At opset 10: nearest interpolation x2 as Resize-10 (scales input, asymmetric)."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return F.interpolate(self.c(x), scale_factor=2, mode="nearest")


class LogSoftmax12(nn.Module):
    """At opset 12: a Linear and LogSoftmax-1 (2-D coercion), which needs --target 20.08."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 6)

    def forward(self, x):
        return F.log_softmax(self.fc(x) * 2.0, 1)


def global_lp_pool(model):
    """GlobalAveragePool -> GlobalLpPool(p=2): the reference outputs are onnxruntime's, after this."""
    for n in model.graph.node:
        if n.op_type == "GlobalAveragePool":
            n.op_type = "GlobalLpPool"
            n.attribute.append(onnx.helper.make_attribute("p", 2))


# (after the others: a model's seed is its place in MODELS)
MODELS.update({
    "legacy_ops_op8": (LegacyOps, (1, 3, 16, 16), 8, "conv, clip, upsample, conv, global Lp pool, linear, softmax",
                       ["Clip-6 (min/max attributes)", "Upsample-7 nearest x2 (scales attribute)",
                        "GlobalLpPool p=2", "Softmax-1 (2-D coercion)", "Gemm",
                        "initializers listed as graph inputs (opset 8's IR version)"]),
    "resize_op10": (Resize10, (1, 3, 12, 14), 10, "conv, nearest resize x2",
                    ["Resize-10 nearest (scales input)"]),
    "log_softmax_op12": (LogSoftmax12, (3, 12), 12, "linear, log-softmax",
                         ["LogSoftmax-1 (2-D coercion; --target 20.08)", "Gemm", "Mul by a scalar"]),
})

def strip_initializer_identities(model):
    """TrainingMode.PRESERVE (needed to keep BatchNormalization unfused) wraps some
    parameters in Identity nodes; point their consumers at the initializer instead."""
    g = model.graph
    inits = {t.name for t in g.initializer}
    alias = {n.output[0]: n.input[0] for n in g.node if n.op_type == "Identity" and n.input[0] in inits}
    keep = [n for n in g.node if not (n.op_type == "Identity" and n.output[0] in alias)]
    for n in keep:
        n.input[:] = [alias.get(i, i) for i in n.input]
    del g.node[:]
    g.node.extend(keep)


def make_asymmetric(model):
    """Arm NN's ResizeBilinear samples at out_index * in/out (align_corners=false,
    half_pixel=false); torch only exports half_pixel, so set the mode explicitly."""
    for n in model.graph.node:
        if n.op_type == "Resize":
            for a in n.attribute:
                if a.name == "coordinate_transformation_mode":
                    a.s = b"asymmetric"


#: graph edits made after the export is checked against torch
PATCHES = {"deeplab_aspp": make_asymmetric, "legacy_ops_op8": global_lp_pool}  # after the torch check


def ort_session(path_or_bytes):
    opts = ort.SessionOptions()
    # Unoptimized, single-threaded: outputs follow the ONNX graph as written.
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(path_or_bytes, opts, providers=["CPUExecutionProvider"])


def generate(name, out_dir, seed):
    if name in RECURRENT:
        return generate_recurrent(name, out_dir, seed)
    ctor, shape, opset, arch, exercises = MODELS[name]
    torch.manual_seed(seed)
    model = randomize(ctor(), seed)
    run_shape = tuple(1 if isinstance(d, str) else d for d in shape)
    with torch.no_grad():
        n_out = len(model(torch.zeros(run_shape))) if isinstance(model(torch.zeros(run_shape)), tuple) else 1
    names = ["output"] + [f"output_{i}" for i in range(1, n_out)]
    dynamic = ({"input": {0: "batch"}} | {n: {0: "batch"} for n in names}) if isinstance(shape[0], str) else None
    buf = io.BytesIO()
    torch.onnx.export(model, (torch.zeros(run_shape),), buf, dynamo=False, opset_version=opset,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=True,
                      input_names=["input"], output_names=names, dynamic_axes=dynamic)
    proto = onnx.load_from_string(buf.getvalue())
    strip_initializer_identities(proto)
    x = np.random.default_rng(seed).standard_normal(run_shape).astype(np.float32)
    with torch.no_grad():  # the export must agree with the module it came from
        expected = model(torch.from_numpy(x))
    expected = [e.numpy() for e in (expected if isinstance(expected, tuple) else (expected,))]
    for got, want in zip(ort_session(proto.SerializeToString()).run(None, {"input": x}), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
    if name in PATCHES:
        PATCHES[name](proto)
    proto = onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    onnx.checker.check_model(proto, full_check=True)
    path = out_dir / f"{name}.onnx"
    onnx.save(proto, path)
    outputs = ort_session(str(path)).run(None, {"input": x})
    arrays = {"input_0": x} | {f"output_{i}": o for i, o in enumerate(outputs)}
    save_npz(out_dir / f"{name}.npz", arrays)
    inits = {t.name for t in proto.graph.initializer}  # (graph inputs too before IR version 4)
    return {
        "name": name, "file": path.name, "data": f"{name}.npz", "architecture": arch, "exercises": exercises,
        "opset": opset, "seed": seed,
        "inputs": [value_info(v) for v in proto.graph.input if v.name not in inits],
        "outputs": [value_info(v) for v in proto.graph.output],
        "op_types": sorted({n.op_type for n in proto.graph.node}),
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
    for seed, name in enumerate(MODELS):
        if args.only and name not in args.only:
            continue
        start = time.perf_counter()
        entries[name] = generate(name, args.out, seed)
        e = entries[name]
        print(f"{name}: {e['size_bytes'] / 1e6:.2f} MB, opset {e['opset']}, {time.perf_counter() - start:.1f} s, "
              f"ops {' '.join(e['op_types'])}")
    manifest = {"generator": "scripts/gen_onnx_models.py", "torch": torch.__version__.split("+")[0],
                "onnxruntime": ort.__version__,
                # (in the manifest's order, new ones last; --only keeps the entries other
                # generators wrote, gen_attention_models.py's)
                "models": list(entries.values())}
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
