"""Write TensorFlow Lite's schema.fbs from the `tflite` PyPI package's generated Python modules.

    python3 tests/armnn_runtime/tflite_schema.py [--check FLATC] TFLITE_PKG_DIR OUT.fbs

Arm NN 23.08's TfLite parser is compiled against `schema_generated.h`, which flatc makes from
TensorFlow's `schema.fbs` (Arm NN's own scripts take it from TensorFlow 2.12's source). No package
registry reachable here ships that file, but the `tflite` package (a dependency of armnn-import)
is flatc's Python output for the same schema of a later TensorFlow (2.18 for tflite 2.18.0).
Generated code keeps everything the wire format depends on: every table field's vtable slot,
scalar type and default, every vector's element type, every union's members, every enum's
values, the file identifier. This script writes a schema.fbs with exactly those, so the C++ that
flatc generates from it reads a .tflite file as TensorFlow's own header does. Schemas only grow
(new fields and enum values go at the end), so a later schema reads every file a 2.12 one reads.

What Python code does not keep is which enum a scalar field is declared with (the wire holds
the integer either way): ENUM_FIELDS below gives those, from the field names TensorFlow uses.

--check FLATC: run `FLATC --python` on the result and check that it describes the same tables,
slots, types and defaults as the input (the round trip), else exit 1.
Standard library only: build.sh runs this with the system python3.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

# Python flag name -> schema scalar type
SCALARS = {"Bool": "bool", "Int8": "byte", "Uint8": "ubyte", "Int16": "short", "Uint16": "ushort",
           "Int32": "int", "Uint32": "uint", "Int64": "long", "Uint64": "ulong",
           "Float32": "float", "Float64": "double"}
# (table or "*", field) -> enum. The wire is the same with or without these; they give the C++
# fields the enum types that TensorFlow's schema declares and that Arm NN's parser compares with.
ENUM_FIELDS = {
    ("*", "fused_activation_function"): "ActivationFunctionType",
    ("*", "padding"): "Padding",
    ("Tensor", "type"): "TensorType",
    ("*", "in_data_type"): "TensorType", ("*", "out_data_type"): "TensorType",
    ("*", "output_type"): "TensorType", ("*", "idx_out_type"): "TensorType",
    ("*", "out_type"): "TensorType",
    ("*", "key_dtype"): "TensorType", ("*", "value_dtype"): "TensorType",
    ("VariantSubType", "type"): "TensorType",
    ("OperatorCode", "builtin_code"): "BuiltinOperator",
    ("Operator", "custom_options_format"): "CustomOptionsFormat",
    ("DimensionMetadata", "format"): "DimensionType",
    ("LSHProjectionOptions", "type"): "LSHProjectionType",
    ("FullyConnectedOptions", "weights_format"): "FullyConnectedOptionsWeightsFormat",
    ("LSTMOptions", "kernel_type"): "LSTMKernelType",
    ("EmbeddingLookupSparseOptions", "combiner"): "CombinerType",
    ("MirrorPadOptions", "mode"): "MirrorPadMode",
    ("ReduceWindowOptions", "reduce_function"): "ReduceWindowFunction",
    ("StablehloRngBitGeneratorOptions", "algorithm"): "RngAlgorithm",
    ("StablehloCompareOptions", "comparison_direction"): "StablehloComparisonDirection",
    ("StablehloCompareOptions", "compare_type"): "StablehloComparisonType",
    ("*", "quantized_bias_type"): "TensorType",
    ("StableHLOCompositeOptions", "composite_attributes_format"): "CustomOptionsFormat",
    ("StablehloDotGeneralOptions", "precision_config"): "StablehloPrecisionConfig",  # vectors
    ("StablehloConvolutionOptions", "precision_config"): "StablehloPrecisionConfig",
}
# Union fields whose union is not named after the field.
UNION_FIELDS = {("QuantizationParameters", "details"): "QuantizationDetails",
                ("DimensionMetadata", "array_segments"): "SparseIndexVector",
                ("DimensionMetadata", "array_indices"): "SparseIndexVector"}
ROOT = "Model"


def snake(camel: str) -> str:
    """flatc's CamelCase accessor name back to the schema's snake_case field name."""
    s = re.sub(r"(?<=[A-Za-z0-9])([A-Z])", r"_\1", camel)
    s = re.sub(r"(?<=[A-Za-z])([0-9]+)", r"_\1", s)
    return s.lower()


def _methods(text: str, cls: str) -> dict[str, str]:
    """{method name: body} of the reader class (the `# Cls` marked defs)."""
    out = {}
    for m in re.finditer(rf"    # {cls}\n    def (\w+)\(self(, j)?\):\n(.*?)(?=\n    # {cls}\n|\n\S|\Z)", text, re.S):
        out[m.group(1)] = (m.group(2) or "") + m.group(3)
    return out


def parse_module(text: str) -> tuple[str, dict] | None:
    """('table', info) / ('enum', info) for one generated module; None for other files."""
    m = re.search(r"^class (\w+)\(object\):", text, re.M)
    if not m:
        return None
    name = m.group(1)
    if "_tab" not in text:
        values = [(k, int(v)) for k, v in re.findall(r"^    (\w+) = (-?\d+)$", text, re.M)]
        return "enum", {"name": name, "values": values}
    if re.search(r"builder\.Prep\(", text):
        raise SystemExit(f"tflite_schema: {name} is a struct; structs are not handled")
    n_slots = int(re.search(rf"def (?:{name})?Start\(builder\):\s+(?:return )?builder\.StartObject\((\d+)\)", text).group(1))
    methods = _methods(text, name)
    fields = {}
    for fn, kind, slot, default in re.findall(
            rf"def {name}Add(\w+)\(builder, \w+\):\s+(?:return )?builder\.Prepend(\w+)Slot\((\d+), [^\n]*?, ([^,\n]+)\)\n", text):
        body = methods.get(fn, "")
        f = {"slot": int(slot), "camel": fn, "default": default.strip()}
        if kind != "UOffsetTRelative":
            f.update(kind="scalar", type=SCALARS[kind])
        elif "self._tab.Union(" in body:
            f.update(kind="union")
        elif "self._tab.Vector(o)" in body:
            elem = re.search(r"VectorLen|Get\(flatbuffers\.number_types\.(\w+)Flags, a", body)
            sub = re.search(r"from [\w.]+ import (\w+)", body)
            if re.search(r"Get\(flatbuffers\.number_types\.(\w+)Flags, a", body):
                f.update(kind="vector", type=SCALARS[re.search(r"Get\(flatbuffers\.number_types\.(\w+)Flags, a", body).group(1)])
            elif "self._tab.String(a" in body:
                f.update(kind="vector", type="string")
            elif sub:
                f.update(kind="vector", type=sub.group(1))
            else:
                raise SystemExit(f"tflite_schema: {name}.{fn}: unknown vector element ({elem})")
        elif "self._tab.String(o" in body:
            f.update(kind="string", type="string")
        else:
            sub = re.search(r"from [\w.]+ import (\w+)", body)
            if not sub:
                raise SystemExit(f"tflite_schema: {name}.{fn}: unknown field kind")
            f.update(kind="table", type=sub.group(1))
        fields[int(slot)] = f
    ident = re.search(r'BufferHasIdentifier\(buf, offset, b"([^"]*)"', text)
    return "table", {"name": name, "slots": n_slots, "fields": fields,
                     "ident": ident.group(1).encode().decode("unicode_escape") if ident else None}


def load(pkg: Path) -> tuple[dict, dict]:
    tables, enums = {}, {}
    for path in sorted(pkg.glob("*.py")):
        parsed = parse_module(path.read_text())
        if parsed:
            (tables if parsed[0] == "table" else enums)[parsed[1]["name"]] = parsed[1]
    if ROOT not in tables:
        raise SystemExit(f"tflite_schema: no {ROOT} table in {pkg}")
    return tables, enums


def _enum_of(table: str, field: str, type_: str, enums: dict) -> str | None:
    """The enum a field is declared with; "*" entries only for byte fields (StableHLO's padding is
    a vector of longs)."""
    enum = ENUM_FIELDS.get((table, field)) or (ENUM_FIELDS.get(("*", field)) if type_ == "byte" else None)
    return enum if enum in enums else None


def _fields(t: dict, tables: dict, enums: dict, unions: set) -> list[str]:
    """Schema field declarations of table t in slot order, filling gaps with deprecated fields."""
    lines, slot = [], 0
    fields = t["fields"]
    while slot < t["slots"]:
        f = fields.get(slot)
        if f is None:
            lines.append(f"  deprecated_slot_{slot}:int (deprecated);")
            slot += 1
            continue
        name = snake(f["camel"])
        if f["kind"] == "scalar" and name.endswith("_type") and fields.get(slot + 1, {}).get("kind") == "union":
            slot += 1      # the union's type slot: written by the union field below
            continue
        if f["kind"] == "union":
            union = UNION_FIELDS.get((t["name"], name), f["camel"])
            if union not in unions:
                raise SystemExit(f"tflite_schema: {t['name']}.{name}: no union {union}")
            lines.append(f"  {name}:{union};")
        elif f["kind"] == "vector":
            lines.append(f"  {name}:[{_enum_of(t['name'], name, f['type'], enums) or f['type']}];")
        elif f["kind"] in ("string", "table"):
            lines.append(f"  {name}:{f['type']};")
        else:
            enum = _enum_of(t["name"], name, f["type"], enums)
            default = f["default"]
            if f["type"] == "bool":
                default = "true" if default not in ("0", "False") else "false"
            if enum:
                names = [k for k, v in enums[enum]["values"] if str(v) == default]
                lines.append(f"  {name}:{enum}" + (f" = {names[0]}" if names and default != "0" else "") + ";")
            else:
                lines.append(f"  {name}:{f['type']}" + (f" = {default}" if default not in ("0", "0.0", "false") else "") + ";")
        slot += 1
    return lines


def enum_types(tables: dict, enums: dict) -> dict[str, str]:
    """Each enum's underlying type: that of the fields declared with it (they must agree)."""
    types: dict[str, set] = {}
    for t in tables.values():
        for f in t["fields"].values():
            if f["kind"] in ("scalar", "vector"):
                enum = _enum_of(t["name"], snake(f["camel"]), f["type"], enums)
                if enum:
                    types.setdefault(enum, set()).add(f["type"])
    out = {}
    for name, e in enums.items():
        got = types.get(name, set())
        if len(got) > 1:
            raise SystemExit(f"tflite_schema: enum {name} is used as {sorted(got)}")
        hi = max(v for _, v in e["values"])
        out[name] = got.pop() if got else ("byte" if hi < 128 else "int")
    return out


