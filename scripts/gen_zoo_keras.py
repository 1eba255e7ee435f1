#!/usr/bin/env python3
"""Export tf.keras.applications networks to TFLite for the zoo sweep (not reference models).

Run with the generator venv (TensorFlow is never a dependency of the package):
    /opt/genvenv/bin/python scripts/gen_zoo_keras.py --out /tmp/zoo/keras [--only 'ResNet|Xception']
Writes <App>.float32.tflite and <App>.int8.tflite (full-integer, int8 input/output,
per-channel weights: the converter's default) per application, with random seeded weights
(weights=None: nothing is downloaded) at a small input size the application allows, and
<out>/keras_manifest.json listing each file, or why the converter refused it.
"""
import json
import os
import re
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
from reference_io import seed_of, sweep_setup  # noqa: E402

# application: input side (each application's own minimum where it is above 64 px)
APPS = {
    "ResNet50V2": 64, "ResNet50": 64, "Xception": 71, "InceptionV3": 75, "NASNetMobile": 64,
    "EfficientNetB0": 64, "EfficientNetV2B0": 64, "MobileNetV3Large": 64, "DenseNet121": 64,
    "RegNetX002": 64, "ConvNeXtTiny": 64,
}
REP_SAMPLES = 4


def build(tf, name, side):
    tf.keras.utils.set_random_seed(seed_of(name) % 2**31)
    ctor = getattr(tf.keras.applications, name)
    return ctor(weights=None, input_shape=(side, side, 3), classes=10)


def convert(tf, model, name, side, variant):
    spec = tf.TensorSpec((1, side, side, 3), tf.float32, name="x")
    cf = tf.function(lambda x: model(x, training=False), input_signature=[spec],
                     autograph=False).get_concrete_function()
    conv = tf.lite.TFLiteConverter.from_concrete_functions([cf])
    if variant == "int8":
        rng = np.random.default_rng(seed_of(name, "representative"))
        rep = [[rng.uniform(0, 255, (1, side, side, 3)).astype(np.float32)] for _ in range(REP_SAMPLES)]
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = lambda: iter(rep)
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = conv.inference_output_type = tf.int8
    return conv.convert()


def main():
    args, out, mpath, manifest = sweep_setup(__doc__, "/tmp/zoo/keras", "keras_manifest.json",
                                             "regex of application names", [("--variants", "float32,int8")])
    import tensorflow as tf
    for name, side in APPS.items():
        if args.only and not re.search(args.only, name):
            continue
        if not hasattr(tf.keras.applications, name):
            manifest[name] = {"skipped": "not in this tf.keras.applications"}
            continue
        model = build(tf, name, side)
        for variant in args.variants.split(","):
            t0 = time.time()
            key = f"{name}.{variant}"
            try:
                buf = convert(tf, model, name, side, variant)
            except Exception as e:  # the TFLite converter's own refusal: recorded, not ours
                manifest[key] = {"skipped": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
                continue
            (out / f"{key}.tflite").write_bytes(buf)
            manifest[key] = {"side": side, "params": int(model.count_params()), "bytes": len(buf),
                             "seconds": round(time.time() - t0, 1)}
            print(key, manifest[key], flush=True)
        mpath.write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
