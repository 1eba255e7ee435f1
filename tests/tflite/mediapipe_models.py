"""The production TFLite models that Google's ``mediapipe`` wheel ships (mediapipe/modules/**.tflite
in 0.10.14, the last 0.10 release whose Linux wheel still carries them all), no one here wrote
them, and how to feed them.

Each model takes one float NHWC image; ``RANGE`` is the value range mediapipe's own graphs feed it
(ImageToTensorCalculator's output_tensor_float_range in mediapipe/modules/*/*.pbtxt): [-1, 1] for
the BlazeFace detectors, the pose detector and hand re-crop, [0, 1] for the others. The input is
seeded uniform in that range; LiteRT (ai-edge-litert) on it is the reference (``litert``: its reference
kernels, and their spread against its default ones).
"""
from __future__ import annotations

import os
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/, for wheel_cache
import wheel_cache  # noqa: E402

WHEEL = wheel_cache.Wheel(
    "mediapipe", "0.10.14", "mediapipe-0.10.14-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "a807328339e7356fda0bb14df12fedbf1d33bdf81649c5f8666b0026b1cc30b4")

#: model -> (low, high) of its input
RANGE = {
    "face_detection_short_range": (-1.0, 1.0),
    "face_detection_full_range_sparse": (-1.0, 1.0),
    "face_landmark": (0.0, 1.0),
    "face_landmark_with_attention": (0.0, 1.0),
    "iris_landmark": (0.0, 1.0),
    "palm_detection_lite": (0.0, 1.0),
    "palm_detection_full": (0.0, 1.0),
    "hand_landmark_lite": (0.0, 1.0),
    "hand_landmark_full": (0.0, 1.0),
    "hand_recrop": (-1.0, 1.0),
    "pose_detection": (-1.0, 1.0),
    "pose_landmark_full": (0.0, 1.0),
    "selfie_segmentation": (0.0, 1.0),
    "selfie_segmentation_landscape": (0.0, 1.0),
}
NAMES = tuple(RANGE)


def model_paths() -> dict:
    """{model name: path of its .tflite}, fetched and extracted once (wheel_cache)."""
    return {name[:-len(".tflite")]: p for name, p in wheel_cache.extract(WHEEL, ".tflite").items()}


def _interpreter(path, allocate=True, kernels="default"):
    """LiteRT on the model: "default" (with its XNNPACK delegate, the only kernel of mediapipe's
    Convolution2DTransposeBias), or "ref" (the reference kernels, BUILTIN_REF)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kw = {"experimental_op_resolver_type": OpResolverType.BUILTIN_REF} if kernels == "ref" else {}
    data = path if isinstance(path, bytes) else open(path, "rb").read()
    it = Interpreter(model_content=data, num_threads=1, **kw)
    if allocate:
        it.allocate_tensors()
    return it


def seeded_input(name: str, path) -> np.ndarray:
    (d,) = _interpreter(path, allocate=False).get_input_details()
    low, high = RANGE[name]
    rng = np.random.default_rng(zlib.crc32(f"mediapipe/{name}".encode()))
    return rng.uniform(low, high, tuple(d["shape"])).astype(d["dtype"])


def _run(path, x, kernels):
    it = _interpreter(path, kernels=kernels)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def litert(path, x: np.ndarray) -> tuple[list, list]:
    """(LiteRT's outputs on x, in the model's output order (our Output layers keep it); LiteRT's own
    spread per output). The reference kernels give the outputs; the spread is the largest gap
    between them and the default (XNNPACK) kernels. A model with a custom operator that only the
    delegate runs has the delegate's outputs and no spread."""
    default = _run(path, x, "default")
    try:
        ref = _run(path, x, "ref")
    except RuntimeError:  # "Encountered unresolved custom op"
        return default, [0.0] * len(default)
    return ref, [float(np.abs(a.astype(np.float64) - b).max()) for a, b in zip(default, ref)]


def with_output(path, tensor: str) -> bytes:
    """The model's bytes with its (one) output replaced by the tensor named `tensor`, patched in
    place in the subgraph's outputs vector: an inner tensor becomes what LiteRT and the converted
    network give (selfie segmentation's sigmoid hides its logits: ~0 on any random image)."""
    import struct

    import tflite

    buf = bytearray(open(path, "rb").read())
    sg = tflite.Model.GetRootAsModel(buf, 0).Subgraphs(0)
    (index,) = [i for i in range(sg.TensorsLength()) if sg.Tensors(i).Name().decode() == tensor]
    assert sg.OutputsLength() == 1
    start = sg._tab.Vector(sg._tab.Offset(8))  # Subgraph.outputs: field 2, vtable offset 8
    struct.pack_into("<i", buf, start, index)
    return bytes(buf)


#: model -> the inner tensor made its output where its own output hides the numbers (with_output)
LOGITS = {"selfie_segmentation": "segment", "selfie_segmentation_landscape": "conv2d_transpose"}


def close(got: np.ndarray, want: np.ndarray, spread: float = 0.0) -> bool:
    """Within float tolerance of LiteRT: rtol 1e-3, atol 1e-4 scaled to the output's magnitude
    (box regressors reach 1e2, selfie logits 1e3), or LiteRT's own kernel spread where that is
    larger (pose_landmark_full's segmentation logits, -1428..206 through 40 layers: its kernels
    differ by 0.2 there)."""
    atol = max(1e-4 * max(1.0, float(np.abs(want).max())), spread)
    return got.size == want.size and bool(np.allclose(got.reshape(want.shape), want, rtol=1e-3, atol=atol))
