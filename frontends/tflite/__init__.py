"""The TFLite frontend (entry point `tflite = "armnn_import_frontends.tflite:FRONTEND"`).

Importing this package is cheap: the `tflite` package and the operator table
are imported only when a model is converted or the registry is asked for.
"""
from __future__ import annotations


class TFLiteFrontend:
    name = "tflite"
    title = "TFLite"
    version_word = "version"      # what the catalogue calls an operator's version
    extensions = (".tflite",)
    io_layout = "NHWC"            # the layout of the model's 4-D inputs and outputs
    identifier = (4, b"TFL3")     # the FlatBuffers file identifier of the TFLite schema

    @property
    def registry(self):
        from .ops import REGISTRY
        return REGISTRY

    def sniff(self, head: bytes, complete: bool = False) -> bool:
        return len(head) >= 8 and head[4:8] == self.identifier[1]

    def accepts(self, obj) -> bool:
        # Duck-typed so that the check does not import tflite.
        t = type(obj)
        return t.__name__ == "Model" and t.__module__.startswith("tflite") and hasattr(obj, "_tab")

    def convert(self, source, options, report):
        from .convert import convert
        return convert(source, options, report)

    def source_runner(self, source):
        """The model in LiteRT, for `armnn-import verify`."""
        from .verify import TFLiteSource
        return TFLiteSource(source)


FRONTEND = TFLiteFrontend()
