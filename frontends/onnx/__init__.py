"""The ONNX frontend (entry point `onnx = "armnn_import_frontends.onnx:FRONTEND"`).

Importing this package is cheap: onnx and the operator table are imported
only when a model is converted or the registry is asked for.
"""
from __future__ import annotations


class OnnxFrontend:
    name = "onnx"
    extensions = (".onnx",)

    @property
    def registry(self):
        from .ops import REGISTRY
        return REGISTRY

    def sniff(self, head: bytes) -> bool:
        from armnn_import.discovery import looks_like_onnx
        return looks_like_onnx(head, complete=False)

    def accepts(self, obj) -> bool:
        # Duck-typed so that the check does not import onnx.
        return type(obj).__name__ == "ModelProto" and hasattr(obj, "graph") and hasattr(obj, "opset_import")

    def convert(self, source, options, report):
        from .convert import convert
        return convert(source, options, report)


FRONTEND = OnnxFrontend()
