#!/usr/bin/env python3
"""Generate the Keras-layer reference models of the Keras sweep (docs/keras-sweep.md) into
test_models/tflite/models (entries in its manifest.json).

    /tmp/venv-with-tensorflow/bin/python scripts/gen_keras_layer_models.py ['REGEX of name.mode']
(TensorFlow 2.21 is needed here only). The int8 calibration is not bit-reproducible from run to
run (keras_bilstm_unroll_seq.int8 came out with other scales): regenerate only what you change.

Each is one model of scripts/gen_keras_sweep.py (same seeded weights, same converter mode),
stored as models/keras_<name>.<mode>.tflite with a .npz of seeded inputs and LiteRT's outputs
(reference kernels, BUILTIN_REF; variables reset first). REFS says what each one pins.
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_keras_sweep import build, convert  # noqa: E402
from reference_io import merge_manifest, save_npz, seed_of  # noqa: E402

# (sweep model, converter mode, builtin operators it is there for, note)
REFS = [
    # Keras 3 Dense on a 3-D input (dynamic batch): SHAPE -> GATHER -> REDUCE_PROD sizes its RESHAPE
    ("layernorm", "float32", ["REDUCE_PROD", "SHAPE", "MEAN"],
     "Keras 3 Dense(8) on (batch, 6, 8) + LayerNormalization: REDUCE_PROD of the input's SHAPE"),
    ("reshape_permute_flatten", "float32", ["REDUCE_PROD", "TRANSPOSE"],
     "Keras 3 Reshape((4, 6)) + Permute((2, 1)) + Dense(3) + Flatten + Dense(5), dynamic batch"),
    ("global_max_pool1d", "int8", ["REDUCE_PROD", "REDUCE_MAX"],
     "Keras 3 Dense(6) on (batch, 9, 4) + GlobalMaxPooling1D in full int8"),
    ("tf_argmax", "float32", ["ARG_MAX"],
     "tf.argmax(x, axis=-1) with its default int64 indices: Signed32 from --target 20.08 on"),
    ("conv_big", "16x8", ["CONV_2D"],
     "Keras Conv2D(16, 3) x 2 in the converter's 16x8 mode (int16 activations, int8 weights, int64 "
     "biases, float I/O): refused by the 19.02 format; from --target 20.08 on, float layers on the int16 grid"),
    ("gru_unroll_last", "16x8", ["FULLY_CONNECTED", "LOGISTIC", "TANH"],
     "Keras 3 GRU(6, unroll=True) in the 16x8 mode: the recurrent FULLY_CONNECTEDs share one int64 bias "
     "whose recorded scale fits the first step's input only (LiteRT adds the raw values); int16 "
     "LOGISTIC/TANH are LiteRT lookup tables"),
    ("embedding", "float32", ["SELECT_V2", "GATHER"],
     "Keras 3 Embedding(30, 8) + GlobalAveragePooling1D + Dense(4): its negative ids wrap by "
     "SELECT_V2(LESS(ids, 0), ADD(ids, 30), ids) before the GATHER; ids in [-30, 30)"),
    ("embedding", "int8floatio", ["SELECT_V2", "GATHER"],
     "the same, int8 inside with float output (int32 ids)"),
    ("bilstm_unroll_seq", "float32", ["REVERSE_V2"],
     "Keras 3 Bidirectional(LSTM(5, return_sequences=True, unroll=True)): the backward sequence "
     "reversed by REVERSE_V2 (a constant-index selection before the 23.08 format)"),
    ("bilstm_unroll_seq", "int8", ["REVERSE_V2"],
     "the same in full int8: its REVERSE_V2 has another output quantization, and LiteRT copies the bytes"),
    ("gru_seq", "float32", ["WHILE"],
     "Keras 3 GRU(6, return_sequences=True): a WHILE loop, refused with the unroll=True hint"),
    ("lstm_last", "fp16w", ["WHILE", "DEQUANTIZE"],
     "Keras 3 LSTM(6) with float16 weights: a WHILE loop whose zero start states are DEQUANTIZEs of "
     "float16 constants (the first unrolled step reads them as Constant layers)"),
]


def _info(d) -> dict:
    qp = d["quantization_parameters"]
    quant = None if len(qp["scales"]) == 0 else {"scale": qp["scales"].tolist(),
                                                 "zero_point": qp["zero_points"].tolist()}
    return {"name": d["name"], "shape": [int(s) for s in d["shape"]], "dtype": np.dtype(d["dtype"]).name,
            "quantization": quant}


def _reference(buf: bytes, key: str, vocab=None):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_content=buf, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    it.reset_all_variables()
    rng = np.random.default_rng(seed_of(key, "inputs"))
    inputs = [_sample(rng, d, vocab) for d in it.get_input_details()]
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    outs = [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]
    ops = [d["op_name"] for d in it._get_ops_details() if d["index"] < _main_ops(buf)]
    return it, inputs, outs, ops


def _sample(rng, d, vocab=None):
    """N(0, 1), quantized with the input's own scale and zero point for an int8 input; token ids
    in [-vocab, vocab) for an int32 input (negative ones count from the end, as Keras 3 takes them)."""
    if d["dtype"] == np.int32:
        return rng.integers(-vocab, vocab, d["shape"]).astype(np.int32)
    x = rng.standard_normal(d["shape"]).astype(np.float32)
    if d["dtype"] == np.float32:
        return x
    scale, zp = d["quantization"]
    return np.clip(np.round(x / scale) + zp, -128, 127).astype(np.int8)


def _main_ops(buf: bytes) -> int:
    """The number of operators of subgraph 0 (the interpreter lists the WHILE bodies' too)."""
    import tflite
    return tflite.Model.GetRootAsModel(buf, 0).Subgraphs(0).OperatorsLength()


def main() -> None:
    import keras
    import tensorflow as tf
    out_dir = ROOT / "test_models" / "tflite"
    entries = []
    only = sys.argv[1] if len(sys.argv) > 1 else ""  # a regex of "name.mode": regenerate those only
    for name, mode, tests, note in REFS:
        if only and not re.search(only, f"{name}.{mode}"):
            continue
        model, shapes, vocab = build(tf, keras, name)
        buf = convert(tf, model, name, shapes, vocab, mode)
        stem = f"models/keras_{name}.{mode}"
        it, inputs, outs, ops = _reference(buf, stem, vocab)
        assert set(tests) <= set(ops), (name, ops)
        (out_dir / f"{stem}.tflite").write_bytes(buf)
        save_npz(out_dir / f"{stem}.npz", {f"input_{i}": a for i, a in enumerate(inputs)} |
                 {f"output_{i}": o for i, o in enumerate(outs)})
        entries.append({"file": f"{stem}.tflite", "expected": f"{stem}.npz", "name": f"keras_{name}", "kind": "model",
                        "variant": mode, "tests": tests, "origin": "converter", "note": note,
                        "resolver": "BUILTIN_REF", "generator": "scripts/gen_keras_layer_models.py",
                        "size": len(buf), "sha256": hashlib.sha256(buf).hexdigest(),
                        "inputs": [_info(d) for d in it.get_input_details()],
                        "outputs": [_info(d) for d in it.get_output_details()], "builtin_ops": ops})
        print(f"tflite/{stem}: {len(buf)} bytes, ops {' '.join(ops)}")
    merge_manifest(out_dir / "manifest.json", entries, "file")


if __name__ == "__main__":
    main()
