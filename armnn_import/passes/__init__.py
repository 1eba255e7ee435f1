"""The IR pass pipeline: one ordered list of passes, with verify() around them.

Every pass takes (graph, report) and returns how many layers it changed.
verify() checks the frontend's graph before the first pass and the result after
the last; with check_each (tests, --debug, ARMNN_IMPORT_CHECK_PASSES=1) it runs
after every pass too, so a pass's bug is reported by the pass that made it.
"""
from __future__ import annotations

import os

from ..ir.graph import Graph
from ..report import Report
from .bn_split import split_batchnorms
from .cleanup import (drop_unused_inputs, fold_batchnorm_into_conv, fold_constants, merge_batchnorms,
                      merge_duplicates, merge_permutes, merge_reshapes, remove_dead_layers, remove_identities)
from .conv_bias import fold_affine_into_conv
from .conv_fc import convs_as_fully_connected
from .direct import direct_layers
from .fc_bias import shifts_into_fc
from .fc_flatten import reshapes_into_fc
from .int16 import int16_layers
from .layout import sink_permutes
from .lstm_major import batch_major_lstm
from .pad_fold import fold_pads
from .pad_guard import guard_pad_convs
from .reshape_moves import move_reshapes
from .permute_reshape import permutes_as_reshapes
from .shifts import shifts_to_additions
from .splitter_views import drop_unread_views

PIPELINE = (
    ("fold_constants", fold_constants),
    ("remove_identities", remove_identities),
    ("merge_permutes", merge_permutes),
    ("merge_reshapes", merge_reshapes),
    # after merge_reshapes (one Reshape between the FullyConnected and its shift), before the
    # second one, which joins the Reshapes around the dropped shift; Float32 only
    ("shifts_into_fc", shifts_into_fc),
    ("merge_duplicates", merge_duplicates),
    ("sink_permutes", sink_permutes),
    ("permutes_as_reshapes", permutes_as_reshapes),  # richer targets only
    ("merge_reshapes", merge_reshapes),
    ("remove_identities", remove_identities),
    # after the layout passes (a 19.02 NHWC Pad reaches its NCHW convolution through one Permute)
    ("fold_pads", fold_pads),
    ("merge_batchnorms", merge_batchnorms),
    ("fold_batchnorm", fold_batchnorm_into_conv),
    ("fold_affine_into_conv", fold_affine_into_conv),  # richer targets only
    # after the bias folds, before shifts_to_additions (a 19.02 bias is still its BatchNormalization)
    ("convs_as_fully_connected", convs_as_fully_connected),
    ("shifts_to_additions", shifts_to_additions),
    ("split_batchnorms", split_batchnorms),  # richer targets only: scaled BatchNormalization -> Mul + Add
    ("reshapes_into_fc", reshapes_into_fc),  # FullyConnected flattens its 4-D input itself
    ("remove_dead_layers", remove_dead_layers),
    ("drop_unread_views", drop_unread_views),  # richer targets only: Splitter outputs all connected
    ("move_reshapes", move_reshapes),  # richer targets only: after the views are final
    ("int16_layers", int16_layers),  # QSymmS16 targets: after the views and Reshapes are final
    ("batch_major_lstm", batch_major_lstm),  # the 23.08 format only: no Permutes around an LSTM
    # last of the passes that drop identity Reshapes: formats before 23.08 only (Arm NN 20.08 misfolds a Pad)
    ("guard_pad_convs", guard_pad_convs),
    ("direct_layers", direct_layers),  # richer targets only: Merger -> Concat, Permute -> Transpose
)


def pipeline(conv_bias: str = "add", float16: bool = False) -> tuple:
    """The passes for the given ConvertOptions.conv_bias ("batchnorm" keeps the shifts). A network
    that becomes Float16 keeps its BatchNormalizations (as Multiplication + Addition it would
    round twice to Float16 where the BatchNormalization rounds once; a shift folded into a
    FullyConnected's bias would round once where the network rounds twice)."""
    drop = ({"shifts_to_additions"} if conv_bias != "add" else set()) | \
        ({"split_batchnorms", "shifts_into_fc"} if float16 else set())
    return tuple(p for p in PIPELINE if p[0] not in drop)


def check_each_default() -> bool:
    """verify() after every pass: ARMNN_IMPORT_CHECK_PASSES=1 (set by the test suite)."""
    return os.environ.get("ARMNN_IMPORT_CHECK_PASSES", "") not in ("", "0")


def run_pipeline(graph: Graph, report: Report | None = None, passes=PIPELINE,
                 check_each: bool | None = None) -> Graph:
    from ..ir.verify import verify

    report = report or Report()
    if check_each is None:
        check_each = check_each_default()
    graph.toposort()
    # before the first verify(), which refuses Input layers that feed nothing
    with report.phase("pass:drop_unused_inputs"):
        changed = drop_unused_inputs(graph, report)
    if changed:
        report.passes["drop_unused_inputs"] = changed
    verify(graph)
    for name, fn in passes:
        with report.phase(f"pass:{name}"):
            changed = fn(graph, report)
            graph.toposort()
            if check_each:
                verify(graph)
        if changed:
            report.passes[name] = report.passes.get(name, 0) + changed
    if not check_each:
        verify(graph)
    return graph
