#!/usr/bin/env python3
"""Generate the ONNX reference models of masks and run-time gathers (issue 16).

    /opt/genvenv/bin/python scripts/gen_mask_models.py     # torch: here only

test_models/onnx, entries in its manifest.json; references from onnxruntime with graph
optimizations off, checked against torch:
  padded_encoder  nn.TransformerEncoderLayer(16, 2 heads) with a bool src_key_padding_mask input
                  (a bool model input used as numbers: Where of the mask)
  topk_pooling    the 3 highest-scoring positions of a sequence, by torch.topk and torch.gather
                  (GatherElements of indices the network computes)
Every seed is fixed; re-running gives the same files.
"""
from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference_io import merge_manifest, onnx_entry, run_ort, save_npz  # noqa: E402


def _models():
    import torch
    from torch import nn

    class PaddedEncoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)

        def forward(self, x, mask):
            return self.layer(x, src_key_padding_mask=mask)

    class TopKPooling(nn.Module):
        def __init__(self):
            super().__init__()
            self.score = nn.Linear(16, 1)

        def forward(self, x):
            idx = self.score(x).topk(3, dim=1).indices  # [B, 3, 1]
            return torch.gather(x, 1, idx.expand(-1, -1, x.shape[-1]))

    rng = np.random.default_rng(11)
    mask = np.zeros((2, 6), bool)
    mask[1, 4:] = True  # the second sequence is padded after 4 tokens
    return {
        "padded_encoder": (PaddedEncoder, [rng.standard_normal((2, 6, 16)).astype(np.float32), mask], 17,
                           "nn.TransformerEncoderLayer(16, 2 heads, ReLU FFN 32, batch_first) with a bool "
                           "src_key_padding_mask input",
                           ["bool model input used as numbers (uint8 input + Dequantize)", "Where of the mask",
                            "MatMul of two activations", "Softmax", "LayerNormalization"]),
        "topk_pooling": (TopKPooling, [rng.standard_normal((2, 8, 16)).astype(np.float32)], 17,
                         "top-3 positions of a sequence by a learned score: torch.topk + torch.gather",
                         ["GatherElements of run-time indices", "TopK", "Expand of int indices"]),
    }


def main() -> None:
    import onnx
    import torch

    out_dir = ROOT / "test_models" / "onnx"
    entries = []
    for seed, (name, (ctor, xs, opset, arch, exercises)) in enumerate(_models().items(), start=200):
        torch.manual_seed(seed)
        model = ctor().eval()
        names = ["input", "mask"][:len(xs)]
        buf = io.BytesIO()
        torch.onnx.export(model, tuple(torch.from_numpy(x) for x in xs), buf, dynamo=False, opset_version=opset,
                          do_constant_folding=True, input_names=names, output_names=["output"])
        proto = onnx.shape_inference.infer_shapes(onnx.load_from_string(buf.getvalue()), strict_mode=True)
        onnx.checker.check_model(proto, full_check=True)
        want = model(*(torch.from_numpy(x) for x in xs)).detach().numpy()
        got = run_ort(proto.SerializeToString(), dict(zip(names, xs)))[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        path = out_dir / f"{name}.onnx"
        onnx.save(proto, path)
        save_npz(out_dir / f"{name}.npz", {f"input_{i}": x for i, x in enumerate(xs)} | {"output_0": got})
        entries.append(onnx_entry(name, path, proto, arch, exercises, opset, seed, "scripts/gen_mask_models.py"))
        print(f"onnx/{name}: {path.stat().st_size} bytes, ops {' '.join(entries[-1]['op_types'])}")
    merge_manifest(out_dir / "manifest.json", entries, "name")


if __name__ == "__main__":
    main()
