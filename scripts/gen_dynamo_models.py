#!/usr/bin/env python3
"""Generate the reference models exported by torch's dynamo exporter (torch.onnx.export with its
default dynamo=True, onnxscript; the exporter's default opset).

    /opt/genvenv/bin/python scripts/gen_dynamo_models.py     # torch: here only

ONNX (test_models/onnx, entries in its manifest.json; references from onnxruntime with graph
optimizations off, checked against torch):
  dynamo_lstm         torch.nn.LSTM(8, 16), batch_first, sequence 5
  dynamo_gru_bidir    torch.nn.GRU(8, 16, bidirectional=True), batch_first, sequence 5
  dynamo_encoder      torch.nn.TransformerEncoderLayer(16, 2, 32) (ReLU, post-norm), sequence 6:
                      the dynamo decompositions of multi-head attention and LayerNorm
  dynamo_conv_block   Conv1d, ConvTranspose2d, GroupNorm, PixelShuffle, bilinear and nearest
                      Upsample in one small network
  dynamo_encoder_op23, dynamo_conv_block_op23
                      the same two at opset_version=23: attention as one Attention-23 node, GroupNorm
                      as GroupNormalization-21 (per-channel scale and bias)
Seeds are fixed; re-running gives the same files (the exporter's bytes depend on the torch version,
recorded in each entry).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference_io import merge_manifest, onnx_value_info, run_ort, save_npz  # noqa: E402


def _networks():
    import torch
    from torch import nn

    class First(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x)[0]

    class ConvBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1d = nn.Conv1d(4, 8, 3, padding=1)
            self.up = nn.ConvTranspose2d(2, 8, 3, stride=2, padding=1, output_padding=1)
            self.norm = nn.GroupNorm(2, 8)
            self.shuffle = nn.PixelShuffle(2)

        def forward(self, x):  # x: (1, 4, 16)
            y = torch.relu(self.conv1d(x)).reshape(1, 2, 8, 8)
            y = self.norm(self.up(y))                       # (1, 8, 16, 16)
            y = self.shuffle(y)                             # (1, 2, 32, 32)
            a = nn.functional.interpolate(y, scale_factor=0.5, mode="bilinear")
            b = nn.functional.interpolate(y[:, :, ::4, ::4], scale_factor=2, mode="nearest")
            return a + b

    return {
        "dynamo_lstm": (lambda: First(nn.LSTM(8, 16, batch_first=True)), (1, 5, 8),
                        "torch.nn.LSTM(8, 16, batch_first=True), sequence length 5",
                        ["LSTM (opset 20) with the dynamo exporter's Transpose/Squeeze around it"]),
        "dynamo_gru_bidir": (lambda: First(nn.GRU(8, 16, bidirectional=True, batch_first=True)), (1, 5, 8),
                             "torch.nn.GRU(8, 16, bidirectional=True, batch_first=True), sequence length 5",
                             ["GRU bidirectional, linear_before_reset=1"]),
        "dynamo_encoder": (lambda: nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True), (1, 6, 16),
                           "torch.nn.TransformerEncoderLayer(16, 2, 32), batch_first, sequence length 6",
                           ["scaled dot-product attention as the dynamo exporter decomposes it",
                            "LayerNormalization", "MatMul of two run-time tensors"]),
        "dynamo_conv_block": (ConvBlock, (1, 4, 16),
                              "Conv1d, ConvTranspose2d, GroupNorm, PixelShuffle, bilinear/nearest Upsample",
                              ["Conv 1-D", "ConvTranspose output_padding", "GroupNorm as the exporter writes it (InstanceNormalization, Mul, Add)",
                               "DepthToSpace CRD", "Resize linear half_pixel 0.5x", "Resize nearest 2x"]),
    }


def gen_onnx(out_dir: Path) -> None:
    import onnx
    import torch

    entries = []
    nets = _networks()
    for base, extra in (("dynamo_encoder", ["Attention-23 (its function body)"]),
                        ("dynamo_conv_block", ["GroupNormalization-21"])):
        make, shape, arch, _ = nets[base]
        nets[f"{base}_op23"] = (make, shape, arch + " (opset_version=23)", extra)
    for seed, (name, (make, shape, arch, exercises)) in enumerate(nets.items(), start=60):
        torch.manual_seed(seed)
        model = make().eval()
        x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        kw = {"opset_version": 23} if name.endswith("_op23") else {}
        prog = torch.onnx.export(model, (torch.from_numpy(x),), dynamo=True, input_names=["input"],
                                 output_names=["output"], **kw)
        proto = prog.model_proto
        # the exporter records each node's Python stack (file paths, line numbers) and torch's
        # names as metadata: dropped, so that the files do not depend on where this script runs
        for item in [proto, proto.graph, *proto.graph.node, *proto.graph.value_info, *proto.graph.input,
                     *proto.graph.output, *proto.graph.initializer]:
            del item.metadata_props[:]
        proto = onnx.shape_inference.infer_shapes(proto, strict_mode=True)
        onnx.checker.check_model(proto, full_check=True)
        got = run_ort(proto.SerializeToString(), {"input": x})[0]
        with torch.no_grad():
            np.testing.assert_allclose(got, model(torch.from_numpy(x)).numpy(), rtol=1e-4, atol=1e-5)
        path = out_dir / f"{name}.onnx"
        onnx.save(proto, path)
        save_npz(out_dir / f"{name}.npz", {"input_0": x, "output_0": got})
        ops = sorted({n.op_type for n in proto.graph.node})
        opset = next(o.version for o in proto.opset_import if o.domain == "")
        entries.append({
            "name": name, "file": path.name, "data": f"{name}.npz", "architecture": arch,
            "exercises": exercises, "opset": opset, "seed": seed, "generator": "scripts/gen_dynamo_models.py",
            "exporter": f"torch {torch.__version__} torch.onnx.export(dynamo=True)",
            "inputs": [onnx_value_info(v) for v in proto.graph.input],
            "outputs": [onnx_value_info(v) for v in proto.graph.output],
            "op_types": ops, "size_bytes": path.stat().st_size,
        })
        print(f"onnx/{name}: {path.stat().st_size} bytes, opset {opset}, ops {' '.join(ops)}")
    merge_manifest(out_dir / "manifest.json", entries, "name")


if __name__ == "__main__":
    gen_onnx(ROOT / "test_models" / "onnx")
