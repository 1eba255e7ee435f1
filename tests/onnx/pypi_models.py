"""ONNX models that public PyPI packages ship inside their wheels, pinned, and how each package
feeds them (the shapes it uses, inputs in the range it gives them). No one here wrote them.

- rapidocr_onnxruntime 1.4.4 (PP-OCRv4 text detection and recognition, PP-OCR v2 text direction):
  images normalized to [-1, 1]; recognition at 3x48x320 and direction at 3x48x192 (the package's
  rec_img_shape / cls_image_shape); detection at 3x320x320 (the package resizes a page to
  multiples of 32; any such size is the same network);
- silero-vad 5.1.2 (voice activity detection): 512 samples of 16 kHz audio with the 64 samples of
  context the package prepends (576), and its LSTM state (2x1x128). silero_vad.onnx takes the
  sample rate as a run-time input and branches on it (refused: control flow on data);
  silero_vad_half.onnx is the 16 kHz network alone;
- nudenet 3.4.2 (a YOLOv8n detector): a 320x320 RGB image in [0, 1];
- openwakeword 0.4.0 (wake-word detection): the melspectrogram front end on 1760 int16-valued
  samples (1280 new ones and 480 of context), the embedding network on 76x32 mel frames, and the
  wake-word heads on their windows of 96-wide embeddings.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np

from pypi_cache import Wheel

RAPIDOCR = Wheel("rapidocr_onnxruntime", "1.4.4", "rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
                 "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf")
SILERO = Wheel("silero-vad", "5.1.2", "silero_vad-5.1.2-py3-none-any.whl",
               "93b41953d7774b165407fda6b533c119c5803864e367d5034dc626c82cfdf661")
NUDENET = Wheel("nudenet", "3.4.2", "nudenet-3.4.2-py3-none-any.whl",
                "5937dbd84e5d8e5de038f08ffea5a1bb50a08475776bf2b4795914ce0eaf0331")
OWW = Wheel("openwakeword", "0.4.0", "openwakeword-0.4.0-py3-none-any.whl",
            "2c353f49a35d384507403efde3db439353d8281a52d08a0e42a5b493e5145075")
OWW_DIR = "openwakeword/resources/models/"


@dataclass(frozen=True)
class Model:
    name: str
    wheel: Wheel
    member: str
    #: input name -> (shape, (low, high) of a uniform draw, or ("normal", std), dtype)
    inputs: dict = field(default_factory=dict)

    def shape_args(self) -> list[str]:
        """--input-shape for every input (the models' own shapes are symbolic or fixed alike)."""
        out = []
        for name, (shape, _, _) in self.inputs.items():
            if shape:  # (a scalar has no dimension to fix)
                out += ["--input-shape", f"{name}={','.join(map(str, shape))}"]
        return out

    def feeds(self) -> dict[str, np.ndarray]:
        """Seeded inputs (the seed is the model's name), in the range the package gives them."""
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        out = {}
        for name, (shape, spread, dtype) in self.inputs.items():
            if spread[0] == "normal":
                x = rng.standard_normal(shape) * spread[1]
            else:
                x = rng.uniform(spread[0], spread[1], size=shape)
            if spread == INT16:  # audio as the package reads it: int16 samples, as float32
                x = np.round(x)
            out[name] = x.astype(dtype)
        return out


F32 = np.float32
INT16 = (-8000.0, 8000.0)  # speech-level int16 samples (full scale is 32767)


def _f(shape, spread):
    return (tuple(shape), spread, F32)


MODELS = [
    Model("ppocrv4-det", RAPIDOCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
          {"x": _f((1, 3, 320, 320), (-1.0, 1.0))}),
    Model("ppocrv4-rec", RAPIDOCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
          {"x": _f((1, 3, 48, 320), (-1.0, 1.0))}),
    Model("ppocr-mobile-v2-cls", RAPIDOCR, "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
          {"x": _f((1, 3, 48, 192), (-1.0, 1.0))}),
    Model("silero-vad-half", SILERO, "silero_vad/data/silero_vad_half.onnx",
          {"input": _f((1, 576), (-0.5, 0.5)), "state": _f((2, 1, 128), ("normal", 0.3))}),
    Model("silero-vad", SILERO, "silero_vad/data/silero_vad.onnx",
          {"input": _f((1, 576), (-0.5, 0.5)), "state": _f((2, 1, 128), ("normal", 0.3)),
           "sr": ((), (16000, 16000), np.int64)}),
    Model("nudenet-320n", NUDENET, "nudenet/320n.onnx", {"images": _f((1, 3, 320, 320), (0.0, 1.0))}),
    Model("oww-melspectrogram", OWW, OWW_DIR + "melspectrogram.onnx", {"input": _f((1, 1760), INT16)}),
    Model("oww-embedding", OWW, OWW_DIR + "embedding_model.onnx", {"input_1": _f((1, 76, 32, 1), (-1.0, 3.0))}),
    Model("oww-alexa", OWW, OWW_DIR + "alexa_v0.1.onnx", {"onnx::Flatten_0": _f((1, 16, 96), ("normal", 1.0))}),
    Model("oww-hey-jarvis", OWW, OWW_DIR + "hey_jarvis_v0.1.onnx", {"x.1": _f((1, 16, 96), ("normal", 1.0))}),
    Model("oww-hey-marvin", OWW, OWW_DIR + "hey_marvin_v0.1.onnx",
          {"onnx::Flatten_0": _f((1, 16, 96), ("normal", 1.0))}),
    Model("oww-hey-mycroft", OWW, OWW_DIR + "hey_mycroft_v0.1.onnx", {"input_1": _f((1, 16, 96), ("normal", 1.0))}),
    Model("oww-timer", OWW, OWW_DIR + "timer_v0.1.onnx", {"onnx::Flatten_0": _f((1, 34, 96), ("normal", 1.0))}),
    Model("oww-weather", OWW, OWW_DIR + "weather_v0.1.onnx", {"onnx::Flatten_0": _f((1, 22, 96), ("normal", 1.0))}),
    Model("oww-silero-vad", OWW, OWW_DIR + "silero_vad.onnx",
          {"input": _f((1, 576), (-0.5, 0.5)), "h": _f((2, 1, 64), ("normal", 0.3)),
           "c": _f((2, 1, 64), ("normal", 0.3)), "sr": ((), (16000, 16000), np.int64)}),
]
BY_NAME = {m.name: m for m in MODELS}
