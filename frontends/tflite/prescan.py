"""TFLite's pre-scan: every operator the conversion would refuse, found before any layer is
built and reported at once (structure, tensor types, option ranges, the registry's checks).
A mixin of Ctx (convert.py), which holds the model and the registry."""
from __future__ import annotations

import math

from armnn_import.errors import Problem, UnsupportedModelError
from armnn_import.ir.types import DataType
from armnn_import.lowering import Unsupported
from armnn_import.registry import Refusal

from .model import Tensor
from .types import FLOAT16, INT8, INT16, UINT8
from .wrap import find_wraps

# Integer options and their valid ranges (None: unbounded). A file can hold any int32 there,
# and Arm NN's descriptor fields are unsigned; values that fit but make no sense for the
# tensors at hand (a stride past the output, a dilation past the input) are checked by the
# converters.
OPTION_RANGES = {"stride_h": (1, None), "stride_w": (1, None), "dilation_h_factor": (1, None),
                 "dilation_w_factor": (1, None), "filter_height": (1, None), "filter_width": (1, None),
                 "block_size": (1, None), "radius": (0, None), "num_splits": (1, None), "padding": (0, 1),
                 "mode": (0, 1)}


def _option_problem(op):
    """Why an option value is out of range, or None."""
    for key, value in op.options.items():
        if isinstance(value, float) and not math.isfinite(value):
            return f"option {key} is {value}"
        bounds = OPTION_RANGES.get(key)
        if bounds is None or not isinstance(value, int):
            continue
        lo, hi = bounds
        if value < lo or (hi is not None and value > hi):
            return f"option {key} = {value} is out of range" + (f" [{lo}, {hi}]" if hi is not None
                                                                    else f" (at least {lo})")
    return None


