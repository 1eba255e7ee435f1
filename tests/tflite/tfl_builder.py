"""Test helper: build tiny .tflite files with the `tflite` package's generated
FlatBuffers builder functions, and run them on LiteRT (the reference).

    mb = ModelBuilder()
    x = mb.input("x", [1, 4, 4, 3])
    w = mb.const("w", np.ones((2, 3, 3, 3), np.float32))
    y = mb.op("CONV_2D", [x, w, -1], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1)
    mb.output(y)
    data = mb.build()          # output shapes are filled in by LiteRT

Output tensors of ops are created with an unknown shape; build() asks LiteRT
for the shapes it computes and writes them into the final file.
"""
from __future__ import annotations

import importlib

import flatbuffers
import numpy as np

TYPES = {np.dtype(np.float32): 0, np.dtype(np.float16): 1, np.dtype(np.int32): 2, np.dtype(np.uint8): 3,
         np.dtype(np.int64): 4, np.dtype(np.bool_): 6, np.dtype(np.int16): 7, np.dtype(np.int8): 9}
ENUMS = {"padding": {"SAME": 0, "VALID": 1},
         "fused_activation_function": {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "TANH": 4},
         "mode": {"REFLECT": 0, "SYMMETRIC": 1}}


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def _opcode(name: str) -> int:
    from tflite.utils import BUILTIN_OPCODE2NAME
    for code, n in BUILTIN_OPCODE2NAME.items():
        if n == name:
            return code
    raise KeyError(name)