def write_schema(tables: dict, enums: dict, source: str) -> str:
    unions = {n for n, e in enums.items()
              if e["values"] and e["values"][0] == ("NONE", 0) and all(k in tables for k, _ in e["values"][1:])}
    etypes = enum_types(tables, enums)
    out = [f"// TensorFlow Lite schema, written by tests/armnn_runtime/tflite_schema.py from {source}.",
           "// Same wire format as TensorFlow's schema.fbs (Apache License 2.0, The TensorFlow Authors).",
           "namespace tflite;", "", f'file_identifier "{tables[ROOT]["ident"]}";', 'file_extension "tflite";', ""]
    for name in sorted(enums):
        e = enums[name]
        if name in unions:
            out.append(f"union {name} {{")
            out += [f"  {k} = {v}," for k, v in e["values"][1:]]
        else:
            out.append(f"enum {name} : {etypes[name]} {{")
            out += [f"  {k} = {v}," for k, v in e["values"]]
        out += ["}", ""]
    for name in sorted(tables):
        out.append(f"table {name} {{")
        out += _fields(tables[name], tables, enums, unions)
        out += ["}", ""]
    out.append(f"root_type {ROOT};")
    return "\n".join(out) + "\n"


def wire(tables: dict) -> dict:
    """What the wire depends on: per table, the slot count and per slot (kind, type, default)."""
    def norm(f):
        d = f["default"].replace("True", "1").replace("False", "0")
        try:
            d = float(d)
        except ValueError:
            pass
        return f["kind"], f.get("type"), d
    return {n: (t["slots"], {s: norm(f) for s, f in t["fields"].items()}) for n, t in tables.items()}


