#!/usr/bin/env python3
"""Small Keras-layer models through every TFLite converter mode, for the Keras sweep
(docs/keras-sweep.md; not reference models).

Run with the generator venv (TensorFlow is never a dependency of the package):
    /opt/genvenv/bin/python scripts/gen_keras_sweep.py --out /tmp/keras_sweep [--only 'lstm|gru']
Writes <model>.<mode>.tflite per model and converter mode, and <out>/keras_sweep_manifest.json
listing each file, or the converter's own refusal. Models are Keras 3 models converted the way a
user does (TFLiteConverter.from_keras_model, dynamic batch) or tf.functions of tf.* ops
(from_concrete_functions, batch 1); weights are seeded random, with non-trivial biases and
batch-norm statistics (a zero bias or unit variance would hide a wrong lowering).
Modes:
  float32      no optimization
  int8         full integer, int8 input/output (representative dataset, 16 seeded N(0,1) samples)
  int8floatio  full integer inside, float input/output (QUANTIZE/DEQUANTIZE at the edges)
  fp16w        float16 weights (optimizations DEFAULT, supported_types float16)
  dynamic      dynamic range: int8 weights, float activations, no dataset
  16x8         int16 activations, int8 weights (EXPERIMENTAL_..._INT16_WEIGHTS_INT8), float I/O
"""
import json
import os
import re
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_io import seed_of, sweep_setup  # noqa: E402

MODES = "float32,int8,int8floatio,fp16w,dynamic,16x8"
REP_SAMPLES = 16


def layer_models(keras):
    """name -> () -> (make(x) -> the model's output from its Input, input shape without batch, int vocab
    or None); the layers are made when called (Keras names them in order of making)."""
    L = keras.layers
    seq = lambda *layers: lambda x: _chain(x, layers)  # noqa: E731
    return {
        "conv1d": lambda: (seq(L.Conv1D(8, 3, padding="same", activation="relu"), L.GlobalMaxPooling1D(), L.Dense(4)),
                   (16, 4), None),
        "separable_conv1d": lambda: (seq(L.SeparableConv1D(8, 3, depth_multiplier=2), L.Flatten()), (12, 4), None),
        "separable_conv2d": lambda: (seq(L.SeparableConv2D(8, 3, padding="same", activation="relu")), (8, 8, 3), None),
        "conv2d_transpose": lambda: (seq(L.Conv2DTranspose(4, 3, strides=2, padding="same")), (6, 6, 3), None),
        "upsampling_nearest": lambda: (seq(L.Conv2D(4, 1), L.UpSampling2D(2, interpolation="nearest")), (5, 5, 3), None),
        "upsampling_bilinear": lambda: (seq(L.Conv2D(4, 1), L.UpSampling2D(2, interpolation="bilinear")), (5, 5, 3), None),
        "depthwise_mult2": lambda: (seq(L.DepthwiseConv2D(3, depth_multiplier=2, padding="same")), (7, 7, 3), None),
        "gru_seq": lambda: (seq(L.GRU(6, return_sequences=True)), (5, 4), None),
        "gru_last": lambda: (seq(L.GRU(6)), (5, 4), None),
        "lstm_seq": lambda: (seq(L.LSTM(6, return_sequences=True)), (5, 4), None),
        "lstm_last": lambda: (seq(L.LSTM(6)), (5, 4), None),
        "bilstm_seq": lambda: (seq(L.Bidirectional(L.LSTM(5, return_sequences=True))), (5, 4), None),
        "bilstm_last": lambda: (seq(L.Bidirectional(L.LSTM(5))), (5, 4), None),
        "simplernn": lambda: (seq(L.SimpleRNN(6, return_sequences=True)), (5, 4), None),
        "mha": lambda: (lambda x: L.MultiHeadAttention(num_heads=2, key_dim=4)(x, x), (6, 8), None),
        "layernorm": lambda: (seq(L.Dense(8), L.LayerNormalization()), (6, 8), None),
        "batchnorm": lambda: (seq(L.Conv2D(6, 3), L.BatchNormalization(), L.ReLU()), (8, 8, 3), None),
        "embedding": lambda: (seq(L.Embedding(30, 8), L.GlobalAveragePooling1D(), L.Dense(4)), (7,), 30),
        "crop_pad": lambda: (seq(L.Cropping2D(((1, 0), (0, 2))), L.ZeroPadding2D(((0, 1), (2, 1))), L.Conv2D(4, 3)),
                     (8, 8, 3), None),
        "reshape_permute_flatten": lambda: (seq(L.Reshape((4, 6)), L.Permute((2, 1)), L.Dense(3), L.Flatten(), L.Dense(5)),
                                    (24,), None),
        "concat_add_mul": lambda: (_branches(L), (6, 6, 3), None),
        "prelu_elu_leaky": lambda: (seq(L.Dense(8), L.PReLU(), L.Dense(8), L.ELU(), L.Dense(8), L.LeakyReLU(0.2)),
                            (10,), None),
        "softmax_inner_axis": lambda: (seq(L.Conv2D(4, 1), L.Softmax(axis=1)), (5, 6, 3), None),
        "global_max_pool1d": lambda: (seq(L.Dense(6), L.GlobalMaxPooling1D()), (9, 4), None),
        # weights of 1024 elements or more: the converter's dynamic-range and float16 modes leave
        # smaller constants float32, so these are the layers those modes really change
        "dense_big": lambda: (seq(L.Dense(64, activation="relu"), L.Dense(40)), (32,), None),
        "conv_big": lambda: (seq(L.Conv2D(16, 3, padding="same", activation="relu"), L.Conv2D(16, 3)), (8, 8, 16), None),
        "lstm_big": lambda: (seq(L.LSTM(32, return_sequences=True)), (4, 16), None),
        # unroll=True: straight-line operators instead of the WHILE loop Keras 3 recurrent layers give
        "gru_unroll_seq": lambda: (seq(L.GRU(6, return_sequences=True, unroll=True)), (5, 4), None),
        "gru_unroll_last": lambda: (seq(L.GRU(6, unroll=True)), (5, 4), None),
        "lstm_unroll_seq": lambda: (seq(L.LSTM(6, return_sequences=True, unroll=True)), (5, 4), None),
        "lstm_unroll_last": lambda: (seq(L.LSTM(6, unroll=True)), (5, 4), None),
        "bilstm_unroll_seq": lambda: (seq(L.Bidirectional(L.LSTM(5, return_sequences=True, unroll=True))), (5, 4), None),
        "bigru_unroll_last": lambda: (seq(L.Bidirectional(L.GRU(5, unroll=True))), (5, 4), None),
        "simplernn_unroll": lambda: (seq(L.SimpleRNN(6, return_sequences=True, unroll=True)), (5, 4), None),
    }


