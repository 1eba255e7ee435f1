"""What analyse() (analysis.py) reads of the converter, in a picklable form, for an
analysis child that is not a fork of the converter's process (see isolate.py)."""
from __future__ import annotations

import numpy as np
import onnx

from armnn_import.ir.graph import Port

from .analysis import analyse
from .nodes import Node


class AnalysisView:
    """The model (its large initializers stay out of it, as in the converter: `mapped` keeps
    their names), the kind of each value known before the analysis (an array: its dtype and
    shape, no data; a graph input), and what shape inference has filled in so far."""

    def __init__(self, conv):
        self.model, self.opset = conv.model, conv.opset
        self.mapped = dict.fromkeys(conv.mapped)
        self.values = conv.values
        self.inferred, self.inferred_types = dict(conv.inferred), dict(conv.inferred_types)

    def __getstate__(self):
        arrays = {k: (v.dtype, v.shape) for k, v in self.values.items() if isinstance(v, np.ndarray)}
        inputs = [k for k, v in self.values.items() if isinstance(v, Port)]
        # (other values are none of these to analyse(): left out, they read the same)
        return (self.model.SerializeToString(), self.opset, self.mapped, arrays, inputs,
                self.inferred, self.inferred_types)

    def __setstate__(self, state):
        data, self.opset, self.mapped, arrays, inputs, self.inferred, self.inferred_types = state
        self.model = onnx.ModelProto.FromString(data)
        # arrays of the right dtype and shape that hold one element (broadcast: no memory)
        self.values = {k: np.broadcast_to(np.zeros((), dtype), shape) for k, (dtype, shape) in arrays.items()}
        self.values.update((k, Port(None)) for k in inputs)


def analyse_view(view: AnalysisView):
    """analyse() on a view, with the nodes the converter made of the model's graph."""
    return analyse(view, [Node(p, i, view.opset) for i, p in enumerate(view.model.graph.node)])


def portable(conv):
    """(function, arguments) for isolated(): the converter's analysis as a picklable job."""
    return analyse_view, (AnalysisView(conv),)
