"""--layout at the network's edges: the 4-D inputs and outputs in another layout
than the one the model's format uses (the network inside keeps the model's)."""
from __future__ import annotations

from ..ir.descriptors import PermuteDescriptor
from ..ir.graph import Graph
from ..ir.types import LayerType
from ..lowering.builder import inverse_perm
from ..report import Report


def set_io_layout(graph: Graph, perm_in, report: Report) -> int:
    """Give every 4-D input and output the layout `perm_in` maps to (numpy
    axes from the network's layout to the wanted one). A Permute after each
    such input restores the network's layout; one before each such output
    applies the new one. The Permute sinking pass then cancels what it can."""
    perm_out = perm_in
    back = inverse_perm(perm_in)
    n = 0
    for inp in graph.input_layers:
        info = inp.outputs[0]
        if info.rank != 4:
            continue
        users = graph.consumers(inp.out())
        inp.outputs = [info.with_shape([info.shape[a] for a in perm_in])]
        restore = graph.add(LayerType.Permute, f"{inp.name}_layout", [inp.out()],
                            PermuteDescriptor(inverse_perm(back)))
        for l, i in users:
            graph.set_input(l, i, restore.out())
        n += 1
    for out in graph.output_layers:
        src = out.inputs[0]
        if src.info.rank != 4:
            continue
        p = graph.add(LayerType.Permute, f"{out.name}_layout", [src], PermuteDescriptor(inverse_perm(perm_out)))
        graph.set_inputs(out, [p.out()])
        n += 1
    graph.toposort()
    return n