class Prescan:
    """The pre-scan of Ctx (which supplies the model, the registry and the tensor queries)."""

    def prescan(self) -> None:
        """Find every operator the conversion would refuse, and report them all at once."""
        self._edges()
        find_wraps(self)  # (a Keras 3 Embedding's negative ids: wrap.py)
        problems = []
        if self.m.num_subgraphs > 1:
            self.report.warn(f"the model has {self.m.num_subgraphs} subgraphs; only the main one "
                             "is converted (operators that call others are refused)")
        for i in self.m.inputs:
            reason = self._io_reason(i)
            if reason:
                problems.append(Problem("input", self.t(i).name, reason, _type_hint(self.t(i)),
                                        code="unsupported-type"))
        for op in self.m.operators:
            if op.index in self.skip:
                continue
            r = self._check(op)
            if r:
                reason, hint, code = _refusal(r)
                problems.append(Problem(op.op, self.node(op), reason, hint, code=code))
        if problems:
            raise UnsupportedModelError(problems)

    def _io_reason(self, i):
        t = self.t(i)
        if i in self.input_alias:
            return None
        if self.dtype_of(i) is None:
            return self._type_reason(t)
        return None

    def _type_reason(self, t: Tensor):
        if t.type in (UINT8, INT8) and t.quant is None:
            return f"8-bit tensor {t.name!r} has no quantization parameters"
        if t.type in (UINT8, INT8) and not t.quant.per_tensor:
            return f"tensor {t.name!r} is quantized per channel; Arm NN tensors have one scale"
        if t.type == INT16 and t.quant is not None and self.g.target.has(DataType.QSymmS16):
            what = "per-channel scales" if not t.quant.per_tensor else "a zero point other than 0"
            return (f"16-bit quantized tensor {t.name!r} has {what}; the 16x8 mode's int16 tensors are "
                    "QSymmS16 (one scale, zero point 0)")
        if t.type == INT16 and t.quant is not None:
            return (f"16-bit quantized tensor {t.name!r} (the TFLite converter's 16x8 mode) needs QSymmS16, "
                    f"which the Arm NN {self.g.target.release} format lacks (--target 20.08 or later)")
        if t.type == FLOAT16:
            return f"float16 activations ({t.name!r}) would need Float16 and Float32 in one network"
        return f"tensor {t.name!r} has type {t.type_name}, which Arm NN's format cannot hold"

    def _check(self, op):
        if op.op == "CUSTOM":
            return Refusal(f"custom operator {op.custom_code!r} has no Arm NN equivalent", code="unsupported-op")
        entry = self.entry(op)
        if entry is None:
            versions = [e for e in self.registry.entries() if e.op == op.op]
            if versions:
                return Refusal(f"operator version {op.version} is not supported "
                               f"(known: {', '.join(e.version_range for e in versions)})", code="unsupported-op")
            return self.registry.refusal(op.op) or Refusal("no exact lowering onto Arm NN's 32 layer types",
                                                           code="unsupported-op")
        r = entry.target_problem(self.nb.g.target)
        if r:
            return r
        r = self._structure_problem(op, entry)
        if r:
            return Refusal(r, code="bad-model")
        tensors = self.m.tensors
        for i in op.inputs + op.outputs:
            if i < 0:
                continue
            t = tensors[i]
            if t.sparse:
                return Refusal(f"tensor {t.name!r} is sparse but holds no constant data (only constants are "
                               "densified)", code="unsupported-type")
            if t.is_variable and i not in [op.inputs[k] for k in entry.state_inputs if k < len(op.inputs)]:
                return f"tensor {t.name!r} is a variable (stateful models are not supported)"
            if not self.is_const(i) and self.dtype_of(i) is None:
                return Refusal(self._type_reason(t), _type_hint(t), code="unsupported-type")
        r = _option_problem(op)
        if r:
            return Refusal(r, code="bad-attribute")
        r = self._type_problem(op, entry)
        if r:
            return Refusal(r, code="unsupported-type")
        if entry.check is not None:
            try:
                return entry.check(op, self)
            except Unsupported as e:
                return Refusal(e.reason, e.hint, e.code)
            except (IndexError, ValueError, KeyError, TypeError) as e:
                return Refusal(f"inconsistent operator: {type(e).__name__}: {e}", code="bad-model")
        return None

    def _structure_problem(self, op, entry):
        """Why the operator's inputs and outputs make no sense (the model is invalid), or None."""
        need = entry.inputs
        if len(op.inputs) < need or min(op.inputs[:need], default=0) < 0:
            return f"needs {need} input tensors, has {sum(i >= 0 for i in op.inputs[:need])}"
        if not op.outputs:
            return "has no output tensor"
        if len(op.outputs) > 1 and not entry.multi_output:
            return f"has {len(op.outputs)} output tensors, not 1"
        for o in op.outputs:
            t = self.t(o)
            if t.data is not None:
                return f"writes to the constant tensor {t.name!r}"
            if self.producer[o] != op.index or op.outputs.count(o) > 1:
                return f"tensor {t.name!r} is written by more than one operator output"
            if o in self.m.inputs:
                return f"writes to the model input {t.name!r}"
        return None

    def _type_problem(self, op, entry):
        """Arm NN layers take one data type and give it back (comparisons give Boolean):
        runtime data inputs of different types, or an output of another type, cannot be
        built (only QUANTIZE and friends change types, and they have their own rules)."""
        if entry.types == "free":
            return None
        every = entry.types in ("all", "compare")
        ins = op.inputs if every else op.inputs[entry.data_input:entry.data_input + 1]
        types = {self.dtype_of(i) for i in ins if i >= 0 and not self.is_const(i)}
        if len(types) > 1:
            return "inputs mix data types " + ", ".join(sorted(t.name for t in types))
        if not types:
            return None
        want = DataType.Boolean if entry.types == "compare" else types.pop()
        for o in op.outputs:
            if o not in self.static and self.dtype_of(o) != want:
                return (f"output {self.t(o).name!r} is {self.dtype_of(o).name} for "
                        f"{'inputs' if every else 'an input'} of type {want.name}"
                        if entry.types != "compare" else
                        f"output {self.t(o).name!r} is {self.dtype_of(o).name}, not Boolean")
        return None


def _type_hint(t: Tensor) -> str:
    if t.type == INT16 and t.quant is not None:
        return "--dequantize converts the model to a float32 network"
    return ""


def _refusal(r) -> Refusal:
    """A check's answer (a reason, (reason, hint) or a Refusal) as a Refusal."""
    if isinstance(r, Refusal):
        return r
    return Refusal(r) if isinstance(r, str) else Refusal(*r)
