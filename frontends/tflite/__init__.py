"""The TFLite frontend (entry point `tflite = "armnn_import_frontends.tflite:FRONTEND"`).

Importing this package is cheap: the `tflite` package and the operator table
are imported only when a model is converted or the registry is asked for.
"""
from __future__ import annotations


class TFLiteFrontend:
    name = "tflite"
    handles_io_layout = True  # --layout nchw is applied while lowering (convert.py)
    extensions = (".tflite",)

    @property
    def registry(self):
        from .ops import REGISTRY
        return REGISTRY

    def sniff(self, head: bytes) -> bool:
        return len(head) >= 8 and head[4:8] == b"TFL3"

    def accepts(self, obj) -> bool:
        # Duck-typed so that the check does not import tflite.
        t = type(obj)
        return t.__name__ == "Model" and t.__module__.startswith("tflite") and hasattr(obj, "_tab")

    def convert(self, source, options, report):
        from .convert import convert
        return convert(source, options, report)


FRONTEND = TFLiteFrontend()