def _chain(x, layers):
    for layer in layers:
        x = layer(x)
    return x


def _branches(L):
    def make(x):
        a = L.Conv2D(4, 3, padding="same")(x)
        b = L.Conv2D(4, 1)(x)
        c = L.Concatenate()([L.Add()([a, b]), L.Multiply()([a, b])])
        return L.Conv2D(3, 1)(c)
    return make


def tf_functions(tf):
    """name -> (fn of a batch-1 float tensor, input shape with batch): tf.* ops a user writes."""
    return {
        "tf_resize_bilinear": (lambda x: tf.image.resize(x, (9, 7)), (1, 5, 4, 3)),
        "tf_resize_nearest": (lambda x: tf.image.resize(x, (10, 8), method="nearest"), (1, 5, 4, 3)),
        "tf_reduce_max": (lambda x: tf.reduce_max(x, axis=-1, keepdims=True) + tf.reduce_min(x, axis=1, keepdims=True),
                          (1, 6, 5)),
        "tf_reduce_mean_sum": (lambda x: tf.reduce_mean(x, axis=[1, 2]) * tf.reduce_sum(x, axis=[1, 2]), (1, 4, 5, 3)),
        "tf_argmax": (lambda x: tf.argmax(x, axis=-1), (1, 6, 10)),
        "tf_argmax_int32": (lambda x: tf.argmax(x, axis=1, output_type=tf.int32), (1, 6, 10)),
        "tf_cumsum": (lambda x: tf.cumsum(x, axis=1), (1, 7, 3)),
        "tf_top_k": (lambda x: tf.math.top_k(x, k=3).values, (1, 4, 10)),
        "tf_top_k_indices": (lambda x: tf.math.top_k(x, k=3).indices, (1, 4, 10)),
        "tf_unary": (lambda x: tf.exp(x * 0.5) + tf.math.log(tf.abs(x) + 1.0) + tf.sqrt(tf.abs(x)), (1, 12)),
        "tf_where": (lambda x: tf.where(x > 0, x, 0.1 * x), (1, 12)),
        "tf_clip": (lambda x: tf.clip_by_value(x, -0.5, 0.7), (1, 12)),
        "tf_l2_normalize": (lambda x: tf.math.l2_normalize(x, axis=-1), (1, 4, 6)),
        "tf_squared_difference": (lambda x: tf.math.squared_difference(x, tf.reduce_mean(x, axis=-1, keepdims=True)),
                                  (1, 4, 6)),
    }


APPS = {"MobileNetV2": ({"alpha": 0.35}, 64), "VGG16": ({}, 32)}