def main(argv: list[str]) -> int:
    flatc = None
    if argv[:1] == ["--check"]:
        flatc, argv = argv[1], argv[2:]
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    pkg, out = Path(argv[0]), Path(argv[1])
    version = re.search(r"tflite-([\w.]+)\.dist-info", " ".join(p.name for p in pkg.parent.glob("tflite-*.dist-info")))
    source = f"the tflite {version.group(1)} package" if version else f"the tflite package in {pkg}"
    tables, enums = load(pkg)
    text = write_schema(tables, enums, source)
    if flatc:
        with tempfile.TemporaryDirectory() as tmp:
            fbs = Path(tmp) / "schema.fbs"
            fbs.write_text(text)
            p = subprocess.run([flatc, "--python", "-o", tmp, str(fbs)], capture_output=True, text=True)
            if p.returncode != 0:
                print(f"tflite_schema: flatc rejects the schema: {p.stderr.strip()[-500:]}", file=sys.stderr)
                return 1
            back, back_enums = load(Path(tmp) / "tflite")
            a, b = wire(tables), wire(back)
            diff = sorted(n for n in set(a) | set(b) if a.get(n) != b.get(n))
            ediff = sorted(n for n in set(enums) | set(back_enums)
                           if enums.get(n, {}).get("values") != back_enums.get(n, {}).get("values"))
            if diff or ediff:
                print(f"tflite_schema: round trip differs in tables {diff[:10]} enums {ediff[:10]}", file=sys.stderr)
                for n in diff[:3]:
                    print(f"  {n}: {a.get(n)}\n  vs {b.get(n)}", file=sys.stderr)
                return 1
    tmp_out = out.with_suffix(".tmp")
    tmp_out.write_text(text)
    tmp_out.replace(out)
    print(f"{out}: {len(tables)} tables, {len(enums)} enums from {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
