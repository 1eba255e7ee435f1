"""The catalogue does not lie: every registry entry's converter, run on the reference models
(test_models/) and the ONNX node suite at each target, emits only layer types its entry lists
in ``layers=`` (what docs/operators.md shows), and every entry is run by at least one model.

The converters are wrapped to record the layers each one adds to the graph; the passes that
run after conversion (folding, layout, fp16) are not attributed to an operator.
"""
from __future__ import annotations

import dataclasses
import os
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("19.02", "20.08", "23.08")
#: layers a converter may add whatever it lowers: the graph's own ends
ALWAYS = {"Input", "Output"}
#: entries no reference model or node-suite case runs yet (the node suite's cases of most of these
#: are refused before the converter runs: an opset past the entry, a non-constant input, a
#: sequence input); each wants a model in test_models/ (tests/tflite/tfl_builder.py for TFLite)
#: mediapipe's custom Convolution2DTransposeBias: run by tests/tflite/test_tflite_transpose_conv_bias.py
#: (builder models, on the runtimes, with this layers= check) and the mediapipe wheel's selfie models
#: (test_mediapipe_models.py); a reference model of it would need a custom-op path in every
#: manifest consumer (LiteRT runs it only through its XNNPACK delegate)
# (the QDQ ConvTranspose: no reference model has one yet; tests/test_transpose_conv_quant_layer.py runs it)
NOT_YET_RUN: set[str] = {"tflite Convolution2DTransposeBias 1-1", "onnx ConvTranspose (quantized) 1+"}


def _registries():
    from armnn_import_frontends.onnx.registry import REGISTRY as ONNX
    from armnn_import_frontends.tflite.ops import REGISTRY as TFLITE
    import armnn_import_frontends.onnx.ops  # noqa: F401  (fills the ONNX registry)
    return {"onnx": ONNX, "tflite": TFLITE}


def _key(fe, e, quantized=False) -> str:
    return f"{fe} {e.op}{' (quantized)' if quantized else ''} {e.version_range}"


def _wrap(fe, entry, seen, quantized=False):
    def recorded(ctx, node):
        g = ctx.g
        before = set(map(id, g.layers))
        try:
            return entry.fn(ctx, node)
        finally:
            seen[_key(fe, entry, quantized)].update(l.type.name for l in g.layers if id(l) not in before)
    recorded.__name__ = getattr(entry.fn, "__name__", "converter")
    return dataclasses.replace(entry, fn=recorded)


def _bypass_recorder(reg, seen):
    """The DENSIFY of a sparse constant is done when the file is read (sparse.bypass_densify: its
    users read the densified constant, with its type and quantization), before any converter
    runs: each DENSIFY it drops counts as a run of the op's entry, one that adds no layers."""
    from armnn_import_frontends.tflite import model

    bypass = model.bypass_densify

    def recorded(tensors, ops, outputs):
        kept, outs, n = bypass(tensors, ops, outputs)
        left = {o.outputs for o in kept}
        for op in ops:
            entry = reg.lookup(op.op, op.version) if op.op == "DENSIFY" and op.outputs not in left else None
            if entry is not None:
                seen[_key("tflite", entry)].update(())
        return kept, outs, n
    return model, bypass, recorded


def _models():
    for ext in ("onnx", "tflite"):
        yield from sorted((ROOT / "test_models").rglob(f"*.{ext}"))


def _node_cases():
    """Each case's model, and (as conformance.py does) the same with its inputs after the first
    made constants, which many converters need."""
    sys.path.insert(0, str(ROOT / "tests" / "onnx"))
    import conformance
    for c in conformance.node_cases():
        yield c.model
        if len(c.data_sets[0][0]) > 1:
            try:
                yield conformance.freeze_inputs(c.model, c.data_sets[0][0])
            except (NotImplementedError, ValueError):  # sequence inputs: no initializer holds them
                pass