class ModelBuilder:
    def __init__(self):
        self.tensors = []   # dicts: name, shape, dtype, data, quant
        self.ops = []       # (opcode name, version, inputs, outputs, options type, options)
        self.inputs, self.outputs = [], []

    # -- tensors ---------------------------------------------------------------------------
    def tensor(self, name, shape, dtype=np.float32, quant=None, data=None, signature=None,
               variable=False) -> int:
        self.tensors.append(dict(name=name, shape=list(shape), dtype=np.dtype(dtype), quant=quant, data=data,
                                 signature=signature, variable=variable))
        return len(self.tensors) - 1

    def input(self, name, shape, dtype=np.float32, quant=None, signature=None) -> int:
        """signature: shape_signature with -1 for dynamic dimensions."""
        t = self.tensor(name, shape, dtype, quant, signature=signature)
        self.inputs.append(t)
        return t

    def const(self, name, data, quant=None, dtype=None) -> int:
        data = np.asarray(data) if dtype is None else np.asarray(data, dtype)
        return self.tensor(name, data.shape, data.dtype, quant, data)

    def sparse_const(self, name, shape, values, traversal_order, block_map, dims, quant=None) -> int:
        """A sparse constant: `values` are the stored values only; dims, one per traversal
        level: ("dense", size) or ("csr", segments, indices, kind) with kind "i32", "u16"
        or "u8" (the SparseIndexVector type of both vectors)."""
        values = np.asarray(values)
        t = self.tensor(name, shape, values.dtype, quant, values)
        self.tensors[t]["sparsity"] = (list(traversal_order), list(block_map), list(dims))
        return t

    def output(self, t: int) -> None:
        self.outputs.append(t)

    def op(self, name, inputs, options_type=None, *, outputs=1, out_dtype=None, out_quant=None,
           version=1, out_names=None, out_shape=(), custom_code=None, **options):
        """Add an operator; returns its output tensor (or a list if outputs > 1).
        out_quant: (scale, zero_point) or a list of them, one per output."""
        dtype = out_dtype or (self.tensors[inputs[0]]["dtype"] if inputs and inputs[0] >= 0 else np.float32)
        outs = []
        for k in range(outputs):
            q = out_quant[k] if isinstance(out_quant, list) else out_quant
            nm = out_names[k] if out_names else f"{name.lower()}_{len(self.ops)}_{k}"
            outs.append(self.tensor(nm, out_shape, dtype, q))
        self.ops.append((name, version, list(inputs), outs, options_type, options, custom_code))
        return outs if outputs > 1 else outs[0]

    # -- serialization ---------------------------------------------------------------------
    def build(self, infer_shapes=True) -> bytes:
        data = self._serialize()
        if not infer_shapes:
            return data
        interp = _interpreter(data)
        interp.allocate_tensors()
        for d in interp.get_tensor_details():
            t = self.tensors[d["index"]] if d["index"] < len(self.tensors) else None
            if t is not None and t["data"] is None:
                t["shape"] = [int(v) for v in d["shape"]]
        return self._serialize()

    def _vector(self, b, start_fn, values, kind):
        start_fn(b, len(values))
        prepend = {"i32": b.PrependInt32, "i64": b.PrependInt64, "f32": b.PrependFloat32,
                   "u8": b.PrependUint8, "u16": b.PrependUint16, "uoff": b.PrependUOffsetTRelative}[kind]
        for v in reversed(list(values)):
            prepend(v)
        return b.EndVector()

    def _options(self, b, typ, options):
        mod = importlib.import_module(f"tflite.{typ}")
        vecs = {}
        for k, v in options.items():
            if isinstance(v, (list, tuple, np.ndarray)):
                vecs[k] = self._vector(b, getattr(mod, f"Start{_camel(k)}Vector"), [int(x) for x in v], "i32")
        mod.Start(b)
        for k, v in options.items():
            fn = getattr(mod, f"Add{_camel(k)}")
            if k in vecs:
                fn(b, vecs[k])
            else:
                fn(b, ENUMS.get(k, {}).get(v, v) if isinstance(v, str) else v)
        return mod.End(b)

    def _sparsity(self, b, sparsity):
        SP, DM = (importlib.import_module(f"tflite.{m}") for m in ("SparsityParameters", "DimensionMetadata"))
        kinds = {"i32": ("Int32Vector", 1, "i32"), "u16": ("Uint16Vector", 2, "u16"), "u8": ("Uint8Vector", 3, "u8")}
        order, bmap, dims = sparsity
        metas = []
        for d in dims:
            if d[0] == "dense":
                DM.Start(b)
                DM.AddFormat(b, 0)
                DM.AddDenseSize(b, int(d[1]))
                metas.append(DM.End(b))
                continue
            mod_name, union, kind = kinds[d[3]]
            mod = importlib.import_module(f"tflite.{mod_name}")
            vecs = []
            for arr in (d[1], d[2]):
                v = self._vector(b, mod.StartValuesVector, [int(x) for x in arr], kind)
                mod.Start(b)
                mod.AddValues(b, v)
                vecs.append(mod.End(b))
            DM.Start(b)
            DM.AddFormat(b, 1)
            DM.AddArraySegmentsType(b, union)
            DM.AddArraySegments(b, vecs[0])
            DM.AddArrayIndicesType(b, union)
            DM.AddArrayIndices(b, vecs[1])
            metas.append(DM.End(b))
        ov = self._vector(b, SP.StartTraversalOrderVector, order, "i32")
        bv = self._vector(b, SP.StartBlockMapVector, bmap, "i32") if bmap else None
        mv = self._vector(b, SP.StartDimMetadataVector, metas, "uoff")
        SP.Start(b)
        SP.AddTraversalOrder(b, ov)
        if bv is not None:
            SP.AddBlockMap(b, bv)
        SP.AddDimMetadata(b, mv)
        return SP.End(b)

    def _serialize(self) -> bytes:
        # import_module: `import tflite.Buffer` would give the class (tflite/__init__ star-imports)
        TB, TM, TO, TC, TQ, TS, TT = (importlib.import_module(f"tflite.{m}") for m in (
            "Buffer", "Model", "Operator", "OperatorCode", "QuantizationParameters", "SubGraph", "Tensor"))
        from tflite.BuiltinOptions import BuiltinOptions

        b = flatbuffers.Builder(1024)
        # buffers: 0 is the empty sentinel, then one per constant
        buffers, buf_index = [], {}
        for i, t in enumerate(self.tensors):
            if t["data"] is not None:
                raw = np.ascontiguousarray(t["data"]).tobytes()
                b.StartVector(1, len(raw), 16)
                b.head = b.head - len(raw)
                b.Bytes[b.head:b.head + len(raw)] = raw
                vec = b.EndVector()
                TB.Start(b)
                TB.AddData(b, vec)
                buf_index[i] = len(buffers) + 1
                buffers.append(TB.End(b))
        TB.Start(b)
        empty = TB.End(b)
        buffers = [empty] + buffers

        tensors = []
        for i, t in enumerate(self.tensors):
            name = b.CreateString(t["name"])
            shape = self._vector(b, TT.StartShapeVector, t["shape"], "i32")
            sig = self._vector(b, TT.StartShapeSignatureVector, t["signature"], "i32") if t["signature"] else None
            q = None
            if t["quant"] is not None:
                scale, zp = t["quant"][0], t["quant"][1]
                axis = t["quant"][2] if len(t["quant"]) > 2 else 0
                scale, zp = np.atleast_1d(scale), np.atleast_1d(zp)
                sv = self._vector(b, TQ.StartScaleVector, [float(s) for s in scale], "f32")
                zv = self._vector(b, TQ.StartZeroPointVector, [int(z) for z in zp], "i64")
                TQ.Start(b)
                TQ.AddScale(b, sv)
                TQ.AddZeroPoint(b, zv)
                TQ.AddQuantizedDimension(b, axis)
                q = TQ.End(b)
            sp = self._sparsity(b, t["sparsity"]) if t.get("sparsity") else None
            TT.Start(b)
            TT.AddShape(b, shape)
            TT.AddType(b, TYPES[t["dtype"]])
            TT.AddBuffer(b, buf_index.get(i, 0))
            TT.AddName(b, name)
            if sig is not None:
                TT.AddShapeSignature(b, sig)
            if t.get("variable"):
                TT.AddIsVariable(b, True)
            if q is not None:
                TT.AddQuantization(b, q)
            if sp is not None:
                TT.AddSparsity(b, sp)
            tensors.append(TT.End(b))

        codes, code_index = [], {}
        for name, version, *_, custom in self.ops:
            if (name, version, custom) not in code_index:
                code_index[(name, version, custom)] = len(codes)
                codes.append((name, version, custom))
        code_offs = []
        for name, version, custom in codes:
            c = _opcode(name)
            cc = b.CreateString(custom) if custom else None
            TC.Start(b)
            TC.AddDeprecatedBuiltinCode(b, min(c, 127))
            TC.AddBuiltinCode(b, c)
            TC.AddVersion(b, version)
            if cc is not None:
                TC.AddCustomCode(b, cc)
            code_offs.append(TC.End(b))

        op_offs = []
        for name, version, ins, outs, typ, options, custom in self.ops:
            opts = self._options(b, typ, options) if typ else None
            iv = self._vector(b, TO.StartInputsVector, ins, "i32")
            ov = self._vector(b, TO.StartOutputsVector, outs, "i32")
            # a custom operator's raw options (custom_options=bytes, e.g. a C struct)
            raw = b.CreateByteVector(bytes(options["custom_options"])) if custom and "custom_options" in options else None
            TO.Start(b)
            if raw is not None:
                TO.AddCustomOptions(b, raw)
            TO.AddOpcodeIndex(b, code_index[(name, version, custom)])
            TO.AddInputs(b, iv)
            TO.AddOutputs(b, ov)
            if typ:
                TO.AddBuiltinOptionsType(b, getattr(BuiltinOptions, typ))
                TO.AddBuiltinOptions(b, opts)
            op_offs.append(TO.End(b))

        tv = self._vector(b, TS.StartTensorsVector, tensors, "uoff")
        iv = self._vector(b, TS.StartInputsVector, self.inputs, "i32")
        ov = self._vector(b, TS.StartOutputsVector, self.outputs, "i32")
        opv = self._vector(b, TS.StartOperatorsVector, op_offs, "uoff")
        sname = b.CreateString("main")
        TS.Start(b)
        TS.AddTensors(b, tv)
        TS.AddInputs(b, iv)
        TS.AddOutputs(b, ov)
        TS.AddOperators(b, opv)
        TS.AddName(b, sname)
        sg = TS.End(b)

        cv = self._vector(b, TM.StartOperatorCodesVector, code_offs, "uoff")
        sv = self._vector(b, TM.StartSubgraphsVector, [sg], "uoff")
        bv = self._vector(b, TM.StartBuffersVector, buffers, "uoff")
        desc = b.CreateString("armnn-import test model")
        TM.Start(b)
        TM.AddVersion(b, 3)
        TM.AddOperatorCodes(b, cv)
        TM.AddSubgraphs(b, sv)
        TM.AddDescription(b, desc)
        TM.AddBuffers(b, bv)
        b.Finish(TM.End(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def _interpreter(data: bytes, ref: bool = True):
    """LiteRT with its reference kernels (or the builtin ones when the reference
    resolver lacks an operator, or ref=False)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    if ref:
        try:
            return Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        except ValueError as e:
            if "Didn't find op" not in str(e):
                raise
    return Interpreter(model_content=data,
                       experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)


def run_litert(data: bytes, inputs, ref: bool = True) -> list[np.ndarray]:
    """Outputs of the model on LiteRT (reference kernels by default), in output order."""
    interp = _interpreter(data, ref)
    for d, x in zip(interp.get_input_details(), inputs):
        if tuple(d["shape"]) != np.shape(x):
            interp.resize_tensor_input(d["index"], np.shape(x))
    interp.allocate_tensors()
    # Variable tensors (recurrent state) start from zeros, as the converted network's do; without
    # this they have held stale memory now and then (a flaky bidirectional LSTM reference).
    interp.reset_all_variables()
    for d, x in zip(interp.get_input_details(), inputs):
        interp.set_tensor(d["index"], x)
    interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]
