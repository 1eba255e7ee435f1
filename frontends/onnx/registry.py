"""The ONNX operator registry and the pre-scan check helpers.

A converter is `fn(ctx, node) -> Port | list[Port | ndarray]`; a check is
`check(node, ctx) -> None | reason | (reason, hint) | Refusal(reason, hint, code)` and sees only what the
pre-scan knows (attributes, which inputs are constant, constant values of
initializers and Constant nodes, inferred shapes when available).
"""
from __future__ import annotations

from armnn_import.registry import OpRegistry, Refusal

REGISTRY = OpRegistry("onnx")
register = REGISTRY.register

# ONNX operators with no exact lowering onto the layers of any target, and why (the reason of a node
# of theirs). Anything else unregistered is refused as unsupported-op. (Log, Sin, LogSoftmax,
# ReduceLogSum, ArgMax/ArgMin and (De)QuantizeLinear were here too, before they had converters for
# the richer targets: their entries refuse the older formats with needs-target, and no opset
# lacks an entry, so these reasons were never shown. tests/test_reason_codes.py keeps the two apart.)
REGISTRY.refuse("Erf",
                reason="no error function in any Arm NN release written (19.02, 20.08, 23.08); "
                       "Gelu with approximate='tanh' is supported")
REGISTRY.refuse("Cos", "Tan", reason="no cosine or tangent in any Arm NN release written (19.02, 20.08, 23.08): 23.08 has Sin only")
REGISTRY.refuse("NonZero", "NonMaxSuppression",
                reason="output shape depends on the data", code="dynamic-shape")
REGISTRY.refuse("If", reason="its condition is computed at run time, and Arm NN has no control flow (an If "
                             "whose condition folds to a constant, such as a shape test, is lowered as the "
                             "branch it takes)")
REGISTRY.refuse("Loop", "Scan", reason="control flow is only folded when every input it reads is constant")
REGISTRY.refuse("Mod", reason="no modulo operation in any Arm NN release written (19.02, 20.08, 23.08)")
REGISTRY.refuse("BitShift", reason="no integer bit operations in any Arm NN release written (19.02, 20.08, 23.08)")
REGISTRY.refuse("MaxUnpool", reason="needs a scatter, which no Arm NN release written (19.02, 20.08, 23.08) has")
REGISTRY.refuse("MaxRoiPool", "RoiAlign", reason="no region-of-interest pooling in any Arm NN release written (19.02, 20.08, 23.08)")
# refused even when their inputs are constant (folding them would fix one draw)
RANDOM_OPS = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                        "Bernoulli", "Multinomial"})
REGISTRY.refuse(*sorted(RANDOM_OPS), reason="random numbers cannot be reproduced by Arm NN")


def needs_const(*indices: int, what: str = ""):
    """A check: inputs `indices` (when present) must be constant (Arm NN has
    no runtime weights or runtime shape parameters)."""
    def check(node, ctx):
        for i in indices:
            if ctx.has(node, i) and not ctx.is_const(node, i):
                return Refusal(f"input {i} ({node.inputs[i]!r}{', ' + what if what else ''}) must be a "
                               "constant, but it is computed at run time",
                               "Arm NN has no runtime weights or shape parameters; freeze this input "
                               "(e.g. export with constant folding)", "needs-constant")
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


def runtime_input_from(i: int, release: str, reason: str, hint: str):
    """A check: input i computed at run time needs the format of `release` (or later)."""
    def check(node, ctx):
        target = ctx.target if hasattr(ctx, "target") else ctx.g.target  # (the pre-scan's view, or the converter)
        if ctx.has(node, i) and not ctx.is_const(node, i) and not target.at_least(release):
            return reason, hint
        return None
    return check
