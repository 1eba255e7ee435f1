#!/usr/bin/env python3
"""Generate the embedding, attention and ArgMax reference models (issue 16).

    /opt/genvenv/bin/python scripts/gen_attention_models.py     # torch, TensorFlow: here only

ONNX (test_models/onnx, entries in its manifest.json; references from onnxruntime with graph
optimizations off, checked against torch):
  embedding_transformer  int64 token ids -> nn.Embedding + learned positions ->
                         nn.TransformerEncoder (2 layers, d_model 32, 4 heads, ReLU FFN 64)
  attention_block        one self-attention head block written out: Q.K^T and softmax.V are
                         MatMuls of two run-time tensors
  argmax_classifier      an MLP classifier ending in ArgMax (int64 class ids)
TFLite (test_models/tflite/models, entries in its manifest.json; references from the TFLite
interpreter with the reference kernels, BUILTIN_REF):
  embedding_keras        keras Embedding on int32 token ids: GATHER with run-time indices
  batch_matmul           tf.matmul of two run-time tensors, plain and with adjoint_b: BATCH_MATMUL
  argmax_head            Dense + ARG_MAX (output_type int32)
  cast_roundtrip         CAST float32 -> int32 -> float32 at run time
Every seed is fixed; re-running gives the same files.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference_io import merge_manifest, onnx_entry, save_npz, torch_export_checked  # noqa: E402

VOCAB, DIM, SEQ = 50, 32, 12


# ------------------------------------------------------------------------------ ONNX (torch)

def _torch_models():
    import torch
    from torch import nn

    class EmbeddingTransformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, DIM)
            self.pos = nn.Parameter(torch.randn(1, SEQ, DIM) * 0.1)
            layer = nn.TransformerEncoderLayer(DIM, 4, 64, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

        def forward(self, ids):
            return self.encoder(self.embed(ids) + self.pos)

    class AttentionBlock(nn.Module):
        def __init__(self, dim=16):
            super().__init__()
            self.q, self.k, self.v = (nn.Linear(dim, dim) for _ in range(3))
            self.scale = dim ** -0.5

        def forward(self, x):
            att = torch.softmax(torch.matmul(self.q(x), self.k(x).transpose(-1, -2)) * self.scale, dim=-1)
            return torch.matmul(att, self.v(x))

    class ArgMaxClassifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.mlp = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 10))

        def forward(self, x):
            return torch.argmax(self.mlp(x), dim=-1)

    rng = np.random.default_rng(7)
    return {
        "embedding_transformer": (EmbeddingTransformer, rng.integers(0, VOCAB, (1, SEQ)).astype(np.int64), 17,
                                  "nn.Embedding(50, 32) + learned positions + nn.TransformerEncoder "
                                  "(2 x TransformerEncoderLayer(32, 4 heads, ReLU FFN 64), batch_first)",
                                  ["int64 token ids as a Signed32 input", "Gather with run-time indices",
                                   "MatMul of two activations (attention)", "Softmax", "LayerNormalization"]),
        "attention_block": (AttentionBlock, rng.standard_normal((2, 8, 16)).astype(np.float32), 17,
                            "one self-attention head: softmax(Q K^T / sqrt(d)) V",
                            ["MatMul of two run-time tensors (Q.K^T, softmax.V)", "Transpose", "Softmax"]),
        "argmax_classifier": (ArgMaxClassifier, rng.standard_normal((4, 20)).astype(np.float32), 13,
                              "MLP classifier (20 -> 32 -> 10) ending in ArgMax",
                              ["ArgMax head (int64 output as Signed32)", "Gemm", "Relu"]),
    }


def gen_onnx(out_dir: Path) -> None:
    import onnx
    import torch

    entries = []
    for seed, (name, (ctor, x, opset, arch, exercises)) in enumerate(_torch_models().items(), start=100):
        torch.manual_seed(seed)
        model = ctor().eval()
        proto, got = torch_export_checked(model, x, opset)
        path = out_dir / f"{name}.onnx"
        onnx.save(proto, path)
        save_npz(out_dir / f"{name}.npz", {"input_0": x, "output_0": got})
        entries.append(onnx_entry(name, path, proto, arch, exercises, opset, seed, "scripts/gen_attention_models.py"))
        print(f"onnx/{name}: {path.stat().st_size} bytes, ops {' '.join(entries[-1]['op_types'])}")
    merge_manifest(out_dir / "manifest.json", entries, "name")


# ------------------------------------------------------------------------------ TFLite

def _tf_models():
    import tensorflow as tf

    tf.random.set_seed(11)
    rng = np.random.default_rng(11)

    import tf_keras  # Keras 2: its Embedding is one embedding_lookup (Keras 3's adds a SELECT for
    tf_keras.utils.set_random_seed(11)  # negative ids, which Arm NN has no layer for)
    emb = tf_keras.Sequential([tf_keras.Input((6,), batch_size=2, dtype="int32"),
                               tf_keras.layers.Embedding(VOCAB, 16), tf_keras.layers.Dense(8)])
    head = tf.keras.Sequential([tf.keras.Input((20,), batch_size=3), tf.keras.layers.Dense(10)])

    @tf.function(input_signature=[tf.TensorSpec((2, 4, 8), tf.float32, name="x"),
                                  tf.TensorSpec((2, 8, 5), tf.float32, name="y"),
                                  tf.TensorSpec((2, 3, 8), tf.float32, name="z")])
    def batch_matmul(x, y, z):
        return tf.concat([tf.matmul(x, y), tf.transpose(tf.matmul(x, z, adjoint_b=True), (0, 1, 2))], axis=2)

    @tf.function(input_signature=[tf.TensorSpec((3, 20), tf.float32, name="x")])
    def argmax_head(x):
        return tf.argmax(head(x), axis=-1, output_type=tf.int32)

    @tf.function(input_signature=[tf.TensorSpec((2, 16), tf.float32, name="x")])
    def cast_roundtrip(x):
        return tf.cast(tf.cast(x * 3.0, tf.int32), tf.float32) + x

    return {
        "embedding_keras": (emb, [rng.integers(0, VOCAB, (2, 6)).astype(np.int32)], ["GATHER"],
                            "tf_keras Embedding(50, 16) on int32 token ids + Dense(8)"),
        "batch_matmul": (batch_matmul, [rng.standard_normal(s).astype(np.float32)
                                        for s in ((2, 4, 8), (2, 8, 5), (2, 3, 8))], ["BATCH_MATMUL"],
                         "tf.matmul of two run-time tensors, plain and adjoint_b"),
        "argmax_head": (argmax_head, [rng.standard_normal((3, 20)).astype(np.float32)], ["ARG_MAX"],
                        "Dense(10) + tf.argmax(output_type=int32)"),
        "cast_roundtrip": (cast_roundtrip, [(rng.standard_normal((2, 16)) * 2).astype(np.float32)], ["CAST"],
                           "CAST float32 -> int32 -> float32 (truncation) at run time"),
    }


def _tflite_ops(it) -> list[str]:
    return [d["op_name"] for d in it._get_ops_details()]


def gen_tflite(out_dir: Path) -> None:
    import tensorflow as tf

    entries = []
    for name, (fn, inputs, tests, note) in _tf_models().items():
        conv = tf.lite.TFLiteConverter.from_keras_model(fn) if hasattr(fn, "layers") else \
            tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn)
        buf = conv.convert()
        it = tf.lite.Interpreter(model_content=buf,
                                 experimental_op_resolver_type=tf.lite.experimental.OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
        ops = _tflite_ops(it)
        assert set(tests) <= set(ops), (name, ops)
        for d, a in zip(it.get_input_details(), _order(it, inputs)):
            it.set_tensor(d["index"], a)
        it.invoke()
        outs = [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]
        stem = f"models/{name}.float32"
        path = out_dir / f"{stem}.tflite"
        path.write_bytes(buf)
        arrays = {f"input_{i}": a for i, a in enumerate(_order(it, inputs))} | \
            {f"output_{i}": o for i, o in enumerate(outs)}
        save_npz(out_dir / f"{stem}.npz", arrays)
        info = lambda d: {"name": d["name"], "shape": [int(s) for s in d["shape"]],  # noqa: E731
                          "dtype": np.dtype(d["dtype"]).name, "quantization": None}
        entries.append({"file": f"{stem}.tflite", "expected": f"{stem}.npz", "name": name, "kind": "model",
                        "variant": "float32", "tests": tests, "origin": "converter", "note": note,
                        "resolver": "BUILTIN_REF", "generator": "scripts/gen_attention_models.py",
                        "size": len(buf), "sha256": hashlib.sha256(buf).hexdigest(),
                        "inputs": [info(d) for d in it.get_input_details()],
                        "outputs": [info(d) for d in it.get_output_details()], "builtin_ops": ops})
        print(f"tflite/{stem}: {len(buf)} bytes, ops {' '.join(ops)}")
    merge_manifest(out_dir / "manifest.json", entries, "file")


def _order(it, inputs):
    """The inputs in the interpreter's order (the converter may sort them by name)."""
    details = it.get_input_details()
    if len(inputs) == 1:
        return inputs
    names = ["x", "y", "z"]
    return [inputs[next(k for k, n in enumerate(names) if d["name"].split(":")[0].endswith(n))] for d in details]


if __name__ == "__main__":
    gen_onnx(ROOT / "test_models" / "onnx")
    gen_tflite(ROOT / "test_models" / "tflite")
