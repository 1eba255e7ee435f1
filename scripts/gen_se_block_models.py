#!/usr/bin/env python3
"""Generate the squeeze-and-excitation reference models (ONNX ReduceMean over H,W).

    /opt/genvenv/bin/python scripts/gen_se_block_models.py     # torch: here only

ONNX (test_models/onnx, entries in its manifest.json; references from onnxruntime with graph
optimizations off, checked against torch):
  se_block_op13  conv stem, two SE blocks x * sigmoid(conv(relu(conv(x.mean((2, 3), keepdim=True))))),
                 a head on x.mean((2, 3)) (keepdim=False): ReduceMean with an axes attribute
  se_block_op18  the same network at opset 18: ReduceMean with an axes input
The spatial extents (14x18 = 252, then 7x9 = 63) are not powers of two. Seeds are fixed;
re-running gives the same files.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference_io import merge_manifest, onnx_value_info, save_npz, torch_export_checked  # noqa: E402

SHAPE = (1, 3, 14, 18)


def _network():
    import torch
    from torch import nn

    class SE(nn.Module):
        def __init__(self, c, r=4):
            super().__init__()
            self.down, self.up = nn.Conv2d(c, c // r, 1), nn.Conv2d(c // r, c, 1)

        def forward(self, x):
            return x * torch.sigmoid(self.up(torch.relu(self.down(x.mean((2, 3), keepdim=True)))))

    class SENet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 16, 3, padding=1)
            self.se1 = SE(16)
            self.down = nn.Conv2d(16, 24, 3, stride=2, padding=1)
            self.se2 = SE(24)
            self.head = nn.Linear(24, 10)
            nn.init.normal_(self.head.weight, std=2.0)  # outputs spread well past the comparison tolerance

        def forward(self, x):
            x = self.se1(torch.relu(self.stem(x)))
            x = self.se2(torch.relu(self.down(x)))
            return self.head(x.mean((2, 3)))

    return SENet


def gen_onnx(out_dir: Path) -> None:
    import onnx
    import torch

    entries = []
    x = np.random.default_rng(40).standard_normal(SHAPE).astype(np.float32)
    for seed, opset in ((40, 13), (41, 18)):
        name = f"se_block_op{opset}"
        torch.manual_seed(seed)
        model = _network()().eval()
        proto, got = torch_export_checked(model, x, opset)
        ops = sorted({n.op_type for n in proto.graph.node})
        assert "ReduceMean" in ops, ops
        path = out_dir / f"{name}.onnx"
        onnx.save(proto, path)
        save_npz(out_dir / f"{name}.npz", {"input_0": x, "output_0": got})
        entries.append({
            "name": name, "file": path.name, "data": f"{name}.npz",
            "architecture": "conv stem + two squeeze-and-excitation blocks + mean-pooled Linear head",
            "exercises": [f"ReduceMean over H,W (keepdims 1 and 0; axes as {'an input' if opset >= 18 else 'an attribute'})",
                          "Sigmoid gate Mul broadcast over H,W", "Conv 1x1 on a 1x1 map", "Gemm"],
            "opset": opset, "seed": seed, "generator": "scripts/gen_se_block_models.py",
            "inputs": [onnx_value_info(v) for v in proto.graph.input],
            "outputs": [onnx_value_info(v) for v in proto.graph.output],
            "op_types": ops, "size_bytes": path.stat().st_size,
        })
        print(f"onnx/{name}: {path.stat().st_size} bytes, ops {' '.join(ops)}")
    merge_manifest(out_dir / "manifest.json", entries, "name")


if __name__ == "__main__":
    gen_onnx(ROOT / "test_models" / "onnx")
