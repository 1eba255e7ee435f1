"""armnn-import: convert ONNX and TFLite models to Arm NN's .armnn format.

    import armnn_import
    result = armnn_import.convert("model.onnx")
    result.save("model.armnn")
"""
from .errors import (ArmnnImportError, ConversionError, GraphError, LoadError, OutputError,  # noqa: F401
                     ReadError, SerializationError, UnsupportedModelError)

__version__ = "0.1.0"


def convert(model, **kwargs):
    """See armnn_import.api.convert."""
    from .api import convert as _convert
    return _convert(model, **kwargs)


def load(path):
    """Read a .armnn file into the IR (armnn_import.ir.Graph)."""
    from .api import load as _load
    return _load(path)
