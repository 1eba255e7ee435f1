#!/usr/bin/env python3
"""Hash the output of every reference model in test_models/, for one target.

    python scripts/output_hashes.py [--target 20.08] > before.json
    ... change the code ...
    python scripts/output_hashes.py --check before.json   # exit 1 and list what changed

Every model is converted with default options through the API (to_bytes) and
through the CLI's path (save(), which streams large constants), and both hashes
must agree. A refusal is recorded by its message, so a model that starts or
stops converting shows up too.
"""
import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def models():
    for ext in ("onnx", "tflite"):
        yield from sorted((ROOT / "test_models").rglob(f"*.{ext}"))


def hash_one(path: Path, target: str | None = None) -> str:
    import armnn_import
    opts = {"target": target} if target else {}
    try:
        result = armnn_import.convert(str(path), **opts)
    except armnn_import.ArmnnImportError as e:
        return "refused: " + str(e).splitlines()[0]
    api = hashlib.sha256(result.to_bytes()).hexdigest()
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "out.armnn"
        armnn_import.convert(str(path), **opts).save(out)
        saved = hashlib.sha256(out.read_bytes()).hexdigest()
    return api if api == saved else f"MISMATCH api={api} save={saved}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", metavar="BEFORE.json", help="compare with an earlier run")
    ap.add_argument("--target", help="the release to write for (default: the default target)")
    args = ap.parse_args()
    now = {str(p.relative_to(ROOT)): hash_one(p, args.target) for p in models()}
    if not args.check:
        json.dump(now, sys.stdout, indent=1, sort_keys=True)
        print()
        return 0
    before = json.loads(Path(args.check).read_text())
    changed = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    for k in changed:
        print(f"{k}: {before.get(k)} -> {now.get(k)}")
    same = len(before.keys() & now.keys()) - len([k for k in changed if k in before and k in now])
    print(f"{same} identical, {len(changed)} changed, of {len(now)} models")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
