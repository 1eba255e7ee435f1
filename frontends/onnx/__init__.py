"""The ONNX frontend (entry point `onnx = "armnn_import_frontends.onnx:FRONTEND"`).

Importing this package is cheap: onnx and the operator table are imported
only when a model is converted or the registry is asked for.
"""
from __future__ import annotations


class OnnxFrontend:
    name = "onnx"
    title = "ONNX"
    version_word = "opset"        # what the catalogue calls an operator's version
    extensions = (".onnx",)
    io_layout = "NCHW"            # the layout of the model's 4-D inputs and outputs
    identifier = None             # protobuf has no magic bytes: sniff() reads the fields

    @property
    def registry(self):
        from .ops import REGISTRY
        return REGISTRY

    def sniff(self, head: bytes, complete: bool = False) -> bool:
        from .sniff import looks_like_onnx
        return looks_like_onnx(head, complete)

    def accepts(self, obj) -> bool:
        # Duck-typed so that the check does not import onnx.
        return type(obj).__name__ == "ModelProto" and hasattr(obj, "graph") and hasattr(obj, "opset_import")

    def convert(self, source, options, report):
        from .convert import convert
        return convert(source, options, report)

    def source_runner(self, source):
        """The model in onnxruntime, for `armnn-import verify`."""
        from .verify import OnnxSource
        return OnnxSource(source)


FRONTEND = OnnxFrontend()
