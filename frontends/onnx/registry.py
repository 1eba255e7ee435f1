"""The ONNX operator registry and the pre-scan check helpers.

A converter is `fn(ctx, node) -> Port | list[Port | ndarray]`; a check is
`check(node, ctx) -> None | reason | (reason, hint)` and sees only what the
pre-scan knows (attributes, which inputs are constant, constant values of
initializers and Constant nodes, inferred shapes when available).
"""
from __future__ import annotations

from armnn_import.registry import OpRegistry

REGISTRY = OpRegistry("onnx")
register = REGISTRY.register

# ONNX operators with no exact lowering onto the 32 Arm NN layers, and why.
# Only used to word the problem report; anything absent from the registry is refused.
REFUSED = {
    "Log": "no logarithm in Arm NN's early layer set",
    "Softplus": "needs a logarithm: Arm NN 20.08 reads the SoftReLu activation as Sigmoid, and the "
                "early layer set has no logarithm",
    "LogSoftmax": "needs a logarithm, which Arm NN's early layer set lacks",
    "ReduceLogSum": "needs a logarithm, which Arm NN's early layer set lacks",
    "ReduceLogSumExp": "needs a logarithm, which Arm NN's early layer set lacks",
    "Erf": "no error function in Arm NN's early layer set (Gelu with approximate='tanh' is supported)",
    "Sin": "no trigonometric functions in Arm NN's early layer set",
    "Cos": "no trigonometric functions in Arm NN's early layer set",
    "Tan": "no trigonometric functions in Arm NN's early layer set",
    "Round": "round-half-to-even has no exact lowering (Floor exists, but ties differ)",
    "ArgMax": "no ArgMinMax layer in Arm NN's early layer set",
    "ArgMin": "no ArgMinMax layer in Arm NN's early layer set",
    "TopK": "no sorting in Arm NN's early layer set",
    "NonZero": "output shape depends on the data",
    "NonMaxSuppression": "output shape depends on the data",
    "QuantizeLinear": "no Quantize layer in Arm NN's early layer set",
    "DequantizeLinear": "no Dequantize layer in Arm NN's early layer set "
                        "(only folded when its input is a constant)",
    "ScatterND": "no scatter operation in Arm NN's early layer set",
    "ScatterElements": "no scatter operation in Arm NN's early layer set",
    "GatherElements": "no per-element gather in Arm NN's early layer set",
    "GatherND": "no multi-dimensional gather in Arm NN's early layer set",
    "CumSum": "no cumulative sum in Arm NN's early layer set",
    "If": "control flow is only folded when every input it reads is constant",
    "Loop": "control flow is only folded when every input it reads is constant",
    "Scan": "control flow is only folded when every input it reads is constant",
    "Mod": "no modulo operation in Arm NN's early layer set",
    "BitShift": "no integer bit operations in Arm NN's early layer set",
    "Einsum": "no general tensor contraction in Arm NN's early layer set",
    "Hardmax": "needs ArgMax, which Arm NN's early layer set lacks",
    "MaxUnpool": "needs a scatter, which Arm NN's early layer set lacks",
    "MaxRoiPool": "no region-of-interest pooling in Arm NN's early layer set",
    "RoiAlign": "no region-of-interest pooling in Arm NN's early layer set",
}
RANDOM_OPS = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                        "Bernoulli", "Multinomial"})


def needs_const(*indices: int, what: str = ""):
    """A check: inputs `indices` (when present) must be constant (Arm NN has
    no runtime weights or runtime shape parameters)."""
    def check(node, ctx):
        for i in indices:
            if ctx.has(node, i) and not ctx.is_const(node, i):
                return (f"input {i} ({node.inputs[i]!r}{', ' + what if what else ''}) must be a constant, "
                        "but it is computed at run time",
                        "Arm NN has no runtime weights or shape parameters; freeze this input "
                        "(e.g. export with constant folding)")
        return None
    return check


def all_checks(*fns):
    def check(node, ctx):
        for f in fns:
            if f is not None:
                r = f(node, ctx)
                if r:
                    return r
        return None
    return check
