"""The converter contract: what a converter of either frontend may use of the conversion.

A converter is one small function per operator, `fn(ctx, node)` (ONNX: an onnx node; TFLite:
an operator), registered in its frontend's OpRegistry (armnn_import.registry). `ctx` satisfies
ConverterContext, whichever the frontend:

- `ctx.g`, `ctx.b`: the graph under construction and the NetBuilder that adds layers to it
  (armnn_import.lowering); converters build through `b` and the shared recipes, never FlatBuffers;
- `ctx.port(...)`: an input as a Port, the runtime tensor, whose `.info` is its TensorInfo
  (shape, data type, quantization); `ctx.const(...)`: an input's constant value as numpy;
  `ctx.is_const(...)`: whether it is known at conversion time; `ctx.shape(...)`: its shape;
- `ctx.target`: the format written (armnn_import.target.Target): `ctx.target.has(LayerType.X)`,
  `ctx.target.at_least("20.08")` choose the layers;
- `ctx.registry`, `ctx.report`, `ctx.options`: the operator table, the conversion report
  (decompositions, warnings) and the options asked for;
- `ctx.name(node, ...)`: the base name of the layers made for the node.

A converter returns its outputs, in both frontends (the driver binds them: `results` below):
- a Port: output 0 is that run-time tensor;
- a numpy array (or numpy scalar): output 0 is that constant, computed at conversion time (it
  is folded: Arm NN computes nothing for it, and a converter that reads it gets it as a constant);
- a sequence of them: outputs 0, 1, ... in order; None for an output it does not make.
Anything else (None included) is a converter bug (ContractError). The driver, not the converter,
binds each Port to its tensor, with what the frontend adds there (TFLite: a Linear requantizing
into the tensor's own quantization, a Reshape to its own shape; ONNX: the checks of the shape).

How an input is referred to is the frontend's: ONNX passes `(node, i)`, TFLite a tensor index
(`op.inputs[i]`); a Protocol cannot say that, so the methods take `*ref`. The layer-type alias is
`L` (`from armnn_import.ir.types import LayerType as L`) in every frontend.
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from .ir.graph import Port

#: the names of ConverterContext, for tests and for frontends that check themselves
MEMBERS = ("g", "b", "report", "options", "registry", "target",
           "port", "const", "is_const", "shape", "name")


class ContractError(RuntimeError):
    """A converter returned something the contract does not allow: a bug of armnn-import,
    never a refusal of the model."""


def results(out) -> list:
    """What a converter returned as the list of its outputs (the rule above): a Port or an
    np.ndarray is output 0, a sequence is outputs 0, 1, ...; numpy scalars become 0-d arrays."""
    if isinstance(out, (Port, np.ndarray)):
        return [out]
    if isinstance(out, np.generic):
        return [np.asarray(out)]
    if out is None or isinstance(out, (str, bytes, dict)):
        raise ContractError(f"a converter returned {type(out).__name__}: it returns its outputs "
                            "(a Port, a numpy array, or a sequence of them)")
    try:
        outs = list(out)
    except TypeError:
        raise ContractError(f"a converter returned a {type(out).__name__}: it returns its outputs "
                            "(a Port, a numpy array, or a sequence of them)") from None
    return [np.asarray(v) if isinstance(v, np.generic) else v for v in outs]


@runtime_checkable
class ConverterContext(Protocol):
    g: Any          # armnn_import.ir.graph.Graph, the network under construction
    b: Any          # armnn_import.lowering.NetBuilder over g
    report: Any     # armnn_import.report.Report
    options: Any    # the frontend's ConvertOptions
    registry: Any   # armnn_import.registry.OpRegistry of this frontend

    @property
    def target(self) -> Any:
        """The Arm NN format written (armnn_import.target.Target)."""

    def port(self, *ref) -> Any:
        """An input as a runtime tensor (armnn_import.ir.graph.Port, with .info: TensorInfo)."""

    def const(self, *ref) -> Any:
        """An input's constant value (numpy); refuses (Unsupported) a run-time tensor."""

    def is_const(self, *ref) -> bool:
        """Whether an input is known at conversion time."""

    def shape(self, *ref) -> tuple:
        """An input's shape."""

    def name(self, node, *suffix) -> str:
        """The base name of the layers made for `node`."""


def missing_members(ctx) -> list[str]:
    """The members of ConverterContext that `ctx` lacks (isinstance says only yes or no)."""
    return [m for m in MEMBERS if not hasattr(ctx, m)]
