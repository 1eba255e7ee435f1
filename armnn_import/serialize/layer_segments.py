"""A layer's tables as segments (segments.py): the writer's fast way, the same bytes.

The head of a layer (everything after its name up to its descriptor: the input slots, each
output's dimensions, TensorInfo and slot, the two slot vectors, LayerBase, BindableLayerBase)
is one segment; a layer without constant tensors also puts its own table and AnyLayer in it.
A layer with tensors has them written after the head (writer._file_tensor), then its tail (its
table and AnyLayer) as a second segment. A segment's shape is its layer type, input count,
output ranks and descriptor vector lengths; anything else (per-axis scales, a descriptor of
another class, a vector that is not a short tuple) returns None: the caller writes the layer
table by table, which gives the same bytes or raises what it raises.
"""
from __future__ import annotations

import dataclasses
import operator
import struct
import typing

from ..ir.kinds import since
from .segments import compile_segment
from .tables import table_specs


def _getter(names: list):
    """A function giving the tuple of the attributes `names` (attrgetter gives a bare value for one)."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        name = names[0]
        return lambda obj: (getattr(obj, name),)
    return operator.attrgetter(*names)


def descriptor_plan(b, cls, schema_name) -> tuple | None:
    """(vector fields [(name, code)], their getter, the written scalars' getter, the written
    fields' schema names, per written field its name if it is a vector, else None) of a descriptor class; None if a vector
    is not one of uint32 or int32 (view_origins: a vector of tables)."""
    key = ("segments", cls)
    if key not in b.plans:
        hints = typing.get_type_hints(cls)
        fs = dataclasses.fields(cls)
        written = [f.name for f in fs if b.target.at_least(since(f))]
        vectors = [(f.name, f.metadata.get("elem", "uint32")) for f in fs if typing.get_origin(hints[f.name]) is tuple]
        codes = {"uint32": "I", "int32": "i"}
        if any(e not in codes or n == "view_origins" for n, e in vectors):
            b.plans[key] = None
        else:
            vnames = [n for n, _ in vectors]
            b.plans[key] = ([(n, codes[e]) for n, e in vectors], _getter(vnames),
                            _getter([n for n in written if n not in vnames]),
                            tuple(schema_name(n) for n in written), tuple(n if n in vnames else None for n in written))
    return b.plans[key]


def _values(layer, index: int, positions: dict, plan) -> tuple | None:
    """(the head's values in its program's order, its shape), or None (see the module doc)."""
    kind, bindable, with_desc, _, _, dplan, _ = plan
    v = []
    for l, s in layer.inputs:
        v += (positions[id(l)], s)
    outs = layer.outputs
    if len(outs) == 1:  # (most layers: no loop)
        info = outs[0]
        if info.scales is not None:
            return None
        shape = info.shape
        ranks = (len(shape),)
        v += shape
        v += (info.dtype, info.scale, info.offset, index)
    else:
        ranks = []
        for info in outs:
            if info.scales is not None:
                return None
            ranks.append(len(info.shape))
            v += info.shape
            v += (info.dtype, info.scale, info.offset)
        ranks = tuple(ranks)
        v.append(index)
    if bindable:
        v.append(layer.binding_id)
    lens = ()
    if with_desc:
        desc = layer.desc
        if type(desc) is not kind.descriptor:
            return None
        if dplan[0]:
            lens = []
            for x in dplan[1](desc):
                if type(x) is not tuple or len(x) > 64:
                    return None
                lens.append(len(x))
                v += x
            lens = tuple(lens)
        v += dplan[2](desc)
    return v, (layer.type, len(layer.inputs), ranks, lens, bool(layer.tensors or kind.params))


def _head_program(b, shape, plan) -> tuple:
    """(the program of a layer's head, its exports): see the module doc."""
    ltype, n_in, ranks, lens, tail = shape
    kind, bindable, with_desc, union, _, dplan, _ = plan
    prog = []
    spec = table_specs(b, "InputSlot", ("Index", "Connection"))
    ins = []
    for i in range(n_in):
        ins.append(len(prog))
        prog.append(("table", *spec, (("c", i), "conn")))
    info_spec = table_specs(b, "TensorInfo", ("Dimensions", "DataType", "QuantizationScale", "QuantizationOffset"))
    slot_spec = table_specs(b, "OutputSlot", ("Index", "TensorInfo"))
    outs = []
    for i, rank in enumerate(ranks):
        prog.append(("vec", "I", rank))
        prog.append(("table", *info_spec, (("i", len(prog) - 1), "v", "v", "v")))
        outs.append(len(prog))
        prog.append(("table", *slot_spec, (("c", i), ("i", len(prog) - 1))))
    prog += [("offs", tuple(ins)), ("offs", tuple(outs))]
    base_spec = table_specs(b, "LayerBase", ("Index", "LayerName", "LayerType", "InputSlots", "OutputSlots"))
    prog.append(("table", *base_spec, ("v", ("e", 0), ("c", int(ltype)), ("i", len(prog) - 2), ("i", len(prog) - 1))))
    if bindable:
        prog.append(("table", *table_specs(b, "BindableLayerBase", ("Base", "LayerBindingId")),
                     (("i", len(prog) - 1), "v")))
    exports = [len(prog) - 1]
    if with_desc:
        vecs = {}
        for (name, code), n in zip(dplan[0], lens):
            vecs[name] = len(prog)
            prog.append(("vec", code, n))
        # a vector field's slot holds its vector, the others take the next value
        sources = tuple("v" if name is None else ("i", vecs[name]) for name in dplan[4])
        prog.append(("table", *table_specs(b, kind.descriptor.__name__, dplan[3]), sources))
        exports.append(len(prog) - 1)
    if not tail:
        names = ("Base", "Descriptor")[:len(exports)]
        prog.append(("table", *table_specs(b, kind.table, names), tuple(("i", j) for j in exports)))
        prog.append(("table", *table_specs(b, "AnyLayer", ("LayerType", "Layer")), (("c", union), ("i", len(prog) - 1))))
        exports = [len(prog) - 1]
    return prog, tuple(exports)


def _tail_program(b, shape, plan) -> tuple:
    """A layer's table (its fields: the earlier offsets in order) and AnyLayer."""
    _, names = shape
    prog = [("table", *table_specs(b, plan[0].table, names), tuple(("e", k) for k in range(len(names))))]
    prog.append(("table", *table_specs(b, "AnyLayer", ("LayerType", "Layer")), (("c", plan[3]), ("i", 0))))
    return prog, (1,)


def _run(b, shape, make, plan, v, e):
    """The offsets the segment of `shape` exports once written, or None (not ready, or a value
    its format refuses: the caller writes the same tables one by one, raising what they raise)."""
    key = (shape, (len(b.Bytes) - b.head) & 7)
    fn = b.segments.get(key)
    if fn is None or fn.__class__ is int:
        if fn is not None and fn == len(b.vtables):  # not ready, and no vtable written since
            return None
        prog = b.programs.get(shape)
        if prog is None:
            prog = b.programs[shape] = make(b, shape, plan)
        fn = compile_segment(prog[0], key[1], b.vtables, prog[1])
        b.segments[key] = len(b.vtables) if fn is None else fn
        if fn is None:
            return None
    try:
        return fn(b, v, e)
    except (struct.error, OverflowError, TypeError):
        return None


def head(b, layer, index: int, positions: dict, name: int, plan) -> tuple | None:
    """A layer's head as a segment: (its AnyLayer) if that holds the whole layer, else
    (its LayerBase or BindableLayerBase, and its descriptor if written); or None."""
    got = _values(layer, index, positions, plan)
    if got is None:
        return None
    return _run(b, got[1], _head_program, plan, got[0], (name,))


def tail(b, layer, names: tuple, values: list, plan) -> int | None:
    """A layer's table with `names` set to the offsets `values`, and its AnyLayer; or None."""
    got = _run(b, (layer.type, names), _tail_program, plan, (), values)
    return None if got is None else got[0]


def _const_program(b, shape, plan) -> tuple:
    """A ConstTensor's tables after its data vector: the data table, the dimensions, the
    TensorInfo and the ConstTensor."""
    _, storage, rank = shape
    info_spec = table_specs(b, "TensorInfo", ("Dimensions", "DataType", "QuantizationScale", "QuantizationOffset"))
    prog = [("table", *table_specs(b, storage.name, ("Data",)), (("e", 0),)), ("vec", "I", rank),
            ("table", *info_spec, (("i", 1), "v", "v", "v")),
            ("table", *table_specs(b, "ConstTensor", ("Info", "DataType", "Data")),
             (("i", 2), ("c", int(storage)), ("i", 0)))]
    return prog, (3,)


def const_tensor(b, storage, info, data: int) -> int | None:
    """The tables of a ConstTensor whose data vector is at `data`, or None."""
    if info.scales is not None:
        return None
    shape = info.shape
    got = _run(b, ("const", storage, len(shape)), _const_program, None,
               (*shape, info.dtype, info.scale, info.offset), (data,))
    return None if got is None else got[0]
