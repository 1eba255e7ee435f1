#!/usr/bin/env python3
"""Generate the TFLite reference models of the last registry entries no model ran (issue 14).

    /opt/genvenv/bin/python scripts/gen_catalogue_models.py     # TensorFlow: here only

test_models/tflite/models, entries in its manifest.json; references from the TFLite interpreter
with the reference kernels (BUILTIN_REF), each checked against TensorFlow before it is written:
  shape_flatten_head  a dynamic-batch flatten (tf.reshape(x, [tf.shape(x)[0], -1])) + Dense + ReLU:
                      SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE's shape (the converter's own output)
  bilstm_keras        tf_keras Bidirectional(LSTM(8, return_sequences=True)). TF 2.21's converter
                      writes it as two UNIDIRECTIONAL_SEQUENCE_LSTM, two REVERSE_V2 and a
                      CONCATENATION; the generator replaces the first four by the one
                      BIDIRECTIONAL_SEQUENCE_LSTM they compute (two outputs, merged by the
                      CONCATENATION: LiteRT's merge_outputs batch-major kernel reads unwritten
                      memory), with the same weight and state tensors ("origin": "patched"), and
                      checks it against the unpatched model and Keras
  rnn_keras           tf_keras SimpleRNN(7, return_sequences=True). The converter writes a WHILE
                      loop; the generator writes the one UNIDIRECTIONAL_SEQUENCE_RNN with the Keras
                      layer's weights (kernel and recurrent kernel transposed: TFLite keeps them
                      [units, in]) and checks it against Keras ("origin": "built")
Every seed is fixed; re-running gives the same files.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "test_models" / "tflite"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference_io import save_npz  # noqa: E402

GENERATOR = "scripts/gen_catalogue_models.py"
B, T, I = 2, 6, 5  # batch, time steps, features: a different size in every dimension


def _fb():
    from tensorflow.lite.python import schema_py_generated as fb
    return fb


def _interpreter(buf):
    import tensorflow as tf
    it = tf.lite.Interpreter(model_content=buf,
                             experimental_op_resolver_type=tf.lite.experimental.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    it.reset_all_variables()  # recurrent state: zeros, as a fresh interpreter's should be
    return it


def run(buf, inputs):
    it = _interpreter(buf)
    for d, a in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], a)
    it.invoke()
    return it, [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def _ops(it):
    return [d["op_name"] for d in it._get_ops_details()]


def _load(buf):
    fb = _fb()
    return fb.ModelT.InitFromObj(fb.Model.GetRootAsModel(buf, 0))


def _save(m) -> bytes:
    import flatbuffers
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _code(m, builtin: int, version: int = 1) -> int:
    """The index of (a new) operator code for `builtin`."""
    fb = _fb()
    for k, c in enumerate(m.operatorCodes):
        if max(c.builtinCode, c.deprecatedBuiltinCode) == builtin and c.version == version:
            return k
    c = fb.OperatorCodeT()
    c.builtinCode, c.deprecatedBuiltinCode, c.version = builtin, min(builtin, 127), version
    m.operatorCodes.append(c)
    return len(m.operatorCodes) - 1


def _compact(m) -> None:
    """Drop the tensors and operator codes no operator or graph edge uses any more."""
    sg = m.subgraphs[0]
    used = sorted({i for op in sg.operators for i in list(op.inputs) + list(op.outputs) if i >= 0}
                  | set(sg.inputs) | set(sg.outputs))
    new = {old: k for k, old in enumerate(used)}
    sg.tensors = [sg.tensors[i] for i in used]
    for op in sg.operators:
        op.inputs = [new[i] if i >= 0 else -1 for i in op.inputs]
        op.outputs = [new[i] for i in op.outputs]
    sg.inputs, sg.outputs = [new[i] for i in sg.inputs], [new[i] for i in sg.outputs]
    for sd in m.signatureDefs or []:
        for tm in list(sd.inputs or []) + list(sd.outputs or []):
            tm.tensorIndex = new[tm.tensorIndex]
    codes = sorted({op.opcodeIndex for op in sg.operators})
    m.operatorCodes = [m.operatorCodes[k] for k in codes]
    for op in sg.operators:
        op.opcodeIndex = codes.index(op.opcodeIndex)


# ------------------------------------------------------------------------------ the models

def shape_flatten_head(rng):
    import tensorflow as tf
    w = tf.constant(rng.standard_normal((4 * 6, 10)).astype(np.float32) * 0.3)
    b = tf.constant(rng.standard_normal(10).astype(np.float32) * 0.1)

    @tf.function(input_signature=[tf.TensorSpec((None, 4, 6), tf.float32, name="x")])
    def fn(x):
        return tf.nn.relu(tf.matmul(tf.reshape(x, tf.stack([tf.shape(x)[0], -1])), w) + b)

    buf = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn).convert()
    x = rng.standard_normal((1, 4, 6)).astype(np.float32)
    _, (got,) = run(buf, [x])
    np.testing.assert_allclose(got, fn(x).numpy(), rtol=1e-5, atol=1e-5)
    return buf, [x], ["SHAPE"], "converter", (
        "dynamic batch [None, 4, 6]: tf.reshape(x, tf.stack([tf.shape(x)[0], -1])) @ W + b, ReLU; SHAPE -> "
        "STRIDED_SLICE -> PACK make the RESHAPE's shape (stored shape batch 1)")


def _keras(layer, seed):
    import tf_keras
    tf_keras.utils.set_random_seed(seed)
    return tf_keras.Sequential([tf_keras.Input((T, I), batch_size=B), layer(tf_keras)])


def _patch_bidirectional(m) -> None:
    """REVERSE_V2 + UNIDIRECTIONAL_SEQUENCE_LSTM (+ REVERSE_V2) per direction become one
    BIDIRECTIONAL_SEQUENCE_LSTM, whose two outputs the CONCATENATION still merges."""
    fb = _fb()
    op_of = lambda o: max(m.operatorCodes[o.opcodeIndex].builtinCode,  # noqa: E731
                          m.operatorCodes[o.opcodeIndex].deprecatedBuiltinCode)
    sg, BO = m.subgraphs[0], fb.BuiltinOperator
    assert [op_of(o) for o in sg.operators] == [BO.REVERSE_V2, BO.UNIDIRECTIONAL_SEQUENCE_LSTM, BO.REVERSE_V2,
                                                BO.UNIDIRECTIONAL_SEQUENCE_LSTM, BO.CONCATENATION]
    rev_in, bw, rev_out, fw, cat = sg.operators
    x = sg.inputs[0]
    assert list(fw.inputs[:1]) == [x] and list(rev_in.inputs[:1]) == [x] and bw.inputs[0] == rev_in.outputs[0]
    assert list(cat.inputs) == [fw.outputs[0], rev_out.outputs[0]] and rev_out.inputs[0] == bw.outputs[0]
    uo = fw.builtinOptions
    assert not uo.timeMajor and not any(i >= 0 for i in list(fw.inputs[20:]) + list(bw.inputs[20:]))
    opts = fb.BidirectionalSequenceLSTMOptionsT()
    opts.fusedActivationFunction, opts.cellClip, opts.projClip = uo.fusedActivationFunction, uo.cellClip, uo.projClip
    # merge_outputs stays off: LiteRT's merged batch-major kernel reads memory it has not written
    # (tests/tflite/test_tflite_recurrent.py); the converter's CONCATENATION merges the two outputs
    opts.mergeOutputs, opts.timeMajor = False, False
    op = fb.OperatorT()
    op.opcodeIndex = _code(m, BO.BIDIRECTIONAL_SEQUENCE_LSTM)
    # 0 input, 1-17 forward weights, 18-34 backward, 35-38 the four states, 39-47 auxiliary input
    op.inputs = [x] + list(fw.inputs[1:18]) + list(bw.inputs[1:18]) + list(fw.inputs[18:20]) + \
        list(bw.inputs[18:20]) + [-1] * 9
    op.outputs = [fw.outputs[0], bw.outputs[0]]  # the backward sequence in time order, unreversed
    op.builtinOptionsType, op.builtinOptions = fb.BuiltinOptions.BidirectionalSequenceLSTMOptions, opts
    cat.inputs = list(op.outputs)
    sg.operators = [op, cat]
    _compact(m)


def bilstm_keras(rng):
    import tensorflow as tf
    model = _keras(lambda k: k.layers.Bidirectional(k.layers.LSTM(8, return_sequences=True)), 21)
    unpatched = tf.lite.TFLiteConverter.from_keras_model(model).convert()
    m = _load(unpatched)
    _patch_bidirectional(m)
    buf = _save(m)
    x = (rng.standard_normal((B, T, I)) * 1.5).astype(np.float32)
    _, (got,) = run(buf, [x])
    _, (want,) = run(unpatched, [x])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    for _ in range(3):  # the same answer from fresh interpreters (no unwritten memory read)
        np.testing.assert_array_equal(run(buf, [x])[1][0], got)
    np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-5, atol=1e-5)
    return buf, [x], ["BIDIRECTIONAL_SEQUENCE_LSTM"], "patched", (
        "tf_keras Bidirectional(LSTM(8, return_sequences=True)), batch 2: the converter's two "
        "UNIDIRECTIONAL_SEQUENCE_LSTM + REVERSE_V2 rewritten as the one BIDIRECTIONAL_SEQUENCE_LSTM "
        "(two outputs; LiteRT's merged batch-major kernel is unstable) with the same tensors, then the "
        "converter's CONCATENATION; checked against the unpatched model and Keras")


def _tensor(sg, m, name, shape, data=None, variable=False):
    fb = _fb()
    t = fb.TensorT()
    t.name, t.shape, t.type, t.isVariable = name, list(shape), fb.TensorType.FLOAT32, variable
    buf = fb.BufferT()
    if data is not None:
        buf.data = np.ascontiguousarray(data, np.float32).view(np.uint8).reshape(-1)
    t.buffer = len(m.buffers) if data is not None else 0
    if data is not None:
        m.buffers.append(buf)
    sg.tensors.append(t)
    return len(sg.tensors) - 1


def rnn_keras(rng):
    fb = _fb()
    units = 7
    model = _keras(lambda k: k.layers.SimpleRNN(units, return_sequences=True), 22)
    kernel, recurrent, bias = model.layers[0].get_weights()
    m, sg = fb.ModelT(), fb.SubGraphT()
    m.version, m.description, m.buffers, m.operatorCodes = 3, "armnn-import " + GENERATOR, [fb.BufferT()], []
    sg.tensors, sg.name = [], "main"
    x = _tensor(sg, m, "x", (B, T, I))
    ins = [x, _tensor(sg, m, "rnn/kernel", (units, I), kernel.T), _tensor(sg, m, "rnn/recurrent_kernel",
           (units, units), recurrent.T), _tensor(sg, m, "rnn/bias", (units,), bias),
           _tensor(sg, m, "rnn/state", (B, units), variable=True)]
    y = _tensor(sg, m, "rnn/output", (B, T, units))
    opts = fb.SequenceRNNOptionsT()
    opts.timeMajor, opts.fusedActivationFunction = False, fb.ActivationFunctionType.TANH
    op = fb.OperatorT()
    op.opcodeIndex = _code(m, fb.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN)
    op.inputs, op.outputs = ins, [y]
    op.builtinOptionsType, op.builtinOptions = fb.BuiltinOptions.SequenceRNNOptions, opts
    sg.operators, sg.inputs, sg.outputs = [op], [x], [y]
    m.subgraphs = [sg]
    buf = _save(m)
    x = (rng.standard_normal((B, T, I)) * 1.5).astype(np.float32)
    _, (got,) = run(buf, [x])
    np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-5, atol=1e-5)
    return buf, [x], ["UNIDIRECTIONAL_SEQUENCE_RNN"], "built", (
        "tf_keras SimpleRNN(7, return_sequences=True), batch 2: the converter writes a WHILE loop, so the "
        "one UNIDIRECTIONAL_SEQUENCE_RNN (TANH) is written with the Keras weights (transposed to [units, in]); "
        "checked against Keras")


MODELS = {"shape_flatten_head": (shape_flatten_head, 31), "bilstm_keras": (bilstm_keras, 32),
          "rnn_keras": (rnn_keras, 33)}


def _info(d):
    return {"name": d["name"], "shape": [int(s) for s in d["shape"]], "dtype": np.dtype(d["dtype"]).name,
            "quantization": None}


def main() -> None:
    entries = []
    for name, (make, seed) in MODELS.items():
        buf, inputs, tests, origin, note = make(np.random.default_rng(seed))
        it, outs = run(buf, inputs)
        ops = _ops(it)
        assert set(tests) <= set(ops), (name, ops)
        stem = f"models/{name}.float32"
        (OUT / f"{stem}.tflite").write_bytes(buf)
        save_npz(OUT / f"{stem}.npz", {f"input_{i}": a for i, a in enumerate(inputs)}
                 | {f"output_{i}": o for i, o in enumerate(outs)})
        entries.append({"file": f"{stem}.tflite", "expected": f"{stem}.npz", "name": name, "kind": "model",
                        "variant": "float32", "tests": tests, "origin": origin, "note": note,
                        "resolver": "BUILTIN_REF", "generator": GENERATOR, "size": len(buf),
                        "sha256": hashlib.sha256(buf).hexdigest(),
                        "inputs": [_info(d) for d in it.get_input_details()],
                        "outputs": [_info(d) for d in it.get_output_details()], "builtin_ops": ops})
        print(f"tflite/{stem}: {len(buf)} bytes, ops {' '.join(ops)}")
    path = OUT / "manifest.json"
    manifest = json.loads(path.read_text())
    ours = {e["file"] for e in entries}
    manifest["models"] = [e for e in manifest["models"] if e["file"] not in ours] + entries
    path.write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