def randomize(model, name):
    """Seeded random weights: biases, betas and means ~ N(0, 0.2), scales in [0.5, 1.5], variances
    in [0.5, 2] (a Keras model starts with zero biases and identity batch norms)."""
    rng = np.random.default_rng(seed_of(name, "weights"))
    for w in model.weights:
        path, shape = w.path if hasattr(w, "path") else w.name, tuple(w.shape)
        if re.search(r"variance", path):
            w.assign(rng.uniform(0.5, 2.0, shape).astype(np.float32))
        elif re.search(r"gamma|alpha", path):
            w.assign(rng.uniform(0.5, 1.5, shape).astype(np.float32))
        elif re.search(r"bias|beta|mean", path):
            w.assign((rng.standard_normal(shape) * 0.2).astype(np.float32))


def build(tf, keras, name):
    keras.backend.clear_session()  # (layer names restart: a model's bytes do not depend on the others)
    keras.utils.set_random_seed(seed_of(name) % 2**31)
    if name in APPS:
        kw, side = APPS[name]
        model = getattr(keras.applications, name)(weights=None, input_shape=(side, side, 3), classes=10, **kw)
        randomize(model, name)
        return model, [(1, side, side, 3)], None
    if name in layer_models(keras):
        make, shape, vocab = layer_models(keras)[name]()
        # Keras 3 recurrent layers convert only with a static batch (a dynamic one leaves a
        # TensorList the converter cannot lower): users fix it, so do we
        batch = 1 if re.search("gru|lstm|rnn", name) else None
        x = keras.Input(shape, batch_size=batch, dtype="int32" if vocab else "float32", name="x")
        model = keras.Model(x, make(x))
        randomize(model, name)
        return model, [(1, *shape)], vocab
    fn, shape = tf_functions(tf)[name]
    return tf.function(fn, input_signature=[tf.TensorSpec(shape, tf.float32, name="x")]), [shape], None


def convert(tf, model, name, shapes, vocab, mode):
    if hasattr(model, "layers"):
        conv = tf.lite.TFLiteConverter.from_keras_model(model)
    else:
        conv = tf.lite.TFLiteConverter.from_concrete_functions([model.get_concrete_function()], model)
    rng = np.random.default_rng(seed_of(name, "representative"))
    sample = (lambda s: rng.integers(0, vocab, s).astype(np.int32)) if vocab else \
        (lambda s: rng.standard_normal(s).astype(np.float32))
    rep = [[sample(s) for s in shapes] for _ in range(REP_SAMPLES)]
    if mode != "float32":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode in ("int8", "int8floatio", "16x8"):
        conv.representative_dataset = lambda: iter(rep)
        conv.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8 if mode == "16x8"
            else tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    if mode == "int8":
        conv.inference_input_type = tf.int32 if vocab else tf.int8
        conv.inference_output_type = tf.int8
    if mode == "fp16w":
        conv.target_spec.supported_types = [tf.float16]
    return conv.convert()


def main():
    args, out, mpath, manifest = sweep_setup(__doc__, "/tmp/keras_sweep", "keras_sweep_manifest.json",
                                             "regex of model names", [("--modes", MODES), ("--single", "")])
    import tensorflow as tf
    import keras
    names = list(layer_models(keras)) + list(tf_functions(tf)) + list(APPS)
    names = [n for n in names if not args.only or re.search(args.only, n)]
    if not args.single:
        return isolated(names, args)
    for name in names:
        model, shapes, vocab = build(tf, keras, name)
        for mode in args.modes.split(","):
            t0, key = time.time(), f"{name}.{mode}"
            try:
                buf = convert(tf, model, name, shapes, vocab, mode)
            except Exception as e:  # the TFLite converter's own refusal: recorded, not ours
                manifest[key] = {"skipped": f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}"}
                print(key, manifest[key], flush=True)
                mpath.write_text(json.dumps(manifest, indent=1) + "\n")
                continue
            (out / f"{key}.tflite").write_bytes(buf)
            manifest[key] = {"bytes": len(buf), "seconds": round(time.time() - t0, 1), "vocab": vocab}
            print(key, manifest[key], flush=True)
            mpath.write_text(json.dumps(manifest, indent=1) + "\n")


def isolated(names, args):
    """Each model in a process of its own: the converter crashes (a segmentation fault) on some
    modes; the crash is recorded as that mode's refusal and the other modes still run."""
    import subprocess
    mpath = os.path.join(args.out, "keras_sweep_manifest.json")
    for name in names:
        modes = args.modes.split(",")
        while modes:
            rc = subprocess.run([sys.executable, __file__, "--out", args.out, "--only", f"^{name}$",
                                 "--modes", ",".join(modes), "--single", "1"]).returncode
            done = json.loads(open(mpath).read()) if os.path.exists(mpath) else {}
            left = [m for m in modes if f"{name}.{m}" not in done]
            if rc >= 0 or not left:
                break
            done[f"{name}.{left[0]}"] = {"skipped": f"the TFLite converter crashed (signal {-rc})"}
            open(mpath, "w").write(json.dumps(done, indent=1) + "\n")
            modes = left[1:]


if __name__ == "__main__":
    main()