def _builder_models():
    """Models the tests build (onnx.helper, tests/tflite/tfl_builder.py) for entries no reference
    model has yet (session 18; the TFLite generator needs TensorFlow): the tests named run them
    on the runtimes, here their layers= is checked."""
    for sub in ("tests", "tests/onnx", "tests/tflite"):
        sys.path.insert(0, str(ROOT / sub))
    import numpy as np
    import test_gather_nd as gnd
    import test_onnx_einsum as ein
    import test_onnx_topk as topk
    import test_reduce_log_sum_exp as lse
    import test_tflite_direct as direct
    import test_tflite_lookup_fill as lookup
    import test_tflite_select as sel
    import test_tflite_topk as tfl_topk
    yield from (ein._case(k)[0] for k in range(len(ein.CASES)))
    yield from (lse._model(*c) for c in lse.CASES)
    yield from (topk._model(*c) for c in topk.CASES)
    yield from (topk._model(*c) for c in topk.K_CASES)
    yield topk._model((2, 9), -1, 1, 11, 4, dtype=topk.T.INT32)
    yield from (tfl_topk._top_k(*c) for c in tfl_topk.CASES)
    yield tfl_topk._top_k((2, 9), 4, np.int32)
    idx = np.array([[1, 2], [0, 0]])
    yield from (gnd._tflite((5, 3, 4), idx, const, quant) for const in (True, False) for quant in (False, True))
    yield from (direct._model(op) for op in sorted(direct.OPS))
    yield from (direct.pow_model(s, c)[0] for s, c in (((), True), ((3, 1), False)))
    yield from (sel._model(op) for op in sorted(sel.OPTS))
    yield from (sel._model("EQUAL", 0.0), sel._model("GREATER", select="SELECT"), sel._logical_model(),
                sel._int_model(), sel._int8_model())
    yield from (lookup._lookup(), lookup._lookup(np.array([3, 3, 1], np.int32)), lookup._fill(), lookup._range())


def survey(targets=TARGETS):
    """entry key -> layer types its converter emitted; and the entries (key -> layers=)."""
    import armnn_import
    from armnn_import.errors import ArmnnImportError

    regs = _registries()
    seen: dict[str, set[str]] = defaultdict(set)
    listed = {_key(fe, e): set(e.layers) for fe, r in regs.items() for e in r.entries()}
    listed.update({_key(fe, e, True): set(e.layers) for fe, r in regs.items() for e in r.quantized_entries()})
    saved = {fe: (r._entries, r._quantized) for fe, r in regs.items()}
    model, bypass, recorded = _bypass_recorder(regs["tflite"], seen)
    try:
        model.bypass_densify = recorded
        for fe, r in regs.items():
            r._entries = {op: [_wrap(fe, e, seen) for e in es] for op, es in saved[fe][0].items()}
            r._quantized = {op: [_wrap(fe, e, seen, True) for e in es] for op, es in saved[fe][1].items()}
        sources = [str(p) for p in _models()] + list(_node_cases()) + list(_builder_models())
        for target in targets:
            for src in sources:
                try:
                    armnn_import.convert(src, target=target)
                except ArmnnImportError:
                    pass  # a refusal: whatever its converters added before it still counts
    finally:
        model.bypass_densify = bypass
        for fe, r in regs.items():
            r._entries, r._quantized = saved[fe]
    return seen, listed


@pytest.fixture(scope="module")
def surveyed():
    return survey()


def test_every_entry_emits_only_the_layers_it_lists(surveyed):
    seen, listed = surveyed
    wrong = {k: sorted(v - listed[k] - ALWAYS) for k, v in seen.items() if v - listed[k] - ALWAYS}
    assert not wrong, "\n".join(f"{k}: emits {v}, not in its layers=" for k, v in sorted(wrong.items()))


def test_every_entry_is_run_by_a_model(surveyed):
    seen, listed = surveyed
    missing = sorted(k for k in listed if k not in seen and k not in NOT_YET_RUN)
    assert not missing, f"{len(missing)} entries no model runs:\n" + "\n".join(missing)
    now_run = sorted(k for k in NOT_YET_RUN if k in seen)
    assert not now_run, f"these entries are run now; drop them from NOT_YET_RUN: {now_run}"
    assert NOT_YET_RUN <= set(listed), sorted(NOT_YET_RUN - set(listed))


if __name__ == "__main__":
    seen, listed = survey(sys.argv[1:] or TARGETS)
    for k in sorted(listed):
        extra = sorted(seen.get(k, set()) - listed[k] - ALWAYS)
        if k not in seen:
            print("NOT RUN", k)
        elif extra:
            print("EXTRA  ", k, extra)
